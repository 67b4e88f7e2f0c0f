@traffic
Feature: Cross-zone traffic with TLS peers, as GEP-20 measured it
  GEP-20's appendix measured its figures with TLS between the members and their clients, as
  etcd-druid runs etcd. These scenarios are traffic.feature's over a region of their own whose
  members speak TLS to clients and peers, with certificate checks both ways ([etcd] tls). TLS
  adds its record headers and tags to every peer message and the handshakes of new
  connections, so the wire carries more here than over plain HTTP, and the same rows come
  closer to GEP-20's figures: 100 PUT/s of 1 KiB to the leader ~412 KiB/s, to a follower
  ~517 KiB/s. The peer metrics count raft message bytes before TLS, so their share of the
  wire is lower than over plain HTTP. Idle, TLS doubles the wire here (16-19 KiB/s against
  9): between the followers' zones 3-3.8 KiB/s flow (GEP-20: ~2 Kib/s, 0.25 KiB/s), of which
  the peer metrics count 0.06, so it is not raft messages but the transport's own exchanges
  between the peers; the bounds for idle traffic below say so.

  Background:
    Given a fresh region with 3 etcd members spread over 3 zones, clients and peers speaking TLS

  @long
  Scenario: An idle cluster with TLS peers
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic stays below 25 KiB/s
    And traffic between the followers' zones stays below 5 KiB/s

  @long
  Scenario: 100 PUT/s of 1 KiB to the leader, with TLS peers
    Given a load of 100 PUT/s with 1 KiB values against the leader from a client in its zone
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic is about 412 KiB/s, within 40 %
    And traffic between the followers' zones stays below 5 KiB/s
    And the peer metrics account for 60 to 100 % of the wire bytes

  Scenario: 100 PUT/s of 1 KiB to a follower, with TLS peers
    Given a load of 100 PUT/s with 1 KiB values against a follower from a client in its zone
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic is about 517 KiB/s, within 40 %
    And the peer metrics account for 60 to 100 % of the wire bytes
