"""One OS mechanism each: the etcd process, disks, the delay line, the power-loss filesystem
(its Go source beside it)."""
