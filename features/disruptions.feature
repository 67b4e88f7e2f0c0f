@gep20_findings
Feature: Voluntary disruptions of the shoot control plane under probes (GEP-20's budgets)
  GEP-20: "for a multi-replica etcd cluster ... there should not be any downtime introduced due
  to VPA scaling of etcd pods with a pod disruption budget (PDB)"; the budget "ensures that no
  more than one member is unavailable", "ensuring that the quorum is intact". The reference
  control plane runs for real on the local seed; its pods are evicted through the Eviction API,
  as a VPA updater or a drain asks for it.

  Scenario: Every etcd-main member evicted under write probes: the budget lets one go at a time
    Each pod's eviction is asked for again every 0.2 s until it is granted, the followers' first,
    so the budget alone decides how many members are away at once (a member is away while its
    status requests go unanswered). The leader's own eviction moves the leadership once (etcd
    hands it over when it stops). Writes stopped for 1.9 s here, not when the leader's pod went
    but about 5 s later, when its replacement rejoined.

    Given the reference control plane with failure tolerance "zone" in the gep20 form runs for real
    And etcd-main of the shoot control plane is the etcd under test
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When every etcd-main member is evicted, each as soon as its budget allows
    Then at most 1 etcd-main member is away at a time
    And the leadership moves at most 2 times
    And the longest write gap during the outage is under 3 s
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
