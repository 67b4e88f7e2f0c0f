@recovery
Feature: False statements about backups and the recovery from them, judged on real runs
  Every scenario ends in one Then-step that states something false about what just happened;
  every step before it holds. The line after each Scenario says the message its failure must
  carry.

  @short
  Scenario: A cluster restored from backups taken every 5 s is said to have lost nothing
    The leading sidecar uploads the watch events every 5 s; those it held when its pod went are gone.
    Fails with: acknowledged writes missing on
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 5 s
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 7 s pass
    And the volumes of the etcd leader and one follower are lost
    And the cluster is restored from its backups
    Then no acknowledged write is lost

  Scenario: The same restore is said to have lost at most 0.5 s of writes
    Fails with: seconds of acknowledged writes lost
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 5 s
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 7 s pass
    And the volumes of the etcd leader and one follower are lost
    And the cluster is restored from its backups
    Then the writes lost are only those after the last delta snapshot, at most 0.5 s of them

  Scenario: A restore from the newest full snapshot alone is said to lose only what the store never held
    The full snapshot was taken as the region came up; every probe write since is in the deltas it leaves out.
    Fails with: acknowledged writes lost although the store held their revision
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 3 s pass
    And the volumes of the etcd leader and one follower are lost
    And the cluster is restored from its newest full snapshot alone
    Then the writes lost are only those after the last delta snapshot, at most 60 s of them

  Scenario: Backups are said to hold every acknowledged write while the store is still unreachable
    Fails with: the backups holding revision
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When the backup store is unreachable from every zone
    And 2 s pass
    Then the backups hold every acknowledged write within 3 s

  Scenario: Snapshots are said to fail when only a zone without the leading sidecar lost the store
    The leader is in zone-a; only its sidecar writes to the store, and zone-a still reaches it.
    Fails with: the backup sidecars reported failed snapshots
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When the backup store is unreachable from zone "zone-c"
    Then the backup sidecars report failed snapshots during the outage

  Scenario: A recovery task created while the cluster has quorum is said to complete
    DEP-05: the task recovers from a permanent quorum loss only; the executor rejects it.
    Fails with: the state task
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When a QuorumLossRecoveryTask is created
    Then the task is completed within 10 s

  Scenario: A quorum-loss recovery is said to be done within 2 s
    The executor restores the lost members from the store and starts the cluster anew: about 10 s.
    Fails with: finished: expected within 2.000s, but not at a read begun
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When the volumes of the etcd leader and one follower are lost
    And a QuorumLossRecoveryTask is created
    Then the task is completed within 2 s

  Scenario: Two snapshot tasks created at once without quorum are said to be one run and one duplicate
    Both are turned away: one as a duplicate, the other (or both) for the lost quorum; none runs.
    Fails with: the states the 2 tasks created at once ended in
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When the volumes of the etcd leader and one follower are lost
    And 2 OnDemandSnapshotTasks for a full snapshot are created at once
    Then one of them is completed within 30 s and the others are rejected, saying "duplicate of task"

  Scenario: Two snapshot tasks created at once are said to have one done within 0.05 s
    The executor sees a task through its watch, takes the snapshot and uploads it: more than 50 ms.
    Fails with: one of the 2 tasks created at once completed
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When 2 OnDemandSnapshotTasks for a full snapshot are created at once
    Then one of them is completed within 0.05 s and the others are rejected, saying "duplicate of task"

  Scenario: A full snapshot task on a healthy cluster is said to be rejected
    Fails with: the state of task
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When an OnDemandSnapshotTask for a full snapshot is created
    Then the task is rejected, saying "no quorum"

  Scenario: The executor is said to count a rejected recovery task as a success
    Fails with: etcd_operator_tasks_total{type="QuorumLossRecoveryTask",state="success"}
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When a QuorumLossRecoveryTask is created
    Then the task is rejected within 10 s
    And the executor counts 1 success QuorumLossRecoveryTask

  Scenario: A delta snapshot is said to cover the writes when only a full one was taken
    The delta period is 30 s and no delta task was created: no delta snapshot covers the writes.
    Fails with: a delta snapshot in the store up to revision
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 30 s
    And the operator tasks run on its seed
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 2 s pass
    And an OnDemandSnapshotTask for a full snapshot is created
    Then the task is completed within 30 s
    And the backup store holds a delta snapshot covering every write acknowledged before the task

  Scenario: etcd is said to be back while two of its three volumes are gone
    Fails with: 3 healthy members with one leader
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    When the volumes of the etcd leader and one follower are lost
    Then etcd is back with 3 healthy members in 3 zones

  Scenario: A full snapshot task on a healthy cluster is said to be rejected within 10 s
    Fails with: the state task
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When an OnDemandSnapshotTask for a full snapshot is created
    Then the task is rejected within 10 s

  Scenario: A full snapshot task on a healthy cluster is said to fail
    Fails with: the state task
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When an OnDemandSnapshotTask for a full snapshot is created
    Then the task ends failed within 30 s

  Scenario: The executor is said to count a completed snapshot task as rejected
    Fails with: etcd_operator_tasks_total{type="OnDemandSnapshotTask",state="rejected"}
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When an OnDemandSnapshotTask for a full snapshot is created
    Then the task is completed within 30 s
    And the executor counts 1 rejected OnDemandSnapshotTask

  Scenario: The executor is said to count a completed compaction task as failed
    Fails with: etcd_operator_tasks_total{type="OnDemandSnapCompactionTask",state="failed"}
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 3 s pass
    And an OnDemandSnapCompactionTask is created
    Then the task is completed within 30 s
    And the executor counts 1 failed OnDemandSnapCompactionTask

  Scenario: A full snapshot is said to cover the writes when only a delta one was taken
    The full snapshot in the store is the one taken at the start, before the probe wrote.
    Fails with: a full snapshot in the store up to revision
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 30 s
    And the operator tasks run on its seed
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 2 s pass
    And an OnDemandSnapshotTask for a delta snapshot is created
    Then the task is completed within 30 s
    And the backup store holds a full snapshot covering every write acknowledged before the task
