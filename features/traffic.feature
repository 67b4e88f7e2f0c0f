@traffic
Feature: Cross-zone traffic of a three-member etcd over three zones (GEP-20's appendix)
  GEP-20's appendix measured the traffic between etcd members in three zones: idle about
  84 Kib/s (10.5 KiB/s) in all; 100 PUT/s of 1 KiB to the leader about 412 KiB/s; the same
  to a follower about 517 KiB/s (the follower forwards each put to the leader); between two
  followers about 2 Kib/s. Here nftables counters at the router count every forwarded packet
  between the zones' subnets (the bytes a provider bills), and each member's peer metrics give
  the estimate a real cluster has: raft message bytes only, without TCP/IP headers and without
  client traffic, so they stay below the wire bytes. GEP-20's peers spoke TLS, these speak plain
  HTTP: the tolerances below allow for it.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones

  Scenario: An idle cluster
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic stays below 20 KiB/s
    And traffic between the followers' zones stays below 2 KiB/s

  Scenario: 100 PUT/s of 1 KiB to the leader
    Given a load of 100 PUT/s with 1 KiB values against the leader from a client in its zone
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic is about 412 KiB/s, within 40 %
    And traffic between the followers' zones stays below 2 KiB/s
    And the peer metrics account for 70 to 100 % of the wire bytes

  Scenario: 100 PUT/s of 1 KiB to a follower
    Given a load of 100 PUT/s with 1 KiB values against a follower from a client in its zone
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic is about 517 KiB/s, within 40 %
    And the peer metrics account for 70 to 100 % of the wire bytes

  Scenario: A client in one zone writing through a follower in another
    The client's own puts cross a zone boundary too; the peer metrics do not see them.

    Given a load of 100 PUT/s with 1 KiB values against a follower from a client in another zone
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic stays below 700 KiB/s
    And the peer metrics account for 50 to 85 % of the wire bytes
