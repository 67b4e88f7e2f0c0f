"""A TCP echo server that says who it is: the backend of the long-lived connections the harness
holds through a Service's load balancer (KEP-3458).

On each connection it first sends one line, "<pod name> <peer address>", then echoes every line
it reads. The peer address is where the connection came from as the pod sees it: through a node
port with externalTrafficPolicy Cluster, kube-proxy masquerades it to the node the load balancer
chose, so the line names the node (and with it the zone) the connection went through. Standard
library only: on a real cluster a stock Python image runs it from a ConfigMap; on the local seed
the node agent runs it as a process (AGENT_LABEL "echo").

    python -m harness.kube.echo --listen ADDRESS:PORT --name POD
"""

from __future__ import annotations

import argparse
import asyncio
import os


async def _serve(name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peer = (writer.get_extra_info("peername") or ("?",))[0]
    try:
        writer.write(f"{name} {peer}\n".encode())
        await writer.drain()
        while line := await reader.readline():
            writer.write(line)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _main(host: str, port: int, name: str) -> None:
    server = await asyncio.start_server(lambda r, w: _serve(name, r, w), host, port, reuse_address=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="TCP echo that first names its pod and the peer it sees.")
    ap.add_argument("--listen", required=True, help="ADDRESS:PORT")
    ap.add_argument("--name", default=os.environ.get("POD_NAME", "echo"))
    args = ap.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    asyncio.run(_main(host or "0.0.0.0", int(port), args.name))


if __name__ == "__main__":
    main()
