@outage
Feature: False statements about a load's history, judged on real runs
  The last step of each scenario is false about the run before it; the "Fails with:" line is
  what its failure must say.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones

  Scenario: Every read is linearizable while a cut-off member serves serializable reads
    Fails with: every read, serializable ones included, of
    Given the zone of the etcd leader is the target zone
    And a mixed load of 300 ops/s on 10 shared keys from a client in every zone with a member, each through that member and watching it
    When the target zone goes down for 4 s
    And the target zone comes back
    Then every read, serializable ones included, is linearizable

  Scenario: The history is linearizable although a client outside it wrote its keys
    Fails with: NOT linearizable
    Given a mixed load of 300 ops/s on 10 shared keys from a client in every zone with a member, each through that member and watching it
    When a client the history does not know writes the load's 10 shared keys
    And 2 s pass
    Then the history is linearizable

  Scenario: Every watcher saw every event although its watch process died
    Fails with: incomplete watch: watcher
    Given a zone without the etcd leader is the target zone
    And a mixed load of 300 ops/s with a watcher from a client in another zone
    When 1 s pass
    And the load's watchers stop
    And 2 s pass
    Then every watcher saw every event in order

  @short
  Scenario: No acknowledged write of the load is lost although another client deleted its keys unseen
    Fails with: members missing acknowledged writes of the load
    Given a zone without the etcd leader is the target zone
    And a mixed load of 300 ops/s with a watcher from a client in another zone
    When 2 s pass
    And the load's watchers stop
    And another client deletes the load's keys
    Then no acknowledged write of the load is lost
