// The harness's power-loss filesystem for etcd members: a FUSE loopback that keeps file data in memory
// until fsync (what LazyFS does for etcd's robustness tests), built on first use by
// harness/providers/local/powerloss_fs.py into the harness cache.
module ha-harness/powerloss-fs

go 1.21

require (
	github.com/hanwen/go-fuse/v2 v2.12.1
	golang.org/x/sys v0.28.0
)
