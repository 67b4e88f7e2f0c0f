@outage @node_failure
Feature: A node with an etcd member fails and comes back
  A node failure takes its etcd member with it: its processes are killed (and start
  again from their data when the node returns), frozen, or its network link drops.

  Scenario Outline: The member rejoins and no acknowledged write is lost
    Given a healthy region with 3 etcd members spread over 3 zones
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When node "zone-b-1" <failure> for 2 s
    And node "zone-b-1" comes back
    Then member "etcd-1" catches up within 10 s
    And no acknowledged write is lost
    And all members end with equal HashKV

    Examples:
      | failure        |
      | is killed      |
      | freezes        |
      | loses its link |
