"""Load generation: locust users for etcd, their runner, and the client adapter."""
