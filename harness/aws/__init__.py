"""AWS faults as plain functions over boto3 clients the caller builds (real AWS or an `endpoint_url`).

GEP-20's zone outage on AWS, made safe, reversible and idempotent:

- `nacl`: every opted-in subnet of one zone moved onto a network ACL of the harness's (deny all, or
  like AWS FIS's `availability-zone` scope, deny only the other zones' subnets);
- `credentials`: the machine controller's credentials revoked (a deny-all inline policy, or its
  access keys deactivated), so machines can be neither created nor deleted;
- `instances`: one EC2 node stopped, rebooted or terminated;
- `machines`: a probe that keeps creating and deleting a small instance with the machine
  controller's credentials.

Every change is preceded by a `record(data)` call with everything heal needs so far (the caller
writes it to its heal ledger); heal works from that full or partial data, or from the run id alone
through the `ha-harness/run` tags on what the harness created. Only resources that opted in (tag
`ha-harness/chaos=allowed`, or an explicit allow-list) are touched.
"""
