@placement
Feature: False statements about where the real scheduler put the reference control plane
  The last step of each scenario is false about the placement before it; the "Fails with:"
  line is what its failure must say. The seed has 3 zones of 2 nodes unless a scenario asks
  for another.

  Scenario: A single-zone etcd has a member in each of 3 zones
    Fails with: etcd-main pods per zone
    Given the reference control plane with failure tolerance "node" in the gep20 form
    Then etcd-main has one member in each of 3 zones

  Scenario: Single-zone API servers span 3 zones
    Fails with: zones holding kube-apiserver replicas
    Given the reference control plane with failure tolerance "node" in the gep20 form
    Then kube-apiserver replicas span 3 zones with max skew 1

  Scenario: Three members on three nodes of two hosts share no host (seed 004)
    Fails with: hosts with more than one etcd-main member
    Given a fresh seed with 3 nodes per zone on 2 hosts per zone
    And the reference control plane with failure tolerance "node" in the gep20 form
    Then no two etcd-main members share a host

  Scenario: The busiest of two hosts holds one member of three (seed 004)
    Fails with: most etcd-main members on one host
    Given a fresh seed with 3 nodes per zone on 2 hosts per zone
    And the reference control plane with failure tolerance "node" in the gep20 form
    Then the busiest host holds 1 etcd-main members

  Scenario: A zone-spread etcd runs in one zone
    Fails with: zones holding etcd-main members
    Given the reference control plane with failure tolerance "zone" in the gep20 form
    Then all etcd-main members run in one zone on 3 different nodes

  Scenario: A zone-spread etcd leaves a member Pending
    Fails with: Pending etcd-main pods
    Given the reference control plane with failure tolerance "zone" in the gep20 form
    Then 1 etcd-main pod stays Pending because "didn't match pod anti-affinity rules"

  Scenario: Two members stay Pending when two nodes hold three
    Fails with: Pending etcd-main pods
    Given the reference control plane with failure tolerance "node" in the gep20 form
    Then 2 etcd-main pods stay Pending because "didn't match pod anti-affinity rules"

  Scenario: Every pod runs when two nodes must hold three members
    Fails with: pods not Running
    Given the reference control plane with failure tolerance "node" in the gep20 form
    Then every pod of the shoot control plane is Running

  Scenario: The budget allows a disruption while a member is Pending
    Fails with: disruptions allowed by etcd-main's budget
    Given the reference control plane with failure tolerance "node" in the gep20 form
    Then the PodDisruptionBudget of etcd-main allows 1 disruption

  Scenario: The budget allows two disruptions of three members
    Fails with: disruptions allowed by etcd-main's budget
    Given the reference control plane with failure tolerance "zone" in the gep20 form
    Then the PodDisruptionBudget of etcd-main allows 2 disruptions

  @short
  Scenario: A control plane without failure tolerance runs in zone-b
    Fails with: pods by component, zone and phase
    Given the reference control plane with failure tolerance "none" in the gep20 form
    Then the pods of the shoot control plane are
      | component | zone   | phase   |
      | etcd-main | zone-b | Running |

  Scenario: Within 5 s a member is Pending although nothing happened
    Fails with: pods by component, zone and phase as expected: expected within 5.000s
    Given the reference control plane with failure tolerance "zone" in the gep20 form
    Then within 5 s the pods of the shoot control plane are
      | component | zone   | phase   |
      | etcd-main | zone-b | Running |
      | etcd-main | zone-c | Running |
      | etcd-main | -      | Pending |

  Scenario: A host's nodes turn NotReady although it never went down (seed 004)
    Fails with: every node of host zone-a-h1 NotReady: expected within 5.000s
    Given a fresh seed with 3 nodes per zone on 2 hosts per zone
    And the reference control plane with failure tolerance "node" in the gep20 form
    Then within 5 s every node of host "zone-a-h1" is NotReady

  Scenario: Two members turn not Ready although nothing happened
    Fails with: 2 etcd-main members not Ready: expected within 5.000s
    Given the reference control plane with failure tolerance "zone" in the gep20 form
    Then within 5 s 2 etcd-main members are not Ready

  Scenario: Every API server runs outside a zone nobody drained
    Fails with: 3 kube-apiserver replicas Running and ready outside zone-a: expected within 5.000s
    Given the reference control plane with failure tolerance "zone" in the gep20 form
    Then within 5 s all 3 kube-apiserver replicas are Running outside zone "zone-a"

  Scenario: The sixth replica of GEP-20's two constraints runs on zones of 3, 2 and 1 nodes
    Fails with: Running replicas of apiserver
    Given a fresh seed whose zones have 3, 2 and 1 nodes
    When a Deployment "apiserver" of 1 replica is spread by GEP-20's zone and hostname constraints
    And "apiserver" is scaled up one replica at a time to 6
    Then 6 replicas of "apiserver" are Running

  Scenario: A zone skew of 2 leaves the sixth replica Pending
    Fails with: Pending replicas of apiserver
    Given a fresh seed whose zones have 3, 2 and 1 nodes
    When a Deployment "apiserver" of 1 replica is spread by GEP-20's zone and hostname constraints with zone max skew 2
    And "apiserver" is scaled up one replica at a time to 6
    Then 1 replica of "apiserver" stays Pending because "didn't match pod topology spread constraints"

  Scenario: A zone skew of 2 keeps six replicas within a skew of 1 over zones
    Fails with: skew at most 1 over zones
    Given a fresh seed whose zones have 3, 2 and 1 nodes
    When a Deployment "apiserver" of 6 replicas is spread by GEP-20's zone and hostname constraints with zone max skew 2
    Then "apiserver" is within max skew 1 over zones and 1 over nodes

  Scenario: GEP-20's constraints put three replicas in one zone of three
    Fails with: zones holding etcd replicas
    When a Deployment "etcd" of 3 replicas is spread by GEP-20's zone and hostname constraints
    Then "etcd" runs in one zone on 3 different nodes

  Scenario: Constraints scoped to the revision leave a rollout skewed
    Fails with: a rollout of grm left its zones skewed by more than 1
    Given a fresh seed with 1 nodes per zone
    When a Deployment "grm" of 3 replicas is spread by GEP-20's zone and hostname constraints, each scoped to its revision
    And "grm" is rolled out again 3 times
    Then a rollout left "grm" skewed by more than 1 over zones

  Scenario: Constraints shared by the revisions keep every rollout spread
    Fails with: every rollout of grm left its zones within max skew 1
    Given a fresh seed with 1 nodes per zone
    When a Deployment "grm" of 3 replicas is spread by GEP-20's zone and hostname constraints
    And "grm" is rolled out again 3 times
    Then every rollout left "grm" within max skew 1 over zones
