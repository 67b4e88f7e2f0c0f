@traffic
Feature: False statements about cross-zone traffic, judged on real runs
  The last step of each scenario is false about the run before it; the "Fails with:" line is
  what its failure must say.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones

  Scenario: Cross-zone traffic stays below 50 KiB/s under 100 PUT/s to the leader
    Fails with: cross-zone traffic below 50 KiB/s
    Given a load of 100 PUT/s with 1 KiB values against the leader from a client in its zone
    When cross-zone traffic is measured for 3 s
    Then cross-zone traffic stays below 50 KiB/s

  @short
  Scenario: 100 PUT/s to the leader cost about 50 KiB/s
    Fails with: within 40 % of 50 KiB/s
    Given a load of 100 PUT/s with 1 KiB values against the leader from a client in its zone
    When cross-zone traffic is measured for 3 s
    Then cross-zone traffic is about 50 KiB/s, within 40 %

  Scenario: Two zones whose members all take writes exchange under 5 KiB/s
    Fails with: traffic between zone-a and zone-b below 5 KiB/s
    Given a mixed load of 300 ops/s on 10 shared keys from a client in every zone with a member, each through that member and watching it
    When cross-zone traffic is measured for 3 s
    Then traffic between zone "zone-a" and zone "zone-b" stays below 5 KiB/s

  Scenario: The followers' zones stay quiet while one's client writes through the other
    Fails with: traffic between the followers' zones
    Given a load of 100 PUT/s with 1 KiB values against a follower from a client in the other follower's zone
    When cross-zone traffic is measured for 3 s
    Then traffic between the followers' zones stays below 2 KiB/s

  Scenario: The peer metrics see a client's own puts across zones
    Fails with: of the wire bytes (between 95 and 100 %)
    Given a load of 100 PUT/s with 1 KiB values against a follower from a client in another zone
    When cross-zone traffic is measured for 3 s
    Then the peer metrics account for 95 to 100 % of the wire bytes
