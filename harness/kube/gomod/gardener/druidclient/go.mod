// An empty module in place of etcd-druid/client (see ../go.mod): no package built here imports it.
module github.com/gardener/etcd-druid/client

go 1.24.0
