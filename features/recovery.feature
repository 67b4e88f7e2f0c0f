@outage @grey
Feature: A fault during the recovery of another
  A member coming back from one fault is at its most fragile: it is catching up, from the log
  or from a snapshot the leader streams to it. A second fault then must still leave it whole.

  @long
  Scenario: A member killed while a snapshot brings it back still comes back whole
    The follower's peer traffic is blackholed until it is so far behind that the leader must send
    it a snapshot (snapshot count 100); the moment its traffic returns it is killed (how far behind
    it still was is a figure), then started again from whatever it had saved.

    Given a fresh region with 3 etcd members at the etcd version under test with snapshot count 100
    And a mixed load of 1500 ops/s on 300 shared keys from a client in every zone with a member, each through that member and watching it
    When the peer traffic of a follower is blackholed until it is 5200 revisions behind
    And its peer traffic comes back
    And the member catching up is killed and started again
    And 3 s pass
    Then the history is linearizable
    And every watcher saw every event in order
    And no acknowledged write of the load is lost
    And all members end with equal HashKV
