@aws
Feature: False statements about AWS faults, judged through the local cloud's API
  The last step of each scenario is false about the run before it; the "Fails with:" line is
  what its failure must say.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones
    And the region's cloud: a VPC with a subnet per zone and an instance per node

  @short
  Scenario: Machines can be neither created nor deleted when only the zone's network ACL changed
    Fails with: every create and delete in zone-a refused since the revocation
    Given a machine probe creates and deletes a machine in zone "zone-a" every 1 s
    When zone-a's subnets get a network ACL denying the other zones
    And the outage lasts 3 s
    Then machines can be neither created nor deleted in zone "zone-a"

  Scenario: Machines come back with the network ACLs while the credentials stay revoked
    Fails with: a machine created and one deleted in zone-a within 5 s of the restore
    Given a machine probe creates and deletes a machine in zone "zone-a" every 1 s
    When zone-a's subnets get a deny-all network ACL and the machine credentials are revoked
    And the outage lasts 2 s
    And the network ACLs are restored
    Then machines can be created and deleted in zone "zone-a" again within 5 s
