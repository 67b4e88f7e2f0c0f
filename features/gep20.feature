@gep20 @outage
Feature: GEP-20's zone outage experiment, automated
  GEP-20's authors cut one zone of an AWS region off by hand (appendix "Availability Zone
  Outage simulation"): every subnet of the zone got a deny-all network ACL, and they watched
  the nodes go NotReady, the zone's etcd members stay Pending while the other two kept
  quorum, and the API servers move to the surviving zones. Here the reference control plane
  runs for real on the local seed: etcd-main, etcd-events and kube-apiserver are real
  processes on addresses of their own in their nodes' zones, placed by the real scheduler,
  behind an HAProxy load balancer; gardener-resource-manager is simulated. The router denies
  all traffic crossing the zone's subnet, which stops its node heartbeats and its pods' traffic
  alike. Seed timings (harness/kube/timings.py): a node is NotReady 8 s after its last
  heartbeat; its pods are evicted 5 s later; pods still Terminating on an unreachable node
  are force-deleted 5 s after their 5 s grace period (Gardener's garbage collection: 5 min,
  as long as the unreachable toleration).

  Scenario Outline: A zone outage in the GEP-20 form: every stateless replica moves, the etcd members wait (<zone> down)
    A replica moves when it serves outside the zone: evicted some 14 s after the cut (the seed's
    timings), a real kube-apiserver then takes 9 to 17 s from its start to ready on an idle
    2-core machine (3 runs; 17 to 26 s into the step's wait), longer on one running the whole
    suite; `make run` saw them all ready 14 to 47 s after the cut. `harness run` (`make run`) is
    this scenario for each zone in turn, printing the tables and figures it recorded.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "<client>"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "<client>"
    Then the pods of the shoot control plane are
      | component                 | zone   | phase   |
      | etcd-main                 | zone-a | Running |
      | etcd-main                 | zone-b | Running |
      | etcd-main                 | zone-c | Running |
      | etcd-events               | zone-a | Running |
      | etcd-events               | zone-b | Running |
      | etcd-events               | zone-c | Running |
      | kube-apiserver            | zone-a | Running |
      | kube-apiserver            | zone-b | Running |
      | kube-apiserver            | zone-c | Running |
      | gardener-resource-manager | zone-a | Running |
      | gardener-resource-manager | zone-b | Running |
      | gardener-resource-manager | zone-c | Running |
    When zone "<zone>" goes down
    Then within 20 s the nodes of zone "<zone>" are NotReady and tainted unreachable
    And etcd-main keeps quorum with 2 members
    And etcd-events keeps quorum with 2 members
    And the shoot API is writable again within 5 s of the outage
    And within 60 s all 3 kube-apiserver replicas are Running outside zone "<zone>"
    And within 30 s all 3 gardener-resource-manager replicas are Running outside zone "<zone>"
    And within 60 s the pods of the shoot control plane are
      | component   | zone     | phase   |
      | etcd-main   | <client> | Running |
      | etcd-main   | <other>  | Running |
      | etcd-main   | -        | Pending |
      | etcd-events | <client> | Running |
      | etcd-events | <other>  | Running |
      | etcd-events | -        | Pending |
    And the longest write gap during the outage is under 5 s
    When zone "<zone>" comes back
    Then within 60 s every pod of the shoot control plane is Running
    And etcd-main has one member in each of 3 zones
    And etcd-events has one member in each of 3 zones
    And etcd-main members end with equal HashKV
    And etcd-events members end with equal HashKV
    And no acknowledged write is lost
    And no acknowledged shoot API write is lost

    Examples:
      | zone   | client | other  |
      | zone-a | zone-b | zone-c |

    @long
    Examples: the other zones (`harness run` takes every zone in turn)
      | zone   | client | other  |
      | zone-b | zone-c | zone-a |
      | zone-c | zone-a | zone-b |

  @long
  Scenario Outline: A zone outage in the conventions form: the zone spread keeps one kube-apiserver Pending (<zone> down)
    With maxSkew 1 over three zone domains and the zone's nodes still counted (the default
    nodeTaintsPolicy), a replacement in another zone would leave the zone that is down two behind:
    the scheduler keeps it Pending, and two kube-apiservers serve until the zone returns.
    `harness run --form conventions` is this scenario for each zone in turn.

    Given the reference control plane with failure tolerance "zone" in the conventions form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "<client>"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "<client>"
    When zone "<zone>" goes down
    Then within 20 s the nodes of zone "<zone>" are NotReady and tainted unreachable
    And etcd-main keeps quorum with 2 members
    And the shoot API is writable again within 5 s of the outage
    And within 60 s the pods of the shoot control plane are
      | component      | zone     | phase   |
      | etcd-main      | <client> | Running |
      | etcd-main      | <other>  | Running |
      | etcd-main      | -        | Pending |
      | etcd-events    | <client> | Running |
      | etcd-events    | <other>  | Running |
      | etcd-events    | -        | Pending |
      | kube-apiserver | <client> | Running |
      | kube-apiserver | <other>  | Running |
      | kube-apiserver | -        | Pending |
    And 1 kube-apiserver pod stays Pending because "didn't match pod topology spread constraints"
    And the longest write gap during the outage is under 5 s
    When zone "<zone>" comes back
    Then within 60 s every pod of the shoot control plane is Running
    And etcd-main has one member in each of 3 zones
    And kube-apiserver has one replica in each of 3 zones
    And etcd-main members end with equal HashKV
    And no acknowledged write is lost
    And no acknowledged shoot API write is lost

    Examples:
      | zone   | client | other  |
      | zone-a | zone-b | zone-c |
      | zone-b | zone-c | zone-a |
      | zone-c | zone-a | zone-b |

  @long @gardener
  Scenario Outline: A zone outage in the gardener form: Gardener's own webhook spreads the control plane as the conventions form (<zone> down)
    The workloads as Gardener's components hand them to the seed, without scheduling of their own,
    and gardener-resource-manager (Gardener's own, gardener v1.145.0) running on the seed: its
    high-availability-config webhook writes their replicas, zone pinning and spread constraints
    (with matchLabelKeys pod-template-hash, which the conventions form has not). The outage then
    goes as in the conventions form. `harness run --form gardener` is this scenario for each zone.

    Given the reference control plane with failure tolerance "zone" in the gardener form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "<client>"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "<client>"
    When zone "<zone>" goes down
    Then within 20 s the nodes of zone "<zone>" are NotReady and tainted unreachable
    And etcd-main keeps quorum with 2 members
    And the shoot API is writable again within 5 s of the outage
    And within 60 s the pods of the shoot control plane are
      | component      | zone     | phase   |
      | etcd-main      | <client> | Running |
      | etcd-main      | <other>  | Running |
      | etcd-main      | -        | Pending |
      | etcd-events    | <client> | Running |
      | etcd-events    | <other>  | Running |
      | etcd-events    | -        | Pending |
      | kube-apiserver | <client> | Running |
      | kube-apiserver | <other>  | Running |
      | kube-apiserver | -        | Pending |
    And 1 kube-apiserver pod stays Pending because "didn't match pod topology spread constraints"
    And the longest write gap during the outage is under 5 s
    When zone "<zone>" comes back
    Then within 60 s every pod of the shoot control plane is Running
    And etcd-main has one member in each of 3 zones
    And kube-apiserver has one replica in each of 3 zones
    And etcd-main members end with equal HashKV
    And no acknowledged write is lost
    And no acknowledged shoot API write is lost

    Examples:
      | zone   | client | other  |
      | zone-a | zone-b | zone-c |
      | zone-b | zone-c | zone-a |
      | zone-c | zone-a | zone-b |

  @long @gardener @druid
  Scenario Outline: A zone outage with etcd-druid running the etcds: gardenlet's Etcd resources, druid's StatefulSets, the real etcd-backup-restore (<zone> down)
    The gardener form, but etcd-main and etcd-events are the Etcd resources gardenlet's own code
    makes for a shoot of failure tolerance zone (gardener v1.145.0), and etcd-druid v0.36.4 (real)
    makes their StatefulSets, budgets and configuration; the node agents run each member's pod
    with the real etcd-backup-restore beside the real etcd. The lost zone's members are made again
    by druid's StatefulSet and wait Pending for their zonal volumes, as the renderer's do. druid's
    own status is a vantage too: it reports both etcds quorate throughout, and ready again, every
    member ready, once the zone is back.

    Given the reference control plane with failure tolerance "zone" in the gardener form runs for real, its etcds made by etcd-druid
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "<client>"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "<client>"
    When zone "<zone>" goes down
    Then within 20 s the nodes of zone "<zone>" are NotReady and tainted unreachable
    And etcd-main keeps quorum with 2 members
    And the shoot API is writable again within 5 s of the outage
    And within 60 s the pods of the shoot control plane are
      | component      | zone     | phase   |
      | etcd-main      | <client> | Running |
      | etcd-main      | <other>  | Running |
      | etcd-main      | -        | Pending |
      | etcd-events    | <client> | Running |
      | etcd-events    | <other>  | Running |
      | etcd-events    | -        | Pending |
      | kube-apiserver | <client> | Running |
      | kube-apiserver | <other>  | Running |
      | kube-apiserver | -        | Pending |
    And 1 kube-apiserver pod stays Pending because "didn't match pod topology spread constraints"
    And the longest write gap during the outage is under 5 s
    And etcd-druid reports etcd-main quorate throughout the outage
    And etcd-druid reports etcd-events quorate throughout the outage
    When zone "<zone>" comes back
    Then within 60 s every pod of the shoot control plane is Running
    And within 120 s etcd-druid reports etcd-main ready with every member ready
    And within 120 s etcd-druid reports etcd-events ready with every member ready
    And etcd-main has one member in each of 3 zones
    And kube-apiserver has one replica in each of 3 zones
    And etcd-main members end with equal HashKV
    And no acknowledged write is lost
    And no acknowledged shoot API write is lost

    Examples:
      | zone   | client | other  |
      | zone-a | zone-b | zone-c |
      | zone-b | zone-c | zone-a |
      | zone-c | zone-a | zone-b |

  @long @gardener @druid
  Scenario: etcd-druid down through a zone outage: the etcds serve from two zones without it, and it reports them ready once back
    etcd-druid makes the etcds' StatefulSets and reports their status; keeping the StatefulSets'
    pods is the seed's own controllers' work. With druid gone, the lost zone's members are made
    again and wait Pending for their volumes as with druid, the shoot API serves from the other two
    zones, and druid's status stays as it last wrote it, which says nothing once it is 45 s old.
    Back, druid reconciles what it finds and, once the zone is back too, reports both etcds ready.

    Given the reference control plane with failure tolerance "zone" in the gardener form runs for real, its etcds made by etcd-druid
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    When etcd-druid goes down
    And zone "zone-a" goes down
    Then within 20 s the nodes of zone "zone-a" are NotReady and tainted unreachable
    And etcd-main keeps quorum with 2 members
    And the shoot API is writable again within 5 s of the outage
    And within 60 s the pods of the shoot control plane are
      | component      | zone   | phase   |
      | etcd-main      | zone-b | Running |
      | etcd-main      | zone-c | Running |
      | etcd-main      | -      | Pending |
      | etcd-events    | zone-b | Running |
      | etcd-events    | zone-c | Running |
      | etcd-events    | -      | Pending |
      | kube-apiserver | zone-b | Running |
      | kube-apiserver | zone-c | Running |
      | kube-apiserver | -      | Pending |
    And the longest write gap during the outage is under 5 s
    When etcd-druid comes back
    And zone "zone-a" comes back
    Then within 60 s every pod of the shoot control plane is Running
    And within 120 s etcd-druid reports etcd-main ready with every member ready
    And within 120 s etcd-druid reports etcd-events ready with every member ready
    And etcd-main has one member in each of 3 zones
    And etcd-main members end with equal HashKV
    And no acknowledged write is lost
    And no acknowledged shoot API write is lost

  @long @gardener
  Scenario: gardener-resource-manager down through a zone outage: the control plane serves from two zones, and the lost replicas come back only with it
    Gardener registers gardener-resource-manager's webhooks with failurePolicy Fail, one of them
    (pod-kube-apiserver-load-balancing) for every pod of a shoot namespace: while it is down, the
    seed's API server refuses every new pod of the control plane, so the replicas of the lost zone
    are not replaced (not even 10 s later: a controller makes a replacement within a second when
    it may). etcd-main keeps quorum and the shoot API serves from the other two zones; once
    gardener-resource-manager serves again, the replacements are made and placed as in the
    gardener form's outage.

    Given the reference control plane with failure tolerance "zone" in the gardener form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    When gardener-resource-manager goes down
    And zone "zone-a" goes down
    Then within 20 s the nodes of zone "zone-a" are NotReady and tainted unreachable
    And etcd-main keeps quorum with 2 members
    And the shoot API is writable again within 5 s of the outage
    And within 60 s the pods of the shoot control plane are
      | component      | zone   | phase   |
      | etcd-main      | zone-b | Running |
      | etcd-main      | zone-c | Running |
      | etcd-events    | zone-b | Running |
      | etcd-events    | zone-c | Running |
      | kube-apiserver | zone-b | Running |
      | kube-apiserver | zone-c | Running |
    And the longest write gap during the outage is under 5 s
    When 10 s pass
    Then the pods of the shoot control plane are
      | component      | zone   | phase   |
      | etcd-main      | zone-b | Running |
      | etcd-main      | zone-c | Running |
      | etcd-events    | zone-b | Running |
      | etcd-events    | zone-c | Running |
      | kube-apiserver | zone-b | Running |
      | kube-apiserver | zone-c | Running |
    When gardener-resource-manager comes back
    Then within 60 s the pods of the shoot control plane are
      | component      | zone   | phase   |
      | etcd-main      | zone-b | Running |
      | etcd-main      | zone-c | Running |
      | etcd-main      | -      | Pending |
      | etcd-events    | zone-b | Running |
      | etcd-events    | zone-c | Running |
      | etcd-events    | -      | Pending |
      | kube-apiserver | zone-b | Running |
      | kube-apiserver | zone-c | Running |
      | kube-apiserver | -      | Pending |
    When zone "zone-a" comes back
    Then within 60 s every pod of the shoot control plane is Running
    And etcd-main has one member in each of 3 zones
    And kube-apiserver has one replica in each of 3 zones
    And etcd-main members end with equal HashKV
    And no acknowledged write is lost
    And no acknowledged shoot API write is lost

  Scenario: A node failure moves its etcd member to the other node of its zone (GEP-20 case #2)
    GEP-20 "Impact of Node failure": the scheduler looks for another node in the same zone, as
    the member's volume keeps it there; the member comes back from its data on that node.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When the node of the etcd-main member in zone "zone-b" fails
    Then within 60 s no etcd-main member runs on the failed node
    And within 60 s the pods of the shoot control plane are
      | component   | zone   | phase   |
      | etcd-main   | zone-a | Running |
      | etcd-main   | zone-b | Running |
      | etcd-main   | zone-c | Running |
      | etcd-events | zone-a | Running |
      | etcd-events | zone-b | Running |
      | etcd-events | zone-c | Running |
    And etcd-main members end with equal HashKV
    And no acknowledged write is lost
