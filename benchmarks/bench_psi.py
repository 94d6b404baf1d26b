"""Private set intersection: ppdm's KKRT16 OT-based PSI vs openmined-psi (ECDH, C++), same sets, same run.

    python benchmarks/bench_psi.py [--sizes 65536,1048576] [--shared 0.5] [--repeat 1] [--no-two-process]
                                   [--no-peer] [--peer-python /tmp/psi-venv/bin/python]

Two parties with ``n`` random 16-byte digests each, a fraction ``--shared`` of
them common. Per size one row:

* ppdm, one process: both parties in one event loop over the in-memory network
  (sender + receiver work on one core, as the peer below), wall time from the
  call to both results, and the payload bytes both parties sent;
* ppdm, two processes: each party in its own process over one loopback TCP
  connection (a minimal length-prefixed :class:`~mpc.channel.Channel` defined
  here), the slower party's time from a start barrier to its result;
* openmined-psi (OpenMined's ECDH PSI in C++, ``private_set_intersection``):
  client and server in one process, from key generation to the client's
  intersection, with ``reveal_intersection=True`` (only the client learns the
  intersection there; ppdm gives it to both parties). Its bytes are the
  serialized setup, request and response.

openmined-psi needs protobuf 6, which the project's protobuf 7 excludes, so it
runs in its own venv through a subprocess::

    python3 -m venv /tmp/psi-venv && /tmp/psi-venv/bin/pip install openmined-psi numpy

Every result is checked: both ppdm parties must find exactly the common
digests, and openmined-psi the same count. ppdm's times are the best of
``--repeat`` runs (the peer runs once: ~8 minutes at 2^20 here). The ratio is
openmined-psi's time over ppdm's one-process time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpc.channel import MemoryNetwork
from mpc.psi import private_set_intersection

PEER_PYTHON = "/tmp/psi-venv/bin/python"

PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
import private_set_intersection.python as psi

client_items = [r.tobytes() for r in np.load(sys.argv[1])]
server_items = [r.tobytes() for r in np.load(sys.argv[2])]
t = time.perf_counter()
client = psi.client.CreateWithNewKey(True)
server = psi.server.CreateWithNewKey(True)
setup = server.CreateSetupMessage(1e-9, len(client_items), server_items, psi.DataStructure.RAW)
request = client.CreateRequest(client_items)
response = server.ProcessRequest(request)
found = client.GetIntersection(setup, response)
seconds = time.perf_counter() - t
wire = sum(len(m.SerializeToString()) for m in (setup, request, response))
print(json.dumps({"seconds": seconds, "found": len(found), "bytes": wire}))
"""


def make_sets(n: int, shared: float, seed: int = 1) -> tuple[np.ndarray, np.ndarray, int]:
    rng = np.random.default_rng(seed)
    k = int(n * shared)
    common = rng.integers(0, 256, (k, 16), dtype=np.uint8)
    a = np.concatenate([common, rng.integers(0, 256, (n - k, 16), dtype=np.uint8)])
    b = np.concatenate([common, rng.integers(0, 256, (n - k, 16), dtype=np.uint8)])
    return a[rng.permutation(n)], b[rng.permutation(n)], k


# --------------------------------------------------------------------------- one process
def run_in_process(a: np.ndarray, b: np.ndarray) -> tuple[float, int, list[int]]:
    async def main():
        net = MemoryNetwork(["p0", "p1"], timeout=3600)
        t = time.perf_counter()
        out = await asyncio.gather(
            private_set_intersection(net.channel("p0"), a, tag="bench"),
            private_set_intersection(net.channel("p1"), b, tag="bench"),
        )
        return time.perf_counter() - t, net.total_bytes, [int(f.sum()) for f in out]

    return asyncio.run(main())


# --------------------------------------------------------------------------- two processes
class SocketChannel:
    """The :class:`~mpc.channel.Channel` of one of two parties over one TCP connection (benchmark only).

    Frames are ``(tag length, payload length, tag, payload)``; a reader task files
    each payload under its tag, and ``recv`` takes them in order.
    """

    def __init__(self, me: str, parties: tuple[str, str], reader, writer):
        self.me, self.parties = me, parties
        self.state: dict = {}
        self.bytes_sent = 0
        self._reader, self._writer = reader, writer
        self._queues: dict[str, asyncio.Queue] = defaultdict(asyncio.Queue)
        self._pump = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            while True:
                tag_len, size = struct.unpack("<IQ", await self._reader.readexactly(12))
                tag = (await self._reader.readexactly(tag_len)).decode()
                self._queues[tag].put_nowait(await self._reader.readexactly(size))
        except asyncio.IncompleteReadError:
            return

    async def send(self, to: str, tag: str, payload: bytes) -> None:
        t = tag.encode()
        self._writer.write(struct.pack("<IQ", len(t), len(payload)) + t)
        self._writer.write(payload)
        self.bytes_sent += len(payload)
        await self._writer.drain()

    async def recv(self, frm: str, tag: str) -> bytes:
        return await self._queues[tag].get()


async def _party(name: str, path: str, port_q, res_q, port: int | None) -> None:
    items = np.load(path)
    if port is None:
        conn: asyncio.Future = asyncio.get_running_loop().create_future()
        server = await asyncio.start_server(lambda r, w: conn.set_result((r, w)), "127.0.0.1", 0)
        port_q.put(server.sockets[0].getsockname()[1])
        reader, writer = await conn
    else:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    ch = SocketChannel(name, ("p0", "p1"), reader, writer)
    peer = "p1" if name == "p0" else "p0"
    await ch.send(peer, "ready", b"")
    await ch.recv(peer, "ready")
    t = time.perf_counter()
    flags = await private_set_intersection(ch, items, tag="bench")
    res_q.put((name, time.perf_counter() - t, ch.bytes_sent, int(flags.sum())))
    await ch.send(peer, "done", b"")
    await ch.recv(peer, "done")
    writer.close()


def _party_process(name: str, path: str, port_q, res_q, port: int | None) -> None:
    asyncio.run(_party(name, path, port_q, res_q, port))


def run_two_processes(path_a: str, path_b: str) -> tuple[float, int, list[int]]:
    ctx = mp.get_context("spawn")
    port_q, res_q = ctx.Queue(), ctx.Queue()
    p0 = ctx.Process(target=_party_process, args=("p0", path_a, port_q, res_q, None))
    p0.start()
    p1 = ctx.Process(target=_party_process, args=("p1", path_b, port_q, res_q, port_q.get(timeout=120)))
    p1.start()
    res = sorted(res_q.get(timeout=3600) for _ in range(2))
    for p in (p0, p1):
        p.join(timeout=60)
    return max(r[1] for r in res), sum(r[2] for r in res), [r[3] for r in res]


# --------------------------------------------------------------------------- peer
def run_peer(python: str, path_a: str, path_b: str) -> dict | None:
    script = Path(path_a).with_name("openmined_psi_peer.py")
    script.write_text(PEER_SCRIPT)
    done = subprocess.run([python, str(script), path_a, path_b], capture_output=True, text=True, timeout=7200)
    if done.returncode:
        sys.exit(f"openmined-psi failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def peer_available(python: str) -> bool:
    if not os.path.exists(python):
        return False
    probe = subprocess.run([python, "-c", "import private_set_intersection.python, numpy"], capture_output=True)
    return probe.returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="65536,1048576", help="items per party, comma-separated")
    ap.add_argument("--shared", type=float, default=0.5, help="fraction of each set that is common")
    ap.add_argument("--repeat", type=int, default=1, help="ppdm runs per size (best time is printed)")
    ap.add_argument("--no-two-process", action="store_true", help="skip the two-process ppdm run")
    ap.add_argument("--no-peer", action="store_true", help="skip openmined-psi")
    ap.add_argument("--peer-python", default=PEER_PYTHON, help="python of a venv with openmined-psi and numpy")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    peer = not a.no_peer and peer_available(a.peer_python)
    if not a.no_peer and not peer:
        print(
            f"openmined-psi: skipped ({a.peer_python} cannot import it); create its venv with: "
            "python3 -m venv /tmp/psi-venv && /tmp/psi-venv/bin/pip install openmined-psi numpy"
        )
    print(f"PSI, 2 parties, {a.shared:.0%} of each set shared, {os.cpu_count()} cores")
    head = (
        f"{'n':>9} {'|∩|':>8} {'ppdm 1-proc s':>14} {'ppdm 2-proc s':>14} {'ppdm MB':>9}"
        f" {'openmined s':>12} {'openmined MB':>13} {'ratio':>7}"
    )
    print(head)
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            x, y, k = make_sets(n, a.shared)
            pa, pb = os.path.join(tmp, "a.npy"), os.path.join(tmp, "b.npy")
            np.save(pa, x)
            np.save(pb, y)
            dt = dt2 = float("inf")
            for _ in range(max(1, a.repeat)):
                t, wire, found = run_in_process(x, y)
                if found != [k, k]:
                    sys.exit(f"ppdm found {found} common items, expected {k} on both sides")
                dt = min(dt, t)
                if not a.no_two_process:
                    t, _, found = run_two_processes(pa, pb)
                    if found != [k, k]:
                        sys.exit(f"ppdm (two processes) found {found} common items, expected {k}")
                    dt2 = min(dt2, t)
            two = "-" if a.no_two_process else f"{dt2:.2f}"
            om_s = om_mb = ratio = "-"
            if peer:
                r = run_peer(a.peer_python, pa, pb)
                assert r is not None
                if r["found"] != k:
                    sys.exit(f"openmined-psi found {r['found']} common items, expected {k}")
                om_s, om_mb, ratio = f"{r['seconds']:.2f}", f"{r['bytes'] / 1e6:.1f}", f"{r['seconds'] / dt:.1f}x"
            print(f"{n:>9} {k:>8} {dt:>14.2f} {two:>14} {wire / 1e6:>9.1f} {om_s:>12} {om_mb:>13} {ratio:>7}")


if __name__ == "__main__":
    main()
