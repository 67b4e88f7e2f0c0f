"""The one builder of each command line the harness runs for the control plane: an etcd member
(the region's, the seed's own, the shoot's pods under the node agents) and a kube-apiserver
(the seed's, the shoot's). A flag every etcd needs (TLS one day) is added here once."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence


def etcd_command(binary: str, name: str, data_dir: Path | str, client_url: str, peer_url: str, initial_cluster: str,
                 token: str | None = None, metrics_url: str | None = None, also_listen: Sequence[str] = ()) -> list[str]:
    """A member of a new cluster listening on `client_url` (and `also_listen`) and `peer_url`,
    logging JSON to stderr; `metrics_url`: /metrics and /health there, away from the clients."""
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
    return args + ["--logger=zap", "--log-outputs=stderr"]


class ApiserverPki(Protocol):
    ca_cert: Path
    apiserver_cert: Path
    apiserver_key: Path
    sa_public_key: Path
    sa_private_key: Path


def kube_apiserver_command(binary: str, etcd_servers: Sequence[str], address: str, port: int, pki: ApiserverPki,
                           cert_dir: Path, service_range: str, events_servers: Sequence[str] = (),
                           extra: Sequence[str] = ()) -> list[str]:
    """A kube-apiserver on `address:port` over the given etcd members (`/events` on
    `events_servers` when given), serving with `pki` and authorizing with RBAC."""
    overrides = [f"--etcd-servers-overrides=/events#{';'.join(events_servers)}"] if events_servers else []
    return [
        binary, f"--etcd-servers={','.join(etcd_servers)}", *overrides,
        f"--bind-address={address}", f"--advertise-address={address}", f"--secure-port={port}",
        f"--cert-dir={cert_dir}", f"--tls-cert-file={pki.apiserver_cert}", f"--tls-private-key-file={pki.apiserver_key}",
        f"--client-ca-file={pki.ca_cert}", f"--service-account-key-file={pki.sa_public_key}",
        f"--service-account-signing-key-file={pki.sa_private_key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={service_range}", "--authorization-mode=RBAC", "--profiling=false", *extra,
    ]
