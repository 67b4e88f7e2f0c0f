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

  @long
  Scenario: An idle cluster
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic stays below 20 KiB/s
    And traffic between the followers' zones stays below 2 KiB/s

  @gep20_findings @long
  Scenario: Between two followers, one direction at a time
    GEP-20: "follower to follower max egress: ~2 Kib/s" (0.25 KiB/s) in every case it tested.
    Here each direction carries 0.39 to 0.55 KiB/s, idle or under load, of which the peer
    metrics count 0.04: not raft messages but the transport's probes and keep-alives. The
    bound is three times GEP-20's figure (the scenario above bounds both directions together
    by 2 KiB/s).

    Given a load of 100 PUT/s with 1 KiB values against the leader from a client in its zone
    When cross-zone traffic is measured for 10 s
    Then traffic from each follower's zone to the other's stays below 0.75 KiB/s

  @long
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

  @gep20_findings
  Scenario: A range GET of 18,000 keys from a follower adds nothing between the zones
    GEP-20 read 17,999 keys (607 MiB) from a follower in one GET: "etcd intra cluster network
    traffic remains same". A follower serves a range from its own store; a linearizable read
    asks the leader only for its commit index. Scaled here: the same count of keys, values of
    1 KiB (18 MiB); the bound is the idle one.

    Given 18000 keys of 1 KiB
    When cross-zone traffic is measured for 10 s around a range GET of them from a follower by a client in its zone
    Then cross-zone traffic stays below 20 KiB/s

  @gep20_findings @long
  Scenario: A DELETE of 18,000 keys adds nothing between the zones
    GEP-20 deleted 99,999 keys through the leader and through a follower in one request: "no
    change in network traffic pattern". The raft entry holds the range, not the values.

    Given 18000 keys of 1 KiB
    When cross-zone traffic is measured for 10 s around a DELETE of them through a follower by a client in its zone
    Then cross-zone traffic stays below 20 KiB/s

  @gep20_findings @long
  Scenario: Watchers on a follower add nothing between the zones
    GEP-20: "watch requests are not forwarded to the leader". Five watch streams of the load's
    keys through a follower, from a client in its zone: the row stays the leader's 412 KiB/s;
    forwarded, each stream would add the load's 100 KiB/s.

    Given a load of 100 PUT/s with 1 KiB values against the leader from a client in its zone, watched 5 times through a follower from a client in its zone
    When cross-zone traffic is measured for 10 s
    Then cross-zone traffic is about 412 KiB/s, within 40 %

  @gep20_findings @long
  Scenario: Writing through a follower costs more than writing through the leader
    GEP-20: 412 KiB/s through the leader, 517 KiB/s through a follower, which forwards every put
    to the leader first: 25 % more. Both rows of one scenario, one after the other. Over plain
    HTTP the leader's row is smaller (about 300 KiB/s) and the forwarded puts the same, so the
    difference is larger here: about 40 %.

    Given a load of 100 PUT/s with 1 KiB values against the leader from a client in its zone
    When cross-zone traffic is measured for 10 s as "through the leader"
    And the load stops
    And a load of 100 PUT/s with 1 KiB values against a follower from a client in its zone starts
    And cross-zone traffic is measured for 10 s as "through a follower"
    Then cross-zone traffic "through a follower" exceeds "through the leader" by 15 to 55 %
