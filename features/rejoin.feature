@outage @gep20_findings
Feature: A zone away long enough comes back far behind (GEP-20's appendix)
  GEP-20's appendix watched a member rejoin 5.1 GB behind: the leader sent it about 120 MiB/s
  for about 40 s, the member answered with about 159 KiB/s, and the other follower's traffic
  stayed under 20 KiB/s. Whether the leader streams the missing entries from its log or sends a
  whole snapshot depends on how far behind the member is against the log the leader keeps: on
  etcd 3.5 its --snapshot-count entries plus 5,000 for catching up. Scaled here: 8,000 writes of
  1 KiB (8 MiB) while the member's zone is away, against a snapshot count of 100,000 (the log
  holds them) and of 1,000 (it does not). The figures of each run: the seconds to catch up, the
  MiB that crossed each pair of zones meanwhile, the snapshots the leader sent, and the leader's
  CPU seconds per second before the return and during the catch-up.

  Scenario Outline: A zone 8,000 revisions behind catches up from <source>
    Given a fresh region with 3 etcd members at the etcd version under test with snapshot count <snapshot count>
    And a zone without the etcd leader is the target zone
    And a load of 500 PUT/s with 1 KiB values against the leader from a client in its zone
    When the target zone goes down until the others are 8000 revisions ahead
    And the target zone comes back, its member's catch-up measured
    Then its member catches up from <source>
    And its member catches up within 30 s, sent 7 MiB or more from the leader's zone

    Examples:
      | snapshot count | source     |
      | 1000           | a snapshot |

    @long
    Examples:
      | snapshot count | source     |
      | 100000         | the log    |
