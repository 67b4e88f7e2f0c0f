@gep20
Feature: False statements about GEP-20's experiment, judged with the reference control plane running for real
  The last step of each scenario is false about the run before it; the "Fails with:" line is
  what its failure must say.

  Scenario: The nodes of a zone nobody cut off turn NotReady
    Fails with: every node of zone-a NotReady and tainted unreachable: expected within 5.000s
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    Then within 5 s the nodes of zone "zone-a" are NotReady and tainted unreachable

  Scenario: etcd-main keeps quorum with two members when two zones are down
    Fails with: etcd-main members outside the zones that are down
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    When zones "zone-a" and "zone-b" go down for 1 s
    Then etcd-main keeps quorum with 2 members

  Scenario: Every pod runs again while the zone stays down
    Fails with: every pod of the shoot control plane Running and ready: expected within 5.000s
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    When zone "zone-a" goes down
    Then within 60 s the pods of the shoot control plane are
      | component   | zone   | phase   |
      | etcd-main   | zone-b | Running |
      | etcd-main   | zone-c | Running |
      | etcd-main   | -      | Pending |
    And within 5 s every pod of the shoot control plane is Running

  Scenario: The kube-apiservers serve although the only etcd members they know are down
    Their processes keep running outside the lost zone, but their /readyz fails without etcd:
    the table's Running (serving) is false of them, they are Running, not ready.
    Fails with: 'Running, not ready')
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real, its kube-apiservers given only the etcd members in zone "zone-a"
    When zone "zone-a" goes down
    Then within 20 s the pods of the shoot control plane are
      | component      | zone   | phase   |
      | kube-apiserver | zone-b | Running |
      | kube-apiserver | zone-c | Running |

  Scenario: The member leaves its failed node at once
    Fails with: no etcd-main member bound to
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    When the node of the etcd-main member in zone "zone-b" fails
    Then within 2 s no etcd-main member runs on the failed node

  Scenario: The shoot API stays writable although its apiservers know only the members of the lost zone
    The configuration the harness found: kube-apiservers started with only the etcd members
    scheduled at that moment keep that list, and lose etcd when those members are cut off.
    Fails with: the shoot API's longest write gap since the outage took effect: expected at most 5.000s
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real, its kube-apiservers given only the etcd members in zone "zone-a"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    When zone "zone-a" goes down
    Then the shoot API is writable again within 5 s of the outage

  @short
  Scenario: No acknowledged shoot API write is lost although another client deleted them
    Fails with: acknowledged shoot API writes missing (gone on a read-back or at the end)
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    When 2 s pass
    And another client deletes the shoot API probe's ConfigMaps
    Then no acknowledged shoot API write is lost

  Scenario: The load balancer is said to keep a lost zone's kube-apiserver
    Fails with: saying ok from the outage to
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And the shoot control plane's detectors are watched
    When zone "zone-a" goes down
    And 4 s pass
    Then detector "load-balancer" never sees zone "zone-a" fail during the outage

  Scenario: The shoot API's writes are said to stay fast while their zone's path to etcd loses packets
    Fails with: shoot API write latency p99 during the outage under 100 ms; seen: 'p99
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    When these faults are applied together
      | fault          | target    | loss_percent | port   |
      | zone-link-loss | zone-a<>* | 30           | client |
    And 20 s pass
    Then the 99th percentile of shoot API write latency during the outage is under 100 ms

  Scenario: The shoot API's writes are said to slow down while a follower's zone is down
    Writes through the load balancer go on through the surviving zones' kube-apiservers.
    Fails with: shoot API write latency p99 during the outage at least 1000 ms; seen: 'p99
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    When zone "zone-c" goes down for 10 s
    Then the 99th percentile of shoot API write latency during the outage is at least 1000 ms

  Scenario: One etcd-main member away at a time while two zones are down
    Fails with: at most 1 etcd-main member(s) away at a time: 2 were
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-c"
    And each member's health is checked every 100 ms, as its readiness probe does
    When zones "zone-a" and "zone-b" go down for 3 s
    Then at most 1 etcd-main member is away at a time

  Scenario: The budget's evictions stop no write for half a second
    Fails with: longest write gap during the outage: expected at most 0.500s
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When every etcd-main member is evicted, each as soon as its budget allows
    Then the longest write gap during the outage is under 0.5 s

  Scenario: The leadership stays put while the leader's own pod is evicted
    Fails with: the leadership moved at most 0 times
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When every etcd-main member is evicted, each as soon as its budget allows
    Then the leadership moves at most 0 times

  @long
  Scenario: Five members lose their quorum to an eviction and a crash
    Fails with: writes acknowledged in the
    Given a fresh seed with 1 nodes in each of 5 zones
    And the reference control plane with failure tolerance "zone" in the gep20 form runs for real, its etcd clusters of 5 members
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When the etcd-main member in zone "zone-a" is evicted and the node of the member in zone "zone-c" fails while it is away
    Then no write is acknowledged while the evicted member and the crashed one are both away

  Scenario: A crash after the evicted member is back finds it away
    Fails with: the evicted member and the crashed one were away at once
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When the etcd-main member in zone "zone-a" is evicted and the node of the member in zone "zone-c" fails once it is back
    Then no write is acknowledged while the evicted member and the crashed one are both away

  @gardener @druid
  Scenario: etcd-druid is said to report etcd-main quorate throughout while two zones are down
    Fails with: etcd-druid reports etcd-main quorate from
    druid takes a member as NotReady once its lease is a minute old and its pod not ready: two
    minutes of two zones down are enough for it to report the quorum lost (QuorumLost).
    Given the reference control plane with failure tolerance "zone" in the gardener form runs for real, its etcds made by etcd-druid
    When zones "zone-a" and "zone-b" go down for 120 s
    Then etcd-druid reports etcd-main quorate throughout the outage

  @gardener @druid
  Scenario: etcd-druid is said to report etcd-main ready, every member ready, while a zone stays down
    Fails with: etcd-druid reports etcd-main ready with every member ready: expected within 20.000s
    Given the reference control plane with failure tolerance "zone" in the gardener form runs for real, its etcds made by etcd-druid
    When zone "zone-a" goes down for 30 s
    Then within 20 s etcd-druid reports etcd-main ready with every member ready

  @gardener @druid
  Scenario: etcd-druid is said to report etcd-main quorate throughout a zone outage it was down for
    Fails with: stale: druid last updated it
    Its status stays as druid last wrote it (quorate): read while druid is down, it says nothing.
    Given the reference control plane with failure tolerance "zone" in the gardener form runs for real, its etcds made by etcd-druid
    When etcd-druid goes down
    And zone "zone-a" goes down for 60 s
    Then etcd-druid reports etcd-main quorate throughout the outage

  @gardener @druid
  Scenario: etcd-druid is said to report etcd-main ready, every member ready, while it is down through a zone outage
    Fails with: stale: druid last updated it
    Its status still says ready, every member ready, as druid last wrote it before the outage.
    Given the reference control plane with failure tolerance "zone" in the gardener form runs for real, its etcds made by etcd-druid
    When etcd-druid goes down
    And zone "zone-a" goes down for 60 s
    Then within 5 s etcd-druid reports etcd-main ready with every member ready
