@outage @grey
Feature: Grey network failures between zones
  A zone is rarely cut off cleanly. These scenarios break the paths between zones one ordered
  pair at a time at the router: one direction only, two zones losing each other while both
  still see the third, a share of the packets lost. etcd runs with pre-vote and check-quorum
  (etcd's defaults since 3.5 and always): a leader that hears no majority steps down, and a
  member that lost its leader cannot disturb the others while they still hear it. The bounds
  are the zone outage's: what a sick zone does must not cost more than a dead one.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones

  Scenario: The leader's zone can no longer send (a one-way partition, its egress)
    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone can no longer send to the other zones
    Then a new leader is elected in a surviving zone within 3 s
    And writes resume within 3 s of the outage
    When the links come back
    Then all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: The leader's zone can no longer hear the others (raft #266, etcd #13527)
    The cut-off leader still sends heartbeats, so its followers do not start an election on
    their own; only check-quorum, the leader stepping down when no majority answers, frees them.

    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone can no longer hear from the other zones
    Then a new leader is elected in a surviving zone within 3 s
    And writes resume within 3 s of the outage
    When the links come back
    Then all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: Two followers lose each other, both still see the leader (a bridge)
    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zones "zone-b" and "zone-c" can no longer reach each other
    And 3 s pass
    Then the etcd leader does not change
    And the longest write gap during the outage is under 0.5 s

  Scenario: The leader loses one follower, the other sees both (etcd #8129's shape)
    The cut-off follower hears no leader and asks for votes; pre-vote keeps its term, and the
    follower that still hears the leader refuses, so the leader stays.

    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zones "zone-a" and "zone-b" can no longer reach each other
    And 3 s pass
    Then the etcd leader does not change
    And the longest write gap during the outage is under 0.5 s
    When the links come back
    Then all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: A follower's zone loses 30 % of its packets to the leader's
    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zone "zone-b" loses 30 % of its packets to zone "zone-a"
    And 5 s pass
    Then the etcd leader does not change
    And the longest write gap during the outage is under 0.5 s

  Scenario: The link between the leader and a follower flaps
    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When the link from zone "zone-a" to zone "zone-b" flaps, down 2 s and up 2 s at a time
    And 8 s pass
    Then the etcd leader does not change
    And the longest write gap during the outage is under 0.5 s
    When the flapping stops
    Then all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: A follower's node flaps: killed again each time it has been back a while
    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When node "zone-b-1" flaps, down 1 s and up 2 to 4 s at a time
    And 8 s pass
    Then the etcd leader does not change
    And the longest write gap during the outage is under 0.5 s
    When the flapping stops
    Then all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: Grey faults together: the followers lose each other, one of them loses packets to the leader
    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When these faults are applied together
      | fault          | target         | loss_percent |
      | zone-link-cut  | zone-b<>zone-c |              |
      | zone-link-loss | zone-b>zone-a  | 30           |
    And 5 s pass
    Then the etcd leader does not change
    And the longest write gap during the outage is under 0.5 s
    When the links come back
    Then all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: 100 ms ± 20 ms between every pair of zones: slower, not down
    Every packet between zones waits in a delay line at the router (this kernel has no netem).
    A write takes a round trip to a follower, 160-240 ms: each request is given 1 s, so that a
    slow write is a slow write, not a failed one (the default 0.25 s made one write of 253 ms a
    1.4 s gap, the writer trying the members across the delayed links).

    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a", each request given 1 s
    When every path between zones is delayed 100 ms ± 20 ms
    And 5 s pass
    Then the etcd leader does not change
    And the longest write gap during the outage is under 0.5 s
    When the links come back
    Then all members end with equal HashKV
    And no acknowledged write is lost
