"""One MPyC party for benchmarks/bench_mpyc.py (run as ``python mpyc_party.py -M3 --op sum --size N``).

MPyC (Schoenmakers) runs Shamir secret sharing over a prime field with
``-M`` parties on loopback; ``-M3`` without ``-I`` spawns the other parties.
Each party inputs the seeded vector ppdm's benchmark gives it (parties.jobs.bench_inputs); party 0 prints the protocol time
and a digest of the output so the caller can check it against ppdm's.
"""

import hashlib
import sys
import time

import numpy as np
from mpyc.runtime import mpc

op = "sum"
size = 1000
seed = 1
args = sys.argv[1:]
for i, a in enumerate(args):
    if a == "--op":
        op = args[i + 1]
    elif a == "--size":
        size = int(args[i + 1])
    elif a == "--seed":
        seed = int(args[i + 1])


async def main():
    await mpc.start()
    from parties.jobs.bench_inputs import inputs_for  # the very vectors ppdm's benchmark uses

    secint = mpc.SecInt(64)
    name = "secure_sum" if op == "sum" else "dot_product"
    x = inputs_for(name, seed, mpc.pid, len(mpc.parties), size)["x"].astype(np.int64)
    await mpc.barrier()
    t0 = time.perf_counter()
    xs = mpc.input(secint.array(x))
    if op == "sum":
        s = xs[0]
        for v in xs[1:]:
            s = s + v
    else:
        s = xs[0] @ xs[1]
    out = await mpc.output(s)
    t = time.perf_counter() - t0
    await mpc.shutdown()
    if mpc.pid == 0:
        out = np.asarray(out, dtype=np.int64)
        print(f"RESULT seconds={t:.6f} digest={hashlib.sha256(out.tobytes()).hexdigest()[:16]}", flush=True)


mpc.run(main())
