@aws
Feature: False statements about GEP-20's machines, judged with machine-controller-manager running
  The last step of each scenario is false about the run before it; the "Fails with:" line is
  what its failure must say.

  @short
  Scenario: Every machine outside zone-b Running while zone-a's node is down
    Fails with: machines outside zone-b not Running
    Given a fresh seed with 1 nodes in each of 3 zones
    And the region's cloud: a VPC with a subnet per zone and an instance per node
    And the seed's nodes are machines of machine-controller-manager, declared failed after 600 s unhealthy
    When node "zone-a-1" fails
    Then within 30 s the machines of zone "zone-a"'s nodes are Unknown
    And the machines of every zone but "zone-b" are Running

  Scenario: Zone-b's machines go Unknown when zone-a's node fails
    Fails with: every machine of zone-b's nodes Unknown: expected within 20.000s
    Given a fresh seed with 1 nodes in each of 3 zones
    And the region's cloud: a VPC with a subnet per zone and an instance per node
    And the seed's nodes are machines of machine-controller-manager, declared failed after 600 s unhealthy
    When node "zone-a-1" fails
    Then within 20 s the machines of zone "zone-b"'s nodes are Unknown

  Scenario: A new machine appears in zone-a without a scale-up
    Fails with: a new machine of zone-a Pending: expected within 5.000s
    Given a fresh seed with 1 nodes in each of 3 zones
    And the region's cloud: a VPC with a subnet per zone and an instance per node
    And the seed's nodes are machines of machine-controller-manager, declared failed after 600 s unhealthy
    When node "zone-a-1" fails
    Then within 30 s the machines of zone "zone-a"'s nodes are Unknown
    And within 5 s a new machine of zone "zone-a" is Pending
