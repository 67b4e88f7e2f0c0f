@outage @zone_outage @quorum
Feature: Quorum is lost with two zones and regained with one
  With one member per zone, two zones down leave one member of three: no quorum.
  Linearizable writes must fail rather than be acknowledged by a minority;
  the survivor keeps serving serializable (possibly stale) reads.

  Scenario: Losing two zones loses quorum until one returns
    Given a healthy region with 3 etcd members spread over 3 zones
    And write and read probes run every 10 ms from a client in zone "zone-c"
    When zones "zone-a" and "zone-b" go down for 3 s
    Then linearizable writes fail during the outage
    And serializable reads from the member in zone "zone-c" are still served
    When zone "zone-a" comes back
    Then writes resume within 5 s of its return

  Scenario: Five members over three zones survive the loss of a two-member zone
    Given a fresh region with 5 etcd members in the multi-zone layout
    And write and read probes run every 10 ms from a client in zone "zone-c"
    When zone "zone-a" goes down for 3 s
    Then a leader exists in a surviving zone
    And writes resume within 3 election timeouts of the outage

  Scenario: All members in one zone survive a node but not the zone
    Given a fresh region with 3 etcd members in the single-zone layout
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When zone "zone-a" goes down for 2 s
    Then linearizable writes fail during the outage
    When zone "zone-a" comes back
    Then writes resume within 5 s of its return

  @gep20_findings @long
  Scenario: Five members over five zones keep quorum through the loss of two zones
    GEP-20's future enhancement: five members tolerate two failures, so two zones of five may go
    at once (three of three zones could not). Whichever zones held the leader, the three left
    elect one and take writes.

    Given a fresh region with 5 etcd members spread over 5 zones
    And write and read probes run every 10 ms from a client in zone "zone-e"
    When zones "zone-a" and "zone-b" go down for 4 s
    Then a leader exists in a surviving zone
    And writes resume within 3 s of the outage

  @gep20_findings
  Scenario: Three members over two zones: the zone holding two takes the quorum with it
    GEP-20's "two zone cluster": with two members in AZ-1 and one in AZ-2, "if AZ-1 goes down
    then, quorum is lost and the only remaining etcd member enters into a read-only state".

    Given a fresh region with 3 etcd members spread over 2 zones
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When zone "zone-a" goes down for 3 s
    Then linearizable writes fail during the outage
    And serializable reads from the member in zone "zone-b" are still served

  @gep20_findings @long
  Scenario: Three members over two zones: the zone holding one, and the leader, leaves a quorum
    GEP-20: "if AZ-2 goes down ... if the leader is in AZ-2, then it will force a re-election and
    the quorum will be restored with 2 etcd members in AZ-1".

    Given a fresh region with 3 etcd members spread over 2 zones
    And the etcd leader is in zone "zone-b"
    And write and read probes run every 10 ms from a client in zone "zone-a"
    When zone "zone-b" goes down for 3 s
    Then a new leader is elected in a surviving zone within 3 election timeouts
    And writes resume within 3 s of the outage
