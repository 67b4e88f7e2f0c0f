@outage @zone_outage
Feature: A zone outage in a three-zone region
  The reference HA control plane spreads a 3-member etcd one member per zone
  (GEP-20, case #2). A zone outage denies all traffic into and out of the zone's
  subnet, like swapping its network ACLs for an empty one. Losing one zone must
  keep quorum; the thresholds below are the promises the platform makes.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones

  Scenario: Losing the leader's zone keeps quorum
    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 4 s
    Then a new leader is elected in a surviving zone within 3 s
    And writes resume within 3 s of the outage

  Scenario: Losing a follower's zone does not disturb the leader
    Given a zone without the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 3 s
    Then the etcd leader does not change
    And the longest write gap during the outage is under 0.5 s

  Scenario: A zone that returns catches up
    Given a zone without the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 3 s
    And the target zone comes back
    Then its member catches up within 10 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: Under load, losing the leader's zone keeps every read linearizable and every watch in order
    Given the zone of the etcd leader is the target zone
    And a mixed load of 300 ops/s with a watcher from a client in another zone
    When the target zone goes down for 4 s
    And the target zone comes back
    Then the history is linearizable
    And every watcher saw every event in order
    And no acknowledged write of the load is lost
    And all members end with equal HashKV

  # make nightly; make test judges the history of a load through the leader's zone outage above
  @long
  Scenario: Clients in every zone share keys; losing the leader's zone loses no write and no watch event
    Given the zone of the etcd leader is the target zone
    And a mixed load of 300 ops/s on 20 shared keys from a client in every zone with a member, each through that member and watching it
    When the target zone goes down for 4 s
    And the target zone comes back
    Then the history is linearizable
    And every watcher saw every event in order
    And no acknowledged write of the load is lost
    And all members end with equal HashKV

  Scenario Outline: Any one zone may go down
    Whichever zone holds the leader when this runs. Two survivors can take more than one
    election to agree: a pre-vote that reaches the other while it still heard the leader less
    than an election timeout (1 s) ago is refused, and two candidates at once split the vote;
    each costs another randomized election timeout (1-2 s). 3.1 and 3.9 s were seen here.

    Given write and read probes run every 10 ms from a client in zone "<client>"
    When zone "<zone>" goes down for 5 s
    Then a leader exists in a surviving zone
    And writes resume within 5 s of the outage
    When zone "<zone>" comes back
    Then its member catches up within 10 s

    Examples:
      | zone   | client |
      | zone-a | zone-b |

    @long
    Examples: the other two zones
      | zone   | client |
      | zone-b | zone-c |
      | zone-c | zone-a |
