@aws @gep20_findings
Feature: GEP-20's machines during a zone outage, kept by machine-controller-manager
  GEP-20's tables during a zone outage list the zone's machines Unknown and Terminating and the
  new ones CrashLoopBackOff or Pending with no node: machine-controller-manager declares a machine
  whose node stopped reporting failed, replaces it, and cannot delete the old instance or make a
  new one while the zone's network and the machine credentials are gone. Here the seed's own nodes
  are Machines of gardener's machine-controller-manager (real; its machine controller calls the
  local cloud's EC2 API with the machine controller's credentials), on a seed of the scenario's
  own: once its credentials work again MCM terminates the instances it gave up on.

  @long
  Scenario: A deny-all ACL and revoked credentials leave the zone's machines Unknown, then Terminating, new ones CrashLoopBackOff
    The machines are declared failed after 10 s unhealthy (Gardener's default is 10 min). MCM
    looks again at an unhealthy machine once a minute, so it is declared failed a minute after
    it went Unknown, whatever shorter timeout it was given; its instance cannot be terminated
    without credentials, so it stays Terminating. A MachineSet counts a Terminating machine, so
    it makes no replacement: new machines come from a scale-up, the cluster autoscaler's answer
    to the pods Pending for a node, and cannot be created either.

    Given a fresh seed with 1 nodes in each of 3 zones
    And the region's cloud: a VPC with a subnet per zone and an instance per node
    And the seed's nodes are machines of machine-controller-manager, declared failed after 10 s unhealthy
    When zone-a's subnets get a deny-all network ACL and the machine credentials are revoked
    Then within 40 s the machines of zone "zone-a"'s nodes are Unknown
    And within 90 s the machines of zone "zone-a"'s nodes are Terminating
    When zone "zone-a" is asked for 1 more machine, as the cluster autoscaler does for Pending pods
    Then within 30 s a new machine of zone "zone-a" is CrashLoopBackOff
    And the machines of every zone but "zone-a" are Running

  @long
  Scenario: A deny-all ACL alone leaves the zone's new machine Pending with no node
    With its credentials working, MCM terminates the instance of the machine it declared failed,
    and its MachineSet makes a new machine in its place: the new instance runs, but its node cannot
    join through the zone's ACL. At teardown the node gets a new instance and its Node object again.

    Given a fresh seed with 1 nodes in each of 3 zones
    And the region's cloud: a VPC with a subnet per zone and an instance per node
    And the seed's nodes are machines of machine-controller-manager, declared failed after 10 s unhealthy
    When zone-a's subnets get a deny-all network ACL
    Then within 40 s the machines of zone "zone-a"'s nodes are Unknown
    And within 150 s a new machine of zone "zone-a" is Pending
    And the machines of every zone but "zone-a" are Running

  @long
  Scenario: A failed node's machine goes Unknown while the other zones' stay Running
    Given a fresh seed with 1 nodes in each of 3 zones
    And the region's cloud: a VPC with a subnet per zone and an instance per node
    And the seed's nodes are machines of machine-controller-manager, declared failed after 600 s unhealthy
    When node "zone-a-1" fails
    Then within 30 s the machines of zone "zone-a"'s nodes are Unknown
    And the machines of every zone but "zone-a" are Running
