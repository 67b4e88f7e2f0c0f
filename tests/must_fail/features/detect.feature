@outage
Feature: False statements about when detectors see a fault, judged on real runs
  Every scenario ends in one Then-step that states something false about what just happened;
  every step before it holds. The line after each Scenario says the message its failure must
  carry.

  Background:
    Given a healthy region with 3 etcd members spread over 3 zones
    And the etcd leader is in zone "zone-a"

  @short
  Scenario: A follower's zone goes down, and a surviving member's /health is said to see it
    Fails with: etcd-health etcd-1 said failing within 3 s of the outage's effect
    Given write and read probes run every 10 ms from a client in zone "zone-b"
    And etcd's detectors are watched
    When zone "zone-c" goes down for 4 s
    Then detector "etcd-health" sees zone "zone-b" fail within 3 s of the outage's effect

  Scenario: The clients in a lost zone fail, and a surviving member's /health is said to follow
    Fails with: etcd-health etcd-1 said failing within 3 s of the first failed etcd write
    Given write and read probes run every 10 ms from a client in zone "zone-c"
    And etcd's detectors are watched
    When zone "zone-c" goes down for 4 s
    Then detector "etcd-health" sees zone "zone-b" fail within 3 s of the first failed etcd write

  Scenario: The leader's zone goes down, and every /health is said to stay green while writes fail
    Fails with: etcd-health etcd-0 saying healthy from the outage
    Given write and read probes run every 10 ms from a client in zone "zone-a"
    And etcd's detectors are watched
    When zone "zone-a" goes down for 4 s
    Then no write is acknowledged for 2 s while every member's /health says healthy

  Scenario: One failed node of a zone is declared a zone outage
    Fails with: the zone outage of zone-a declared within 25 s of the outage's effect
    Given the seed's zones are watched for an outage
    When node "zone-a-1" fails
    Then GEP-20's zone outage of zone "zone-a" is declared within 25 s of the outage's effect, its state seen for 5 s
