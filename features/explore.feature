@outage @explore
Feature: Seeded random schedules of faults under load
  Faults from the catalogue (zone outages, one-way cuts, bridges, loss, latency, node kills and
  freezes, peer blackholes, member kills), each on a random target for 1 to 6 s, up to two at
  once on different zones, drawn from a seed: `--explore-seed N` replays a schedule, and every
  run says its seed and the command that replays it (`harness explore --seed N --seconds S`).
  What must hold whatever the schedule: etcd's safety. Two zones lost together lose quorum,
  so availability is not judged here; the history, the watches and the data are.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones

  Scenario: A random schedule of faults under a Kubernetes-like load
    Given a mixed load of 150 ops/s on 20 shared keys from a client in every zone with a member, each through that member and watching it
    When a random schedule of faults runs for 20 s
    Then the history is linearizable
    And every watcher saw every event in order
    And no acknowledged write of the load is lost
    And all members end with equal HashKV
