#!/usr/bin/env bash
# Installs the Debian packages the local region needs, when missing.
# As root it installs them; otherwise it says what to install and exits non-zero.
set -euo pipefail

missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
if [ -z "${ETCD_BIN:-}" ]; then
  need etcd etcd-server
  need etcdctl etcd-client
fi
need nft nftables
need ip iproute2
need unshare util-linux
need nsenter util-linux
need haproxy haproxy
# The report's browser check (tests/report/test_browser.py renders index.html in headless Chromium).
need chromium chromium
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)

[ ${#missing[@]} -eq 0 ] && exit 0
pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" -eq 0 ]; then
  echo "[setup] installing Debian packages: $pkgs"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
else
  echo "[setup] missing Debian packages: $pkgs" >&2
  echo "[setup] install them with: sudo apt-get install $pkgs" >&2
  echo "[setup] (or point ETCD_BIN at an etcd binary of your own; etcdctl must sit next to it)" >&2
  exit 1
fi
