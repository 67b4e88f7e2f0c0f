@aws @outage
Feature: GEP-20's zone outage on AWS, through the AWS API
  GEP-20's authors took a zone out on AWS by giving every subnet of the zone an
  empty, deny-all network ACL and by revoking the machine controller's cloud
  credentials, so machines could be neither created nor deleted there. Here the
  same boto3 calls go to an AWS API (the local region's own cloud: a VPC with one
  subnet per zone and one instance per node), and what that API says is applied to
  the region: a subnet's network ACL becomes the router's rules for the zone, a
  stopped instance a dead node. Every change is healed from the ledger at the end
  of the scenario, or by the fault's watchdog if the harness dies.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones
    And the region's cloud: a VPC with a subnet per zone and an instance per node

  Scenario: A deny-all network ACL and revoked machine credentials take zone-a out, as in GEP-20
    Given write and read probes run every 10 ms from a client in zone "zone-b"
    And a machine probe creates and deletes a machine in zone "zone-a" every 1 s
    When zone-a's subnets get a deny-all network ACL and the machine credentials are revoked
    And the outage lasts 4 s
    Then a leader exists in a surviving zone
    And writes resume within 3 s of the outage
    And machines can be neither created nor deleted in zone "zone-a"
    When the network ACLs and the machine credentials are restored
    Then its member catches up within 10 s
    And machines can be created and deleted in zone "zone-a" again within 10 s
    And all members end with equal HashKV
    And no acknowledged write is lost

  Scenario: The availability-zone scope cuts zone-b off from the other zones only
    Given write and read probes run every 10 ms from a client in zone "zone-a"
    When zone-b's subnets get a network ACL denying the other zones
    And the outage lasts 4 s
    Then a leader exists in a surviving zone
    And writes resume within 3 s of the outage
    When the network ACLs are restored
    Then its member catches up within 10 s
    And all members end with equal HashKV

  Scenario: A stopped instance is a failed node, and its member rejoins when it runs again
    Given write and read probes run every 10 ms from a client in zone "zone-a"
    When the instance of node "zone-c-1" is stopped
    And the outage lasts 3 s
    Then writes resume within 3 s of the outage
    When the instance is started again
    Then member "etcd-2" catches up within 10 s
    And no acknowledged write is lost
    And all members end with equal HashKV

  @gep20 @long
  Scenario: GEP-20's table, with the zone taken out through the AWS API
    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    And a machine probe creates and deletes a machine in zone "zone-a" every 1 s
    When zone-a's subnets get a deny-all network ACL and the machine credentials are revoked
    Then within 20 s the nodes of zone "zone-a" are NotReady and tainted unreachable
    And etcd-main keeps quorum with 2 members
    And etcd-events keeps quorum with 2 members
    And the shoot API is writable again within 5 s of the outage
    And machines can be neither created nor deleted in zone "zone-a"
    And within 60 s all 3 kube-apiserver replicas are Running outside zone "zone-a"
    And within 60 s the pods of the shoot control plane are
      | component   | zone   | phase   |
      | etcd-main   | zone-b | Running |
      | etcd-main   | zone-c | Running |
      | etcd-main   | -      | Pending |
      | etcd-events | zone-b | Running |
      | etcd-events | zone-c | Running |
      | etcd-events | -      | Pending |
    When the network ACLs and the machine credentials are restored
    Then within 60 s every pod of the shoot control plane is Running
    And machines can be created and deleted in zone "zone-a" again within 10 s
    And etcd-main members end with equal HashKV
    And etcd-events members end with equal HashKV
    And no acknowledged write is lost
    And no acknowledged shoot API write is lost
