@gep20_findings
Feature: Voluntary disruptions of the shoot control plane under probes (GEP-20's budgets)
  GEP-20: "for a multi-replica etcd cluster ... there should not be any downtime introduced due
  to VPA scaling of etcd pods with a pod disruption budget (PDB)"; the budget "ensures that no
  more than one member is unavailable", "ensuring that the quorum is intact". The reference
  control plane runs for real on the local seed; its pods are evicted through the Eviction API,
  as a VPA updater or a drain asks for it.

  Scenario: Every etcd-main member evicted under write probes: the budget lets one go at a time
    Each pod's eviction is asked for again every 0.2 s until it is granted, the followers' first,
    so the budget alone decides how many members are away at once. A member is away while
    neither its status requests nor its /health answer: a member just restarted answered no
    status request within the probe's 0.25 s for 1.8 s while writes were committed with it in
    the quorum, and every member's /health said "leader changed" for 1.5 s while the leadership
    changed hands. The leader's own eviction moves the leadership once (etcd hands it over when
    it stops). Writes stopped for 1.9 s here, not when the leader's pod went but about 5 s
    later, when its replacement rejoined. The budget lets a member that is not Ready go only
    while it holds (the API's IfHealthyBudget): with seed 001's AlwaysAllow, a follower unready
    during an election was evicted while the leader's replacement did not serve yet.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    And each member's health is checked every 100 ms, as its readiness probe does
    When every etcd-main member is evicted, each as soon as its budget allows
    Then at most 1 etcd-main member is away at a time
    And the leadership moves at most 2 times
    And the longest write gap during the outage is under 3 s
    And no acknowledged write is lost

  @long
  Scenario: An eviction and a crash of another member at once lose etcd-main's quorum, as GEP-20 warns
    GEP-20: "It is possible that while an etcd member is being evicted ... another etcd member
    crashes. For a 3 member etcd cluster which allows a fault tolerance of 1, this will result in
    loss of quorum." The budget counts the evicted member but cannot refuse a crash: the node of
    another member fails as soon as the evicted pod has stopped. No write is acknowledged from
    the crash until the evicted member's replacement answers again (its return is the outage's
    end), 1.3-1.7 s here; writes come back within 0.4 s of it. The failed node's member moves to the
    other node of its zone.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When the etcd-main member in zone "zone-a" is evicted and the node of the member in zone "zone-c" fails while it is away
    Then no write is acknowledged while the evicted member and the crashed one are both away
    And writes resume within 1 s of its return
    And within 60 s no etcd-main member runs on the failed node
    And within 60 s every pod of the shoot control plane is Running
    And no acknowledged write is lost

  @long
  Scenario: A rolling update of kube-apiserver under the shoot API probe
    The Deployment's own strategy (a surge of one, none unavailable) replaces every replica while
    the shoot API is written through the seed's load balancer.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And the shoot API is written every 100 ms through its load balancer from a client in zone "zone-b"
    When the kube-apiserver Deployment rolls out again
    Then the 99th percentile of shoot API write latency during the outage is under 1000 ms
    And no acknowledged shoot API write is lost
