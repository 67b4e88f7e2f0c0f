"""The seed's way into the region: an HTTP CONNECT proxy on a unix socket, run inside the region's
router namespace, for kube-apiserver's egress selector (egress "cluster": pod and service
proxies, port-forwards, logs), as konnectivity is on a real seed.

The API server runs in the machine's own namespace, which has no route into the region (every
region uses the same zone subnets, so a route there would pick one region); a unix socket
crosses namespaces through the file system, so the API server reaches the region's nodes and
pods from where the router stands without any route of its own.

    ip netns exec <router> python -m harness.kube.egress_proxy --socket PATH

The same proxy on a TCP address is the relay of a vantage pod (harness.kube.vantage): a client
outside every zone reaches it through a port-forward and has its connections opened from the
pod's zone.

    python -m harness.kube.egress_proxy --listen ADDRESS:PORT
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

CONNECT_TIMEOUT_S = 10.0
MAX_HEADER = 16 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(64 * 1024):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass


async def _serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
    try:
        head = await client_r.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        client_w.close()
        return
    request = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(request) != 3 or request[0] != "CONNECT" or ":" not in request[1]:
        client_w.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
        client_w.close()
        return
    host, _, port = request[1].rpartition(":")
    try:
        target_r, target_w = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)), CONNECT_TIMEOUT_S)
    except (OSError, ValueError, asyncio.TimeoutError) as e:
        client_w.write(f"HTTP/1.1 502 Bad Gateway\r\n\r\n{type(e).__name__}: {e}".encode())
        client_w.close()
        return
    client_w.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await asyncio.gather(_pipe(client_r, target_w), _pipe(target_r, client_w))


async def _main(socket: Path | None, listen: str | None) -> None:
    if socket is not None:
        socket.unlink(missing_ok=True)
        server = await asyncio.start_unix_server(_serve, path=str(socket), limit=MAX_HEADER)
        os.chmod(socket, 0o600)
    else:
        assert listen is not None
        host, _, port = listen.rpartition(":")
        server = await asyncio.start_server(_serve, host.strip("[]") or None, int(port), limit=MAX_HEADER)
    print(f"egress proxy on {socket or listen}", file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", type=Path, help="unix socket to listen on")
    where.add_argument("--listen", help="TCP address:port to listen on (a vantage pod's relay)")
    args = ap.parse_args(argv)
    try:
        asyncio.run(_main(args.socket, args.listen))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
