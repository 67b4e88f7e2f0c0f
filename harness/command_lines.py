"""The one builder of each command line the harness runs for the control plane: an etcd member
(the region's, the seed's own, the shoot's pods under the node agents), a member's data made
from a snapshot (etcdutl) and a kube-apiserver (the seed's, the shoot's). A flag every etcd
needs (TLS) is added here once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence


@dataclass(frozen=True)
class EtcdServingTls:
    """A member's TLS as etcd-druid configures it: clients and peers both over TLS, each side
    checking the other's certificate against its CA (--client-cert-auth, --peer-client-cert-auth)."""

    client_ca: Path
    cert: Path
    key: Path
    peer_ca: Path
    peer_cert: Path
    peer_key: Path

    def flags(self) -> list[str]:
        return [f"--trusted-ca-file={self.client_ca}", f"--cert-file={self.cert}", f"--key-file={self.key}",
                "--client-cert-auth", f"--peer-trusted-ca-file={self.peer_ca}", f"--peer-cert-file={self.peer_cert}",
                f"--peer-key-file={self.peer_key}", "--peer-client-cert-auth"]


def etcd_command(binary: str, name: str, data_dir: Path | str, client_url: str, peer_url: str, initial_cluster: str,
                 token: str | None = None, metrics_url: str | None = None, also_listen: Sequence[str] = (),
                 tls: EtcdServingTls | None = None) -> list[str]:
    """A member of a new cluster listening on `client_url` (and `also_listen`) and `peer_url`,
    logging JSON to stderr; `metrics_url`: /metrics and /health there, away from the clients (plain
    HTTP, as etcd-druid keeps it). With `tls` the URLs are https:// ones."""
    args = [
        binary, f"--name={name}", f"--data-dir={data_dir}",
        f"--listen-client-urls={','.join((client_url, *also_listen))}", f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster={initial_cluster}", "--initial-cluster-state=new",
    ]
    if token is not None:
        args.append(f"--initial-cluster-token={token}")
    if metrics_url is not None:
        args.append(f"--listen-metrics-urls={metrics_url}")
    if tls is not None:
        args += tls.flags()
    return args + ["--logger=zap", "--log-outputs=stderr"]


@dataclass(frozen=True)
class EtcdClientTls:
    """A kube-apiserver's certificate towards etcd and the CA it checks the members with."""

    ca: Path
    cert: Path
    key: Path



def etcdutl_restore_command(etcdutl: str, snapshot: Path | str, name: str, data_dir: Path | str, peer_url: str,
                            initial_cluster: str, token: str) -> list[str]:
    """`etcdutl snapshot restore`: a data directory for member `name` of a new cluster made from
    `snapshot`, whose members are `initial_cluster` (what etcd_command's flags say of a new one)."""
    return [etcdutl, "snapshot", "restore", str(snapshot), f"--name={name}", f"--initial-cluster={initial_cluster}",
            f"--initial-cluster-token={token}", f"--initial-advertise-peer-urls={peer_url}", f"--data-dir={data_dir}"]

class ApiserverPki(Protocol):
    ca_cert: Path
    apiserver_cert: Path
    apiserver_key: Path
    sa_public_key: Path
    sa_private_key: Path


def kube_apiserver_command(binary: str, etcd_servers: Sequence[str], address: str, port: int, pki: ApiserverPki,
                           cert_dir: Path, service_range: str, events_servers: Sequence[str] = (),
                           extra: Sequence[str] = (), etcd_tls: EtcdClientTls | None = None) -> list[str]:
    """A kube-apiserver on `address:port` over the given etcd members (`/events` on
    `events_servers` when given; `etcd_tls` for both), serving with `pki` and authorizing with RBAC."""
    etcd_flags = [f"--etcd-servers-overrides=/events#{';'.join(events_servers)}"] if events_servers else []
    if etcd_tls is not None:
        etcd_flags += [f"--etcd-cafile={etcd_tls.ca}", f"--etcd-certfile={etcd_tls.cert}", f"--etcd-keyfile={etcd_tls.key}"]
    return [
        binary, f"--etcd-servers={','.join(etcd_servers)}", *etcd_flags,
        f"--bind-address={address}", f"--advertise-address={address}", f"--secure-port={port}",
        f"--cert-dir={cert_dir}", f"--tls-cert-file={pki.apiserver_cert}", f"--tls-private-key-file={pki.apiserver_key}",
        f"--client-ca-file={pki.ca_cert}", f"--service-account-key-file={pki.sa_public_key}",
        f"--service-account-signing-key-file={pki.sa_private_key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={service_range}", "--authorization-mode=RBAC", "--profiling=false", *extra,
    ]
