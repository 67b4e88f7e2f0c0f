"""Backups of an etcd cluster and its recovery from them (seed 003, DEP-05): the parts of
etcd-backup-restore the harness's reference needs, built from etcd's own tools."""
