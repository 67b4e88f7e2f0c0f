"""The embedded local region: network namespaces grouped into zones, real etcd, nftables."""
