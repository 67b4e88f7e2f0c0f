@outage
Feature: False statements about zone outages, judged on real runs
  Every scenario ends in one Then-step that states something false about what just happened;
  every step before it holds. The line after each Scenario says the message its failure must
  carry. (tests/must_fail/test_must_fail.py runs them and holds each to both.)

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones

  @short
  Scenario: Writes resume within 3 s while two of three zones stay down for 4 s
    No quorum for 4 s: the gap misses the bound by a second at least, more than the harness's own
    stalls on a busy machine (a 1 s outage missed it by 0.5 s, with as much stall).
    Fails with: write-unavailability window since the outage took effect: expected at most 3.000s
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    When zones "zone-a" and "zone-b" go down for 4 s
    Then writes resume within 3 s of the outage

  Scenario: Writes resume within 2 election timeouts while two of three zones stay down for 4 s
    Fails with: write-unavailability window since the outage took effect (2 election timeouts; --election-timeout 1000 ms
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    When zones "zone-a" and "zone-b" go down for 4 s
    Then writes resume within 2 election timeouts of the outage

  Scenario: The longest write gap is under 1 s while quorum is gone for 2 s
    Fails with: longest write gap during the outage: expected at most 1.000s
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    When zones "zone-a" and "zone-b" go down for 2 s
    Then the longest write gap during the outage is under 1 s

  Scenario: The leader stays when its own zone goes down
    Fails with: led throughout it: reports of another leadership
    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 3 s
    Then the etcd leader does not change

  @short
  Scenario: The leader stays when its own zone goes down, watched from inside that zone
    The probe's client zone is the one cut off: it reaches only the old leader, which steps down
    (check-quorum) and names nobody; the harness's own view of the others shows their new leader.
    Fails with: led throughout it: reports of another leadership
    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zone "zone-a" goes down for 3 s
    Then the etcd leader does not change

  Scenario: No election is said to happen while the leader's zone is down, watched from inside it
    Fails with: at most 0 elections a minute over
    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zone "zone-a" goes down for 3 s
    Then at most 0 leader elections happen per minute of the outage

  Scenario: Elections are said to happen while a follower cut off without pre-vote only campaigns
    Without pre-vote the cut-off member raises its raft term with each campaign; nobody hears it,
    nobody is elected.
    Fails with: at least 2 elections over
    Given a fresh region with 3 etcd members spread over 3 zones, pre-vote off
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-c"
    When zone "zone-c" goes down for 5 s
    Then at least 2 leader elections happen during the outage

  Scenario: Writes resume within 3 s of an outage whose return brought no quorum back
    Zone-a returns at 1 s, its member dead: one member of three runs. The window runs 3 s from the
    outage's effect whatever came back meanwhile.
    Fails with: write-unavailability window since the outage took effect: expected at most 3.000s
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    When zones "zone-a" and "zone-b" go down for 1 s
    And member "etcd-0" is killed
    And zone "zone-a" comes back
    Then writes resume within 3 s of the outage

  Scenario: A new leader is elected within half an election timeout of losing the leader's zone
    A follower waits a whole election timeout without a heartbeat before it campaigns.
    Fails with: time to a new leader (0.5 election timeouts; --election-timeout 1000 ms, read from the command line
    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 3 s
    Then a new leader is elected in a surviving zone within 0.5 election timeouts

  Scenario: A new leader is elected when only a follower's zone went down
    Fails with: time to a new leader: expected at most 2.000s, but it never happened
    Given a zone without the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 1 s
    Then a new leader is elected in a surviving zone within 2 s

  Scenario: A leader exists among the survivors of two lost zones
    Fails with: the surviving members agree on a leader in a surviving zone
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    When zones "zone-a" and "zone-b" go down for 1 s
    Then a leader exists in a surviving zone

  Scenario: A leader exists among the survivors of two lost zones, the leader among them
    The leader in zone-c still says it leads, to itself, for an election timeout or two after it
    lost its quorum: one member is no quorum of three.
    Fails with: the surviving members agree on a leader in a surviving zone
    Given the etcd leader is in zone "zone-c"
    And write and read probes run every 10 ms from a client in zone "zone-c"
    When zones "zone-a" and "zone-b" go down for 1 s
    Then a leader exists in a surviving zone

  Scenario: Linearizable writes fail while only one zone is down
    Fails with: writes acknowledged during the outage
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    When zone "zone-a" goes down for 2 s
    Then linearizable writes fail during the outage

  Scenario: Serializable reads are served by a frozen member
    Fails with: every serializable read of etcd-2 served during the outage
    Given write and read probes run every 10 ms from a client in zone "zone-a"
    When node "zone-c-1" freezes for 2 s
    Then serializable reads from the member in zone "zone-c" are still served

  Scenario: Writes resume after a zone returns whose member is dead
    Fails with: time from the return to the first acknowledged write: expected at most 3.000s, but it never happened
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    When zones "zone-a" and "zone-b" go down for 1 s
    And member "etcd-0" is killed
    And zone "zone-a" comes back
    Then writes resume within 3 s of its return

  Scenario: A returning zone's member catches up although it is dead
    Fails with: catch-up of etcd-0 to revision
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    When zone "zone-a" goes down for 1 s
    And member "etcd-0" is killed
    And zone "zone-a" comes back
    Then its member catches up within 3 s

  Scenario: A member catches up whose process died while its node was frozen
    Fails with: catch-up of etcd-1 to revision
    Given write and read probes run every 10 ms from a client in zone "zone-a"
    When node "zone-b-1" freezes for 1 s
    And member "etcd-1" is killed
    And node "zone-b-1" comes back
    Then member "etcd-1" catches up within 3 s

  Scenario: No acknowledged probe write is lost after another client deleted them
    Fails with: acknowledged writes missing on etcd-0
    Given write and read probes run every 10 ms from a client in zone "zone-a"
    When zone "zone-b" goes down for 1 s
    And zone "zone-b" comes back
    And another client deletes the probe's keys
    Then no acknowledged write is lost

  Scenario: Members end with equal HashKV while a follower's peer traffic stays cut
    Fails with: members reach one revision once writes stopped
    Given a put load of 300 ops/s on 20 shared keys from a client in every zone with a member, each through that member and watching it
    When the peer traffic of a follower is blackholed until it is 50 revisions behind
    Then all members end with equal HashKV

  Scenario: The leader stays when its zone can no longer hear the others
    Fails with: led throughout it: reports of another leadership
    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone can no longer hear from the other zones
    And 3 s pass
    Then the etcd leader does not change

  Scenario: Writes never stop when the leader's zone can no longer send
    Fails with: longest write gap during the outage: expected at most 0.100s
    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone can no longer send to the other zones
    And 3 s pass
    Then the longest write gap during the outage is under 0.1 s

  Scenario: The leader is deposed after a bridge although pre-vote is on
    Fails with: a raft term above
    Given the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zones "zone-a" and "zone-b" can no longer reach each other
    And 3 s pass
    And the links come back
    Then the leader is deposed within 10 s of the return

  Scenario: A member in a lost zone is said to stop
    Fails with: time until etcd-2 stopped: expected within 2.000s, but not at a read begun
    Given write and read probes run every 10 ms from a client in zone "zone-a"
    When zone "zone-c" goes down for 3 s
    Then member "etcd-2" stops within 2 s of the outage

  Scenario: No election is said to happen while the leader's zone is down
    Fails with: at most 0 elections a minute over
    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 3 s
    Then at most 0 leader elections happen per minute of the outage

  Scenario: Elections are said to happen while only a follower's zone is down
    Fails with: at least 2 elections over
    Given a zone without the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 2 s
    Then at least 2 leader elections happen during the outage

  Scenario: The raft term is said to rise while only a follower's zone is down, with pre-vote on
    The cut-off member's pre-vote campaigns cannot win, so it never raises its term.
    Fails with: the raft term rose at least 1 times
    Given a zone without the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 3 s
    Then the raft term rises at least 1 times during the outage

  Scenario: Write latency is said to stay low while the leader's zone is down
    Fails with: write latency p99 during the outage under 50 ms; seen: 'p99 a failed write over
    Given the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 2 s
    Then the 99th percentile of write latency during the outage is under 50 ms

  Scenario: Write latency is said to rise while only a follower's zone is down
    Fails with: write latency p99 during the outage at least 100 ms; seen: 'p99
    Given a zone without the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 2 s
    Then the 99th percentile of write latency during the outage is at least 100 ms

  Scenario: A NOSPACE alarm is said to be raised by a zone outage
    Fails with: a NOSPACE alarm raised
    Given write and read probes run every 10 ms from a client in zone "zone-a"
    When zone "zone-c" goes down for 1 s
    Then etcd raises its NOSPACE alarm

  Scenario: A zone whose member the leader's log still covers is said to catch up from a snapshot
    etcd's default snapshot count (100,000) keeps 8,000 entries in the leader's log.
    Fails with: the member caught up from a snapshot: the leader sent it 0 snapshot(s)
    Given a zone without the etcd leader is the target zone
    And a load of 500 PUT/s with 1 KiB values against the leader from a client in its zone
    When the target zone goes down until the others are 8000 revisions ahead
    And the target zone comes back, its member's catch-up measured
    Then its member catches up from a snapshot

  Scenario: A zone away for 100 revisions is said to need 7 MiB from the leader
    Fails with: MiB from the leader's zone
    Given a zone without the etcd leader is the target zone
    And a load of 500 PUT/s with 1 KiB values against the leader from a client in its zone
    When the target zone goes down until the others are 100 revisions ahead
    And the target zone comes back, its member's catch-up measured
    Then its member catches up within 30 s, sent 7 MiB or more from the leader's zone

  Scenario: A zone 8,000 revisions behind is said to catch up within a second
    Fails with: catch-up of
    Given a zone without the etcd leader is the target zone
    And a load of 500 PUT/s with 1 KiB values against the leader from a client in its zone
    When the target zone goes down until the others are 8000 revisions ahead
    And the target zone comes back, its member's catch-up measured
    Then its member catches up within 1 s, sent 7 MiB or more from the leader's zone

  Scenario: A zone 8,000 revisions behind with a log of 1,000 entries is said to catch up from the log
    With a snapshot count of 1,000 the leader keeps 6,000 entries: too few, it sends a snapshot.
    Fails with: the member caught up from the log: the leader sent it 1 snapshot(s)
    Given a fresh region with 3 etcd members at the etcd version under test with snapshot count 1000
    And a zone without the etcd leader is the target zone
    And a load of 500 PUT/s with 1 KiB values against the leader from a client in its zone
    When the target zone goes down until the others are 8000 revisions ahead
    And the target zone comes back, its member's catch-up measured
    Then its member catches up from the log
