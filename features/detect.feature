@outage @grey @detect
Feature: Time to detect: when the control plane's own detectors see a fault
  Every part of an HA control plane acts on a detector: kubelets on etcd's /health, the leader
  on its peer streams, the load balancer on each kube-apiserver's /readyz, the node lifecycle
  controller on node heartbeats. The harness reads each detector every 100 ms from where it
  stands (etcd's /health from the member's own zone, as a kubelet's probe) and takes the time
  from the fault's effect to its first "failing" verdict, beside the time the clients first saw
  a request fail. The report lists every detector of a scenario; these steps bound the ones
  that act.

  Scenario: A zone outage as etcd's detectors see it
    The cut-off leader steps down once its election timeout passes without a majority
    answering (check-quorum): it has no leader any more, and its /health fails with it. The
    members left go on counting their peer stream to it as active (etcd_network_active_peers):
    a blackhole breaks no TCP connection, so that detector stays silent (the report shows it).

    Given a healthy region with 3 etcd members spread over 3 zones
    And the etcd leader is in zone "zone-a"
    And write and read probes run every 10 ms from a client in zone "zone-b"
    And etcd's detectors are watched
    When zone "zone-a" goes down for 8 s
    Then detector "etcd-leader" sees zone "zone-a" fail within 3 s of the outage's effect
    And detector "etcd-health" sees zone "zone-a" fail within 4 s of the outage's effect

  Scenario: Large packets dropped between zones: the members report healthy, writes fail (Kubernetes #72796)
    A path that drops every packet above 1,200 bytes carries the leader's heartbeats and
    etcd's health checks (small), but none of the appends of a 16 KiB value: no write is
    committed while every /health stays green. Only the clients and the harness see it.

    Given a healthy region with 3 etcd members spread over 3 zones
    And the etcd leader is in zone "zone-a"
    And write probes of 16 KiB values and read probes run every 20 ms from a client in zone "zone-a"
    And etcd's detectors are watched
    When these faults are applied together
      | fault         | target    | larger_than |
      | zone-link-mtu | zone-a>*  | 1200        |
    Then no write is acknowledged for 5 s while every member's /health says healthy

  @long
  Scenario: A zone outage as the shoot control plane's detectors see it
    HAProxy checks each kube-apiserver's /readyz every 500 ms and marks it down after two
    failed checks; the node lifecycle controller marks a node NotReady 8 s after its last
    heartbeat (the seed's timings, harness/kube/timings.py).

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    And the shoot control plane's detectors are watched
    When zone "zone-a" goes down
    Then detector "load-balancer" sees zone "zone-a" fail within 3 s of the outage's effect
    And detector "node-ready" sees zone "zone-a" fail within 12 s of the outage's effect

  @long
  Scenario: A one-way partition of a zone as the shoot control plane's detectors see it
    Zone-a can no longer send to the other zones; it still hears them, and the seed still hears
    its nodes. The load balancer, outside every zone, still reaches zone-a's kube-apiserver.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    And the shoot control plane's detectors are watched
    When these faults are applied together
      | fault         | target   |
      | zone-link-cut | zone-a>* |
    Then detector "etcd-health" sees zone "zone-a" fail within 5 s of the outage's effect

  @long
  Scenario: Zone-a's path to etcd loses 30 % of its packets: the load balancer keeps its kube-apiserver
    Only etcd's client traffic between zone-a and the other zones is lossy (port 2379, both
    ways): zone-a's kube-apiserver reaches the members outside its zone through it, and waits on
    retransmissions. Its /readyz flickers, but HAProxy needs two failed checks in a row and keeps
    it; a third of the shoot API's requests go on to it (measured: 4 of 60 writes timed out at
    1 s, a tenth took over 0.5 s, against 11 ms as the median).

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    And the shoot control plane's detectors are watched
    When these faults are applied together
      | fault          | target    | loss_percent | port   |
      | zone-link-loss | zone-a<>* | 30           | client |
    And 20 s pass
    Then the 99th percentile of shoot API write latency during the outage is at least 500 ms
    And detector "load-balancer" never sees zone "zone-a" fail during the outage
    When the links come back
    Then the shoot API is writable again within 5 s of the outage
    And no acknowledged shoot API write is lost

  @gep20_findings
  Scenario: GEP-20's zone outage identified from the seed's nodes alone
    GEP-20 "Identify a Zone outage": every node of the zone NotReady or Unknown and tainted
    node.kubernetes.io/unreachable, "observed for an extended period of time (beyond a threshold
    that could be defined)". The seed's nodes turn NotReady 8 s after their last heartbeat; the
    threshold here is 10 s. The other zones' nodes stay Ready.

    Given the seed's zones are watched for an outage
    When zone "zone-a" goes down
    Then GEP-20's zone outage of zone "zone-a" is declared within 25 s of the outage's effect, its state seen for 10 s
    And detector "zone-outage" never sees zone "zone-b" fail during the outage

  @gep20_findings @long
  Scenario: One failed node of a zone is no zone outage
    Its node turns NotReady and is tainted unreachable; the zone's other node goes on reporting.

    Given the seed's zones are watched for an outage
    When node "zone-a-1" fails
    And 25 s pass
    Then detector "zone-outage" never sees zone "zone-a" fail during the outage
