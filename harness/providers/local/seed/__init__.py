"""The local Kubernetes seed and what runs on it: machines, the cloud controller, the shoot's etcd."""
