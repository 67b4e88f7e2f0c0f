"""Locustfile: etcd users driving PUT/GET/range/txn/lease load and watchers, over gRPC.

    locust -f loadtests/etcd.py --headless -u 20 -r 20 -t 30s --host http://MEMBER-A:2379,http://MEMBER-B:2379 \
        [--load-profile put|write|range|mixed] [--rate 100] [--value-size 1024] [--history-dir DIR]

See harness/load/locustfile.py for the users; the harness starts the same file inside a client
zone's network namespace for the length of a scenario.
"""

from harness.load.locustfile import EtcdUser, WatchUser  # noqa: F401  (locust collects the User classes)
