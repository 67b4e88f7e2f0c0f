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

  Scenario: Connections through a zone are said to survive while one of its nodes was labelled out
    Deregistering zone-b-1 closes the sessions through it at once, as an ELB without connection
    draining does: the cut KEP-3458 spares NotReady nodes.
    Fails with: connections through zone zone-b reset, closed or silent for more than 2 s
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    And 12 connections are held through the load balancer of service "web"
    When zone "zone-a" goes down
    And node "zone-b-1" is labelled for exclusion from external load balancers
    And 5 s pass
    Then no established connection through zone "zone-b" is reset or stalls for more than 2 s

  Scenario: Connections through the zone that went down are said to keep answering
    Fails with: connections through zone zone-a reset, closed or silent for more than 2 s
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    And 12 connections are held through the load balancer of service "web"
    When zone "zone-a" goes down
    And 5 s pass
    Then no established connection through zone "zone-a" is reset or stalls for more than 2 s

  Scenario: The health checks are said to take the nodes of a zone that stayed up out of service
    Fails with: time until exactly the nodes of zone-b were out of service
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When zone "zone-a" goes down
    Then within 15 s the health checks of the load balancer of service "web" take the nodes of zone "zone-b" out of service

  Scenario: The current controller is said to take the zone's NotReady nodes out of the load balancer
    Fails with: time until the nodes of zone-a left web's load balancer
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When zone "zone-a" goes down
    Then within 20 s the nodes of zone "zone-a" leave the load balancer of service "web"

  Scenario: The current controller is said to update the load balancer during the outage
    Fails with: 1 or more load balancer update calls by the cloud controller manager during the outage
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    When zone "zone-a" goes down
    And 15 s pass
    Then the controller makes 1 or more load balancer updates during the outage

  Scenario: The connections through the zone that went down are said to be closed by the load balancer
    With KEP-3458 they go silent instead: their nodes stay in the set.
    Fails with: time until every connection through zone zone-a was closed
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    And 12 connections are held through the load balancer of service "web"
    When zone "zone-a" goes down
    Then within 20 s every connection through zone "zone-a" is closed by the load balancer

  Scenario: No connection through a zone is said to be closed while one of its nodes was labelled out
    Fails with: connections through zone zone-b ended during the outage
    Given the cloud controller manager keeps the load balancers of the seed's services
    And a service "web" of type LoadBalancer
    And 12 connections are held through the load balancer of service "web"
    When zone "zone-a" goes down
    And node "zone-b-1" is labelled for exclusion from external load balancers
    And 5 s pass
    Then no connection through zone "zone-b" is closed by the load balancer during the outage
