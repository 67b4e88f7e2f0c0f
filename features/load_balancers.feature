@kep3458
Feature: A Service's cloud load balancer keeps its nodes through a zone outage (KEP-3458)
  KEP-3458 ("remove transient node predicates from KCCM's service controller") says a node that
  goes NotReady stays in the node set of every Service of type LoadBalancer: removing it would cut
  every connection through it at once and flood the cloud API with updates. Only a node labelled
  node.kubernetes.io/exclude-from-external-load-balancers, or deleted, leaves the set. A zone
  outage makes every node of a zone NotReady at once, exactly that case.

  The controller is the real one: k8s.io/cloud-provider-aws's cloud controller manager, built from
  its pinned module, against the region's local cloud (moto's classic ELB API). The node set is read
  from the cloud API every 0.5 s, the controller's calls from the cloud's request log.

  Scenario: A zone outage: the load balancer keeps the zone's NotReady nodes, and the controller changes nothing
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    And 12 connections are held through the load balancer of service "web"
    When zone "zone-a" goes down
    Then within 20 s the nodes of zone "zone-a" are NotReady and tainted unreachable
    And within 20 s the health checks of the load balancer of service "web" take the nodes of zone "zone-a" out of service
    When 10 s pass
    Then the load balancer of service "web" keeps all 6 nodes during the outage
    And the controller makes no load balancer update during the outage
    And no established connection through zone "zone-b" is reset or stalls for more than 2 s
    And no established connection through zone "zone-c" is reset or stalls for more than 2 s
    And no connection through zone "zone-a" is closed by the load balancer during the outage

  Scenario: A node labelled for exclusion from external load balancers leaves the load balancer
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When node "zone-a-1" is labelled for exclusion from external load balancers
    Then within 30 s node "zone-a-1" leaves the load balancer of service "web"

  @long
  Scenario: A deleted node leaves the load balancer
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When node "zone-c-2" is deleted
    Then within 30 s node "zone-c-2" leaves the load balancer of service "web"

  @long
  Scenario: Before KEP-3458 the same outage takes the zone's nodes out of the load balancer and cuts their connections
    cloud-provider-aws v1.25.0, the last release before the KEP, takes a NotReady node out of every
    load balancer: the churn the KEP ends, told apart from it on the same outage.

    Given the cloud controller manager of cloud-provider-aws v1.25.0, from before KEP-3458, keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    And 12 connections are held through the load balancer of service "web"
    When zone "zone-a" goes down
    Then within 30 s the nodes of zone "zone-a" leave the load balancer of service "web"
    And the controller makes 1 or more load balancer updates during the outage
    And within 30 s every connection through zone "zone-a" is closed by the load balancer
    And no established connection through zone "zone-b" is reset or stalls for more than 2 s
    And no established connection through zone "zone-c" is reset or stalls for more than 2 s
