@bug
Feature: Historical etcd bugs the harness flags
  etcd's robustness suite keeps its known bugs reproducible, one make target each, so that a
  change to the suite that stops catching them is seen. These are the harness's own scenarios
  for four of them. On the etcd release that had the bug (`python -m harness.bugs`, make bugs,
  runs each with `--etcd-version`), a Then-step must fail in the check named after what the bug
  breaks; on a fixed release (the pinned one, which `make test` runs) every step must pass.

  @bug_13766 @long
  Scenario: Members killed under a high load keep one history (etcd issue 13766, 3.5.0 to 3.5.2)
    A member killed between saving its consistent index and applying the entry it points to
    skipped that entry when it restarted, and its revision and keys went apart from the others'.
    etcd's postmortem: the bug showed only with the data on a real disk, not on tmpfs. The window
    is a backend commit landing in the middle of an apply: committing every millisecond instead of
    every 100 makes such commits a hundred times as frequent.

    Given a fresh region with 3 etcd members at the etcd version under test with snapshot count 100, its data on disk committed every 1 ms
    And a put load of 1500 ops/s on 300 shared keys from a client in every zone with a member, each through that member and watching it
    When a random member is killed and restarted 20 times, 0.5 s apart
    Then all members end with equal HashKV
    And the history is linearizable
    And no acknowledged write of the load is lost

  @bug_14370
  Scenario: A member that crashes before saving its log loses no acknowledged write (etcd issue 14370, 3.5.4)
    With one member, etcd 3.5.4 applied and acknowledged an entry before its raft log was saved;
    a crash in between lost it. etcd's failpoint raftBeforeSave holds the member right there (a
    sleep) while it is killed, and the backend commits only every 10 s, so an entry applied
    meanwhile survives only through the raft log: on 3.5.4 the writes acknowledged before the
    save are gone after the restart; a fixed release acknowledges nothing before the save. The
    load only writes (held on a read in flight, the member would have nothing to lose), so the
    history has no read for a linearizability check; the watchers see the writes instead.

    Given a fresh region with 1 etcd member at the etcd version under test with failpoints, its backend committed every 10000 ms
    And a write load of 300 ops/s on 10 shared keys from a client in every zone with a member, each through that member and watching it
    When 1 s pass
    And failpoint "raftBeforeSave" of member "etcd-0" is set to "sleep(3000)"
    And 0.5 s pass
    And member "etcd-0" is killed
    And member "etcd-0" comes back
    And 1 s pass
    Then no acknowledged write of the load is lost
    And every watcher saw every event in order

  @bug_14685 @long
  Scenario: A member that crashes while defragmenting keeps one history with the others (etcd issue 14685, 3.5.0 to 3.5.5)
    etcd 3.5.5's defragmentation committed the backend without saving the consistent index with it,
    so a member that crashed in the middle of it applied again, after its restart, entries its
    data already held: its revision ran ahead of the others' and its keys went apart. The failpoint
    defragBeforeCopy crashes it right after that commit; with the backend committing only every
    10 s the saved consistent index is seconds old, so there is always something to apply twice.

    Given a fresh region with 3 etcd members at the etcd version under test with failpoints, its backend committed every 10000 ms
    And a put load of 300 ops/s on 30 shared keys from a client in every zone with a member, each through that member and watching it
    When 2 s pass
    And failpoint "defragBeforeCopy" of member "etcd-1" is set to "panic"
    And member "etcd-1" is defragmented
    And member "etcd-1" comes back
    And 2 s pass
    Then all members end with equal HashKV
    And every watcher saw every event in order
    And the history is linearizable
    And no acknowledged write of the load is lost

  @bug_15271 @long
  Scenario: A member brought back by a snapshot keeps its watches in order (etcd issue 15271, 3.5.0 to 3.5.7)
    A follower that fell so far behind that the leader sent it a snapshot sent its watchers
    events again from before the snapshot: the watch went back in time.

    Given a fresh region with 3 etcd members at the etcd version under test with snapshot count 100
    And a mixed load of 1500 ops/s on 300 shared keys from a client in every zone with a member, each through that member and watching it
    When the peer traffic of a follower is blackholed until it is 5200 revisions behind
    And its peer traffic comes back
    And 3 s pass
    Then every watcher saw every event in order
    And the history is linearizable
    And no acknowledged write of the load is lost
