@placement
Feature: The real scheduler places the reference HA control plane
  The reference control plane of GEP-20 and the HA conventions (etcd-main, etcd-events,
  kube-apiserver, gardener-resource-manager, their budgets and the etcd peer policy) is
  applied to the seed through the Kubernetes API, and the real kube-scheduler places every
  replica on the seed's nodes; kwok runs the pods. Unless a scenario asks for a fresh seed,
  the seed has 3 zones of 2 nodes. The gep20 form uses GEP-20's affinity rules, the
  conventions form the topology spread constraints of the HA conventions.

  Scenario Outline: Failure tolerance zone spreads every component over three zones (<form> form)
    Given the reference control plane with failure tolerance "zone" in the <form> form
    Then etcd-main has one member in each of 3 zones
    And etcd-events has one member in each of 3 zones
    And kube-apiserver has one replica in each of 3 zones
    And gardener-resource-manager replicas span <grm zones> zones with max skew 1
    And no two kube-apiserver replicas share a node
    And every pod of the shoot control plane is Running
    And the PodDisruptionBudget of etcd-main allows 1 disruption

    Examples:
      | form        | grm zones |
      | gep20       | 3         |
      | conventions | 2         |

  Scenario Outline: Failure tolerance node keeps one zone with one etcd member per node (<form> form)
    Given a fresh seed with 3 nodes per zone
    And the reference control plane with failure tolerance "node" in the <form> form
    Then all etcd-main members run in one zone on 3 different nodes
    And all etcd-events members run in one zone on 3 different nodes
    And all kube-apiserver replicas run in one zone on <apiservers> different nodes
    And every pod of the shoot control plane is Running

    Examples:
      | form        | apiservers |
      | gep20       | 3          |

    @long
    Examples:
      | form        | apiservers |
      | conventions | 2          |

  Scenario Outline: Two nodes in the zone cannot hold a three-member etcd (<form> form)
    GEP-20: with fewer nodes than etcd members in the zone, "some etcd pods will be stuck
    in Pending state": the rules allow one member per node.

    Given the reference control plane with failure tolerance "node" in the <form> form
    Then 1 etcd-main pod stays Pending because "<reason>"
    And 1 etcd-events pod stays Pending because "<reason>"
    And the PodDisruptionBudget of etcd-main allows 0 disruptions

    Examples:
      | form        | reason                                       |
      | gep20       | didn't match pod anti-affinity rules         |
      | conventions | didn't match pod topology spread constraints |

  Scenario: Without failure tolerance everything runs in one zone (gep20 form)
    Given the reference control plane with failure tolerance "none" in the gep20 form
    Then the pods of the shoot control plane are
      | component                 | zone   | phase   |
      | etcd-main                 | zone-a | Running |
      | etcd-events               | zone-a | Running |
      | kube-apiserver            | zone-a | Running |
      | gardener-resource-manager | zone-a | Running |

  Scenario: Without failure tolerance servers still run two replicas (conventions form)
    Given the reference control plane with failure tolerance "none" in the conventions form
    Then the pods of the shoot control plane are
      | component                 | zone   | phase   |
      | etcd-main                 | zone-a | Running |
      | etcd-events               | zone-a | Running |
      | kube-apiserver            | zone-a | Running |
      | kube-apiserver            | zone-a | Running |
      | gardener-resource-manager | zone-a | Running |
      | gardener-resource-manager | zone-a | Running |

  @gep20_findings @long
  Scenario: Five etcd members over five zones, each budget letting two go
    GEP-20's future enhancement: "for a 3 member etcd cluster, fault tolerance is 1 and for a 5
    member etcd cluster, fault tolerance is 2", and the members that may be evicted at a time
    follow it. The other components' budgets still let one replica go.

    Given a fresh seed with 2 nodes in each of 5 zones
    And the reference control plane with failure tolerance "zone" in the gep20 form, its etcd clusters of 5 members
    Then etcd-main has one member in each of 5 zones
    And etcd-events has one member in each of 5 zones
    And the PodDisruptionBudget of etcd-main allows 2 disruptions
    And the PodDisruptionBudget of kube-apiserver allows 1 disruption

  @gep20_findings @long
  Scenario: GEP-20's two-zone cluster in the gep20 form: the third etcd member has no zone left
    GEP-20 argues against spreading over two zones: "1 zone will get 2 replicas (spread across
    different nodes within that zone) and another zone will get 1". Its own rules place the
    three gardener-resource-manager replicas so (zone anti-affinity is preferred, the hostname
    one required) and kube-apiserver's one per zone; etcd's zone anti-affinity is required, so
    the 2 + 1 etcd its argument starts from never forms: the third member stays Pending.

    Given a fresh seed with 2 nodes in each of 2 zones
    And the reference control plane with failure tolerance "zone" in the gep20 form, on two zones against GEP-20's advice
    Then gardener-resource-manager replicas span 2 zones with max skew 1
    And kube-apiserver has one replica in each of 2 zones
    And no two gardener-resource-manager replicas share a node
    And 1 etcd-main pod stays Pending because "didn't match pod anti-affinity rules"
    And 1 etcd-events pod stays Pending because "didn't match pod anti-affinity rules"

  @gep20_findings @long
  Scenario: GEP-20's two-zone cluster in the conventions form: etcd dealt 2 + 1
    The conventions' zone constraint (max skew 1) lets two members share a zone, so each etcd
    is the 2 + 1 of GEP-20's argument (the two-zone scenarios of features/quorum.feature take each
    zone of such an etcd down on a region).

    Given a fresh seed with 2 nodes in each of 2 zones
    And the reference control plane with failure tolerance "zone" in the conventions form, on two zones against GEP-20's advice
    Then etcd-main replicas span 2 zones with max skew 1
    And etcd-events replicas span 2 zones with max skew 1
    And no two etcd-main members share a node
    And every pod of the shoot control plane is Running

  Scenario: A drained zone keeps its etcd members Pending on their zonal volumes
    Evictions go through the PodDisruptionBudgets one member at a time; the stateless
    replicas move to the other zones, the members stay bound to the volumes in zone-a.

    Given the reference control plane with failure tolerance "zone" in the gep20 form
    When node "zone-a-1" is drained
    And node "zone-a-2" is drained
    Then within 30 s all 3 kube-apiserver replicas are Running outside zone "zone-a"
    And within 30 s all 3 gardener-resource-manager replicas are Running outside zone "zone-a"
    And within 30 s the pods of the shoot control plane are
      | component   | zone   | phase   |
      | etcd-main   | zone-b | Running |
      | etcd-main   | zone-c | Running |
      | etcd-main   | -      | Pending |
      | etcd-events | zone-b | Running |
      | etcd-events | zone-c | Running |
      | etcd-events | -      | Pending |

  Scenario: Members on separate hosts (seed 004)
    Given a fresh seed with 3 nodes per zone on 3 hosts per zone
    And the reference control plane with failure tolerance "node" in the gep20 form
    Then no two etcd-main members share a host

  @long
  Scenario: One host down takes two members of a single-zone etcd with it (seed 004)
    Anti-affinity on hostnames spreads members over nodes, not over the hosts the nodes
    run on: with two hosts under three nodes, one host holds two members.

    Given a fresh seed with 3 nodes per zone on 2 hosts per zone
    And the reference control plane with failure tolerance "node" in the gep20 form
    Then all etcd-main members run in one zone on 3 different nodes
    And the busiest host holds 2 etcd-main members
    When host "zone-a-h1" goes down
    Then within 20 s every node of host "zone-a-h1" is NotReady
    And within 20 s 2 etcd-main members are not Ready
