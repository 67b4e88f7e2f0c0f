"""Certificates and keys for one embedded control plane, and its admin kubeconfig.

ECDSA P-256 keeps generation instant; every component trusts the one throwaway CA.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

from harness.errors import PrerequisiteError

# Imported softly so that harness.kube (and its pure parts) load without the package;
# generating certificates then says what to install.
try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    _CRYPTOGRAPHY_MISSING: ImportError | None = None
except ImportError as exc:  # pragma: no cover - depends on the environment
    _CRYPTOGRAPHY_MISSING = exc

# First address of the service range: the in-cluster `kubernetes` Service.
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/24"
_KUBERNETES_SERVICE_IP = "10.96.0.1"
_VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    apiserver_cert: Path
    apiserver_key: Path
    sa_public_key: Path
    sa_private_key: Path
    admin_cert: Path
    admin_key: Path


def pki_files(directory: Path) -> Pki:
    """Where the files of a PKI made by generate_pki are (also once copied from its Secret)."""
    return Pki(ca_cert=directory / "ca.crt", apiserver_cert=directory / "apiserver.crt",
               apiserver_key=directory / "apiserver.key", sa_public_key=directory / "sa.pub",
               sa_private_key=directory / "sa.key", admin_cert=directory / "admin.crt", admin_key=directory / "admin.key")


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _sign(
    subject: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
    usages: list[x509.ObjectIdentifier] | None = None,
    sans: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    else:
        builder = builder.add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        )
    if usage is not None or usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages or [usage]), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _require_cryptography() -> None:
    if _CRYPTOGRAPHY_MISSING is not None:
        raise PrerequisiteError(
            f"the Python package 'cryptography' is needed for the control plane's certificates "
            f"({_CRYPTOGRAPHY_MISSING}); install the harness with its dependencies (pip install cryptography)"
        )


def _new_ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    return _sign(_name(cn), key.public_key(), _name(cn), key, ca=True), key


def generate_pki(directory: Path, extra_ips: tuple[str, ...] = (), etcd: EtcdNames | None = None) -> Pki:
    """CA, API server serving cert, service-account key pair and a system:masters client cert;
    with `etcd`, also etcd's server, peer and client certificates signed by the same CA (the
    shoot's CA, as GEP-20's control plane has it)."""
    _require_cryptography()
    directory.mkdir(parents=True, exist_ok=True)
    pki = pki_files(directory)
    ca, ca_key = _new_ca("ha-harness-kube-ca")
    _write_cert(pki.ca_cert, ca)

    server_key = _key()
    sans: list[x509.GeneralName] = [
        x509.DNSName(n)
        for n in ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
    ]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in dict.fromkeys(("127.0.0.1", _KUBERNETES_SERVICE_IP, *extra_ips))]
    server = _sign(
        _name("kube-apiserver"), server_key.public_key(), ca.subject, ca_key, usage=ExtendedKeyUsageOID.SERVER_AUTH, sans=sans
    )
    _write_cert(pki.apiserver_cert, server)
    _write_key(pki.apiserver_key, server_key)

    # system:masters bypasses RBAC: the admin and every local component use this identity.
    admin_key = _key()
    admin = _sign(
        _name("ha-harness-admin", "system:masters"),
        admin_key.public_key(),
        ca.subject,
        ca_key,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    _write_cert(pki.admin_cert, admin)
    _write_key(pki.admin_key, admin_key)

    sa_key = _key()
    _write_key(pki.sa_private_key, sa_key)
    pki.sa_public_key.write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    if etcd is not None:
        _etcd_certificates(directory, ca, ca_key, etcd)
    return pki


@dataclass(frozen=True)
class EtcdNames:
    """Every name and address an etcd member may be dialled at: its serving and peer certificates
    name them all (a member rescheduled elsewhere keeps working with the same certificates)."""

    ips: tuple[str, ...]
    dns: tuple[str, ...] = ()


@dataclass(frozen=True)
class EtcdPki:
    ca: Path
    server_cert: Path
    server_key: Path
    peer_cert: Path
    peer_key: Path
    client_cert: Path
    client_key: Path


def etcd_pki_files(directory: Path) -> EtcdPki:
    return EtcdPki(ca=directory / "ca.crt", server_cert=directory / "etcd-server.crt", server_key=directory / "etcd-server.key",
                   peer_cert=directory / "etcd-peer.crt", peer_key=directory / "etcd-peer.key",
                   client_cert=directory / "etcd-client.crt", client_key=directory / "etcd-client.key")


def generate_etcd_pki(directory: Path, names: EtcdNames) -> EtcdPki:
    """An etcd cluster's own CA and its server, peer and client certificates (the region's etcd)."""
    _require_cryptography()
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = _new_ca("ha-harness-etcd-ca")
    _write_cert(etcd_pki_files(directory).ca, ca)
    return _etcd_certificates(directory, ca, ca_key, names)


def _etcd_certificates(directory: Path, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
                       names: EtcdNames) -> EtcdPki:
    files = etcd_pki_files(directory)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dict.fromkeys(("localhost", *names.dns))]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in dict.fromkeys(("127.0.0.1", *names.ips))]
    # Both usages for the serving certificates, as Gardener issues etcd's: a peer certificate is also
    # the member's client certificate towards the others (--peer-client-cert-auth), and etcd's own
    # JSON gateway calls its gRPC server with the serving certificate (--client-cert-auth).
    both = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    for cert, key, cn, usages, with_sans in (
        (files.server_cert, files.server_key, "etcd-server", both, True),
        (files.peer_cert, files.peer_key, "etcd-peer", both, True),
        (files.client_cert, files.client_key, "etcd-client", [ExtendedKeyUsageOID.CLIENT_AUTH], False),
    ):
        private = _key()
        _write_cert(cert, _sign(_name(cn), private.public_key(), ca.subject, ca_key, usages=usages,
                                sans=sans if with_sans else None))
        _write_key(key, private)
    return files


def generate_webhook_pki(directory: Path, ca_name: str) -> Path:
    """A CA of its own and a serving certificate for 127.0.0.1 signed by it, as `tls.crt` and
    `tls.key` in `directory` (where controller-runtime's webhook server looks); returns the CA's
    file, the caBundle of the webhook configurations. Gardener, too, gives its webhook servers a
    CA apart from the cluster's (`ca-seed` for the seed's gardener-resource-manager)."""
    _require_cryptography()
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = _new_ca(ca_name)
    key = _key()
    cert = _sign(_name("webhook-server"), key.public_key(), ca.subject, ca_key, usage=ExtendedKeyUsageOID.SERVER_AUTH,
                 sans=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    _write_cert(directory / "ca.crt", ca)
    _write_cert(directory / "tls.crt", cert)
    _write_key(directory / "tls.key", key)
    return directory / "ca.crt"


def write_kubeconfig(path: Path, server: str, pki: Pki, context: str = "ha-harness") -> Path:
    """An admin kubeconfig naming the control plane's certificate files. (With the credentials
    embedded, the Python Kubernetes client copies them into a temporary file in each process,
    and every process stopped by a signal, a node agent's included, leaves its copy of the key
    behind in the system's temporary directory.)"""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server, "certificate-authority": str(pki.ca_cert.resolve())}}],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate": str(pki.admin_cert.resolve()), "client-key": str(pki.admin_key.resolve())},
            }
        ],
        "contexts": [{"name": context, "context": {"cluster": context, "user": "admin"}}],
        "current-context": context,
    }
    # JSON is valid YAML; no YAML dependency needed.
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o600)
    return path
