@recovery @quorum
Feature: Backups to the object store, and the recovery from a permanent quorum loss
  A zone that comes back is the easy case. The case platform teams dread is the one after it: two
  of three members' volumes are gone, and the cluster must be made again from its backups (seed
  003, DEP-05). A backup sidecar beside each member, the leading one writing, takes a full
  snapshot into the region's object store (the local cloud's S3) and, every delta period, a delta
  snapshot of the watch events since. The restore compacts the newest full snapshot and the
  deltas after it into one snapshot, restores every member from it and starts them. What the
  leading sidecar had not uploaded when its pod went is lost: the writes of at most one delta
  period, never one the store held.

  @long
  Scenario: Two of three volumes lost under writes: the cluster comes back from its backups, losing at most the last delta period
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 3 s pass
    And the volumes of the etcd leader and one follower are lost
    And 2 s pass
    Then linearizable writes fail during the outage
    When the cluster is restored from its backups
    Then writes resume within 10 s of the outage
    And the writes lost are only those after the last delta snapshot, at most 1.5 s of them
    And all members end with equal HashKV

  Scenario: The object store unreachable from every zone: snapshots fail and are counted, etcd keeps serving, the backups catch up
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When the backup store is unreachable from every zone
    And 3 s pass
    Then the backup sidecars report failed snapshots during the outage
    And the longest write gap during the outage is under 0.5 s
    When the backup store is reachable again
    Then the backups hold every acknowledged write within 5 s
    And no acknowledged write is lost

  Scenario: Two of three volumes lost: a QuorumLossRecoveryTask brings the cluster back from its backups
    DEP-05's recovery as a task resource on the seed: the executor restores every member from the
    store's full snapshot and deltas and waits for a healthy cluster.

    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 3 s pass
    And the volumes of the etcd leader and one follower are lost
    And 2 s pass
    Then linearizable writes fail during the outage
    When a QuorumLossRecoveryTask is created
    Then the task is completed within 60 s
    And etcd is back with 3 healthy members in 3 zones
    And writes resume within 15 s of the outage
    And the writes lost are only those after the last delta snapshot, at most 1.5 s of them
    And all members end with equal HashKV
    And the executor counts 1 success QuorumLossRecoveryTask

  @long
  Scenario: Tasks refused as DEP-05 says: a duplicate, a recovery with quorum, a snapshot without it
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    When 2 OnDemandSnapshotTasks for a full snapshot are created at once
    Then one of them is completed within 30 s and the others are rejected, saying "duplicate of task"
    When a QuorumLossRecoveryTask is created
    Then the task is rejected, saying "has quorum"
    When the volumes of the etcd leader and one follower are lost
    And an OnDemandSnapshotTask for a delta snapshot is created
    Then the task is rejected, saying "no quorum"
    And the executor counts 2 rejected OnDemandSnapshotTasks
    And the executor counts 1 rejected QuorumLossRecoveryTask
    When a QuorumLossRecoveryTask is created
    Then the task is completed within 60 s
    And etcd is back with 3 healthy members in 3 zones

  @long
  Scenario: On-demand delta and full snapshots land in the store with the revisions they cover
    The delta period is 30 s: no periodic delta is taken while the scenario runs.

    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 30 s
    And the operator tasks run on its seed
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 2 s pass
    And an OnDemandSnapshotTask for a delta snapshot is created
    Then the task is completed within 10 s
    And the backup store holds a delta snapshot covering every write acknowledged before the task
    When an OnDemandSnapshotTask for a full snapshot is created
    Then the task is completed within 30 s
    And the backup store holds a full snapshot covering every write acknowledged before the task
    When an OnDemandSnapCompactionTask is created
    Then the task is completed within 30 s
    And the executor counts 1 success OnDemandSnapCompactionTask

  Scenario: One member's volume lost: it comes back empty as a new member and catches up
    etcd-druid's first recovery case: the others keep quorum, and the member whose data is gone is
    removed and added again, starting empty and catching up from the leader.

    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When the volume of member "etcd-1" is lost
    And 2 s pass
    Then the longest write gap during the outage is under 0.5 s
    When member "etcd-1" comes back on an empty volume as a new member
    Then member "etcd-1" catches up within 10 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  @long
  Scenario: One member's database damaged: it cannot start, and comes back empty as a new member
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When the database of member "etcd-2" is damaged
    Then member "etcd-2" stops within 5 s of the outage
    And the longest write gap during the outage is under 0.5 s
    When member "etcd-2" comes back on an empty volume as a new member
    Then member "etcd-2" catches up within 10 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  @long
  Scenario: One member's data changed silently: it serves the change until it comes back empty as a new member
    A value rewritten on its disk while it was stopped (bit rot): it starts, serves the changed
    value and no error says so. Its HashKV differs from the others' (the must-fail suite's
    disk.feature shows that check failing); replaced on an empty volume, it agrees with them again.
    Given a fresh region with 3 etcd members spread over 3 zones
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When a value in the database of member "etcd-1" changes on its disk
    Then the longest write gap during the outage is under 0.5 s
    When member "etcd-1" comes back on an empty volume as a new member
    Then member "etcd-1" catches up within 10 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  @long
  Scenario: The shoot's etcd-main on the seed, backed up by the sidecars its node agents run beside the members
    The reference control plane on the local seed, with a backup-restore container in each
    etcd-main pod (etcd-druid's layout): the node agent runs the sidecar beside the member with
    the member's client certificate and the store of the pod's backup Secret, the shoot's own
    prefix in the region's bucket.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real, its etcd-main backed up with a delta snapshot every 1 s
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When 3 s pass
    Then the backups hold every acknowledged write within 2 s
    When the backup store is unreachable from every zone
    And 3 s pass
    Then the backup sidecars report failed snapshots during the outage
    When the backup store is reachable again
    Then the backups hold every acknowledged write within 5 s

  @long
  Scenario: One of etcd-main's volumes lost on the seed: claim and volume deleted with the pod, the member joins again on a new one
    Its pod is force-deleted with its PersistentVolumeClaim and PersistentVolume, and the
    directory that backed the volume is deleted. The StatefulSet makes the pod and a claim again,
    a spare volume of the zone is bound, and the node agent, finding the member's volume empty
    while the cluster knows it, removes it and adds it back before it starts (what etcd-druid's
    backup sidecar does), so it joins instead of refusing to bootstrap again.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real, its etcd-main backed up with a delta snapshot every 1 s
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When 2 s pass
    And the volume of member "etcd-main-0" is lost
    And member "etcd-main-0" joins again on its new volume
    Then member "etcd-main-0" catches up within 20 s
    And the backups hold every acknowledged write within 3 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  @long
  Scenario: Two of etcd-main's three volumes lost on the seed: a QuorumLossRecoveryTask brings it back and the shoot API serves again
    The task's executor acts on the shoot's etcd-main: it compacts the store's chain, scales the
    StatefulSet to 0, restores every member's volume from the snapshot and scales it back. The
    shoot's kube-apiservers, which lost etcd with the quorum, serve again.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real, its etcd-main backed up with a delta snapshot every 1 s
    And etcd-main of the shoot control plane is the etcd under test
    And the operator tasks run on its seed
    And write and read probes run every 10 ms from a client in zone "zone-b"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    When 3 s pass
    And the volumes of the etcd leader and one follower are lost
    And 2 s pass
    Then linearizable writes fail during the outage
    When a QuorumLossRecoveryTask is created
    Then the task is completed within 90 s
    And etcd is back with 3 healthy members in 3 zones
    And the shoot API is writable again within 30 s of the outage
    And the writes lost are only those after the last delta snapshot, at most 1.5 s of them
    And all members end with equal HashKV
    And the executor counts 1 success QuorumLossRecoveryTask

  @long
  Scenario: Every member's volume lost under writes: a QuorumLossRecoveryTask brings back what the store held
    Given a fresh region with 3 etcd members spread over 3 zones, backed up with a delta snapshot every 1 s
    And the operator tasks run on its seed
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 3 s pass
    And the volumes of every member are lost
    And a QuorumLossRecoveryTask is created
    Then the task is completed within 60 s
    And etcd is back with 3 healthy members in 3 zones
    And the writes lost are only those after the last delta snapshot, at most 1.5 s of them
    And all members end with equal HashKV
