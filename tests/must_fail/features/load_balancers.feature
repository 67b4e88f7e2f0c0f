@kep3458
Feature: False statements about a Service's cloud load balancer, judged on real runs
  Every scenario ends in one Then-step that states something false about what just happened;
  every step before it holds. The line after each Scenario says the message its failure must
  carry.

  @short
  Scenario: The load balancer is said to keep all its nodes while one was labelled out during the outage
    The exclusion label takes zone-b-1 out of the set within a second; the zone outage does not.
    Fails with: reads of web's load balancer without all 6 nodes
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When zone "zone-a" goes down
    And node "zone-b-1" is labelled for exclusion from external load balancers
    And 5 s pass
    Then the load balancer of service "web" keeps all 6 nodes during the outage

  Scenario: The controller is said to change no load balancer while it deregistered a node during the outage
    Fails with: load balancer update calls by the cloud controller manager during the outage
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When zone "zone-a" goes down
    And node "zone-b-1" is labelled for exclusion from external load balancers
    And 5 s pass
    Then the controller makes no load balancer update during the outage

  Scenario: A node that was not labelled is said to leave the load balancer
    Fails with: time until zone-a-1 left web's load balancer
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When node "zone-a-2" is labelled for exclusion from external load balancers
    Then within 3 s node "zone-a-1" leaves the load balancer of service "web"
