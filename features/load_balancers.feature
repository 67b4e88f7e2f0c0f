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
    When zone "zone-a" goes down
    Then within 20 s the nodes of zone "zone-a" are NotReady and tainted unreachable
    When 10 s pass
    Then the load balancer of service "web" keeps all 6 nodes during the outage
    And the controller makes no load balancer update during the outage

  Scenario: A node labelled for exclusion from external load balancers leaves the load balancer
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When node "zone-a-1" is labelled for exclusion from external load balancers
    Then within 30 s node "zone-a-1" leaves the load balancer of service "web"
