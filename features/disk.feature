@outage @grey @disk
Feature: A member's disk full or slow
  A member's volume fills up (a runaway log, a snapshot left behind) or turns slow (a noisy
  neighbour, a throttled cloud volume). Here each member's data directory is a filesystem of its
  own, filled to the last byte by the harness; a slow disk is etcd's own raftBeforeSave failpoint
  sleeping before each save of the write-ahead log; a power loss is powerloss-fs under each data
  directory dropping every write the member had not fsynced. etcd does not wait out a full disk: its next
  backend commit that needs space fails, and the member exits ("failed to commit tx ... no space
  left on device"). What must hold is what holds for a lost member: the others go on, and the
  member comes back whole once it has space again.

  Scenario: A follower's disk fills up: it stops, the others go on, and it catches up once space is freed
    Given a fresh region with 3 etcd members spread over 3 zones, each member's data on a disk of 192 MiB of its own
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When the disk of member "etcd-1" fills up
    Then member "etcd-1" stops within 10 s of the outage
    When 3 s pass
    Then the longest write gap during the outage is under 0.5 s
    When the disk is freed
    Then member "etcd-1" catches up within 10 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: The leader's disk fills up: it stops and a new leader takes over
    Given a fresh region with 3 etcd members spread over 3 zones, each member's data on a disk of 192 MiB of its own
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When the disk of member "etcd-0" fills up
    Then member "etcd-0" stops within 10 s of the outage
    And writes resume within 5 s of the outage
    When the disk is freed
    Then member "etcd-0" catches up within 10 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  Scenario Outline: A slow disk is felt on the leader, not on a follower: every save of <role>'s log waits 100 ms
    A save that waits holds up the member's raft loop. On the leader it holds up every write, and
    a write waits on two of its saves: 100 ms a save is about 200 ms a write (measured: p99
    203 ms, against 3 ms with no wait), and its heartbeats wait too; slower, not down. (At 200 ms a write takes longer than the probe's 250 ms timeout: every
    write fails.) A slow follower is outvoted: the leader and the other follower make the quorum
    without it (p99 5 ms). A write that waited on its save would take the save's 100 ms: 50 ms
    tells the two apart and leaves room for a busy machine (p99 34.9 ms measured on 2 cores
    running the whole suite, with the harness's own stalls taken out 30.9 ms; missed by no more
    than the harness stalled and the members waited for a CPU across the writes, inconclusive).

    Given a fresh region with 3 etcd members at the etcd version under test with failpoints, its backend committed every 100 ms
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When every save of member "<member>"'s log waits 100 ms
    And 5 s pass
    Then the 99th percentile of write latency during the outage is <p99> ms
    And the etcd leader does not change
    And the longest write gap during the outage is under 1 s
    When the disk is fast again
    Then all members end with equal HashKV
    And no acknowledged write is lost

    Examples:
      | role       | member | p99          |
      | the leader | etcd-0 | at least 150 |
      | a follower | etcd-1 | under 50     |

  Scenario: A lone member loses power under writes: all it acknowledged was fsynced and comes back
    With one member there is no peer to catch up from: what the member acknowledged must be on its
    own disk. A killed process's writes survive in the page cache; a power loss takes them.

    Given a fresh region with 1 etcd member whose disks lose what was not fsynced when the power goes
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When 2 s pass
    And member "etcd-0" loses power
    And its power comes back
    Then writes resume within 10 s of its return
    And no acknowledged write is lost

  @long
  Scenario: A follower loses power under a put load: it comes back on what it had synced and catches up
    Given a fresh region with 3 etcd members whose disks lose what was not fsynced when the power goes
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    And a put load of 300 ops/s on 20 shared keys from a client in every zone with a member, each through that member and watching it
    When 2 s pass
    And member "etcd-1" loses power
    Then the longest write gap during the outage is under 0.5 s
    When its power comes back
    Then member "etcd-1" catches up within 10 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: A runaway writer fills the backend quota: writes stop, reads go on, an operator brings them back
    etcd's NOSPACE alarm is not about the disk: it is raised when the backend outgrows
    --quota-backend-bytes, here 16 MiB, by one key rewritten with 64 KiB values until its
    history fills it. The cluster then refuses every write and serves reads; etcd's runbook
    (compact, defragment every member, disarm the alarm) brings writes back.

    Given a fresh region with 3 etcd members spread over 3 zones, a backend quota of 16 MiB
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When writes of 64 KiB values to one key fill the backend quota
    And 2 s pass
    Then etcd raises its NOSPACE alarm
    And linearizable writes fail during the outage
    And serializable reads from the member in zone "zone-b" are still served
    When an operator reclaims the space: the history compacted, every member defragmented, the alarm disarmed
    Then writes resume within 5 s of its return
    And all members end with equal HashKV
    And no acknowledged write is lost
