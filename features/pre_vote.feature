@outage @grey
Feature: What pre-vote prevents: a member cut off from its leader deposing it on its return
  A member that hears no leader campaigns. Without pre-vote it raises its raft term each
  time; the member that still hears the leader ignores it (check-quorum's lease), but once the
  member is back its higher term reaches the leader, which steps down: an election nothing
  needed (etcd #8129's shape, and why etcd 3.5 turned pre-vote on). With pre-vote, a member
  first asks whether it could win, keeps its term while it cannot, and comes back quietly:
  grey.feature's bridge between the leader and a follower keeps its leader, and the must-fail
  suite shows this scenario's last step failing on a region with pre-vote on. The window is
  10 s: the members' connections met 3 s of silence and back off, so they may first speak
  again seconds after the bridge heals.

  Scenario: Without pre-vote, the member cut off by a bridge deposes the leader when it returns
    Given a fresh region with 3 etcd members spread over 3 zones, pre-vote off
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zones "zone-a" and "zone-b" can no longer reach each other
    And 3 s pass
    And the links come back
    Then the leader is deposed within 10 s of the return

  @long
  Scenario Outline: The leader's packets to one follower mostly lost: campaigns and elections with pre-vote <pre-vote>
    70 % of the leader's packets to zone-b are lost: TCP retransmits them, backing off, and the
    follower in zone-b goes seconds without hearing the leader, and campaigns. With pre-vote its
    campaign cannot raise the term while the others still hear the leader: no election at all.
    Without, its higher term reaches the leader in its next answer, and the leader steps down;
    most of the terms that follow elect nobody (measured: the term rose 15 times in 30 s, a
    leader was elected in one of those terms).

    Given <region>
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zone "zone-a" loses 70 % of its packets to zone "zone-b"
    And 30 s pass
    Then <elections>

    Examples:
      | pre-vote | region                                                                    | elections                                                |
      | on       | a healthy region with 3 etcd members spread over 3 zones                  | at most 0 leader elections happen per minute of the outage |
      | off      | a fresh region with 3 etcd members spread over 3 zones, pre-vote off      | the raft term rises at least 2 times during the outage    |
