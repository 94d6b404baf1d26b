"""Seeded random inputs and plain reference functions for ``ppdm bench mpc``.

Each daemon derives its benchmark input from ``(seed, operation, party index)``
so no input crosses the wire; the analyst regenerates the same inputs to check
every protocol result against the plain function it computes. These are
benchmark inputs only — nothing here touches a party's real data.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["OPERATIONS", "rng_for", "inputs_for", "expected", "digest"]

OPERATIONS = (
    "base_ot",
    "ot_extension",
    "ot_1_of_n",
    "secure_sum",
    "secure_sum_threshold",
    "dot_product",
    "set_union",
    "intersection_cardinality",
)

N_OF_N = 16  # message count of the 1-of-N benchmark
MSG_LEN = 16  # bytes per OT message


def rng_for(seed: int, operation: str, index: int) -> np.random.Generator:
    """A generator private to (seed, operation, party index)."""
    h = hashlib.sha256(f"{seed}/{operation}/{index}".encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _set_items(seed: int, index: int, size: int) -> list[bytes]:
    """Item sets that overlap: half drawn from a shared pool, half private."""
    shared = rng_for(seed, "set/shared", 0).integers(0, 2**62, size=size, dtype=np.int64)
    own = rng_for(seed, "set/own", index).integers(0, 2**62, size=size, dtype=np.int64)
    pick = rng_for(seed, "set/pick", index).random(size) < 0.5
    vals = np.unique(np.where(pick, shared, own))
    return [b"item-" + int(v).to_bytes(8, "big") for v in vals]


def inputs_for(operation: str, seed: int, index: int, n_parties: int, size: int) -> dict:
    """The benchmark input of party ``index`` for ``operation`` (plain Python/numpy)."""
    r = rng_for(seed, operation, index)
    if operation in ("base_ot", "ot_extension"):
        if index == 0:
            return {
                "m0": r.integers(0, 256, (size, MSG_LEN), dtype=np.uint8),
                "m1": r.integers(0, 256, (size, MSG_LEN), dtype=np.uint8),
            }
        return {"choices": r.integers(0, 2, size, dtype=np.uint8)}
    if operation == "ot_1_of_n":
        if index == 0:
            return {"messages": r.integers(0, 256, (size, N_OF_N, MSG_LEN), dtype=np.uint8)}
        return {"choices": r.integers(0, N_OF_N, size, dtype=np.int64)}
    if operation == "secure_sum":
        # 40-bit values: the sums fit the 64-bit secure integers of the MPyC comparison
        return {"x": r.integers(0, 2**40, size, dtype=np.uint64)}
    if operation == "secure_sum_threshold":
        # local counts minus a public share of the threshold, as in Kantarcioglu–Clifton
        return {"x": r.integers(-1000, 1000, size, dtype=np.int64), "threshold": 0}
    if operation == "dot_product":
        return {"x": r.integers(0, 2, size, dtype=np.uint64)}
    if operation in ("set_union", "intersection_cardinality"):
        return {"items": _set_items(seed, index, size)}
    raise ValueError(f"unknown benchmark operation {operation!r}")


def digest(a) -> str:
    """SHA-256 (hex, 16 chars) of an array's bytes or of a list of byte strings."""
    h = hashlib.sha256()
    if isinstance(a, np.ndarray):
        h.update(np.ascontiguousarray(a).tobytes())
    else:
        for x in a:
            h.update(len(x).to_bytes(4, "big") + x)
    return h.hexdigest()[:16]


def expected(operation: str, seed: int, n_parties: int, size: int):
    """The plain result each protocol must reproduce (digest or value)."""
    ins = [inputs_for(operation, seed, i, n_parties, size) for i in range(n_parties)]
    if operation in ("base_ot", "ot_extension"):
        c = ins[1]["choices"].astype(bool)
        return digest(np.where(c[:, None], ins[0]["m1"], ins[0]["m0"]))
    if operation == "ot_1_of_n":
        m, c = ins[0]["messages"], ins[1]["choices"]
        return digest(m[np.arange(size), c])
    if operation == "secure_sum":
        s = np.zeros(size, np.uint64)
        for i in ins:
            s += i["x"]
        return digest(s)
    if operation == "secure_sum_threshold":
        s = sum(i["x"] for i in ins)
        return digest((s >= 0).astype(np.uint8))
    if operation == "dot_product":
        return int(np.sum(ins[0]["x"] * ins[1]["x"], dtype=np.uint64))
    if operation == "set_union":
        return digest(sorted(set().union(*(set(i["items"]) for i in ins))))
    if operation == "intersection_cardinality":
        return len(set.intersection(*(set(i["items"]) for i in ins)))
    raise ValueError(operation)
