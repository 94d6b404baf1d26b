"""Joint publishing of vertically partitioned data: the optimal full-domain release of the joined
table, with a non-colluding helper that sees each evaluated node's class sizes and nothing else.

Problem
-------
Two or more *data parties* hold different columns of the same records (a hospital the diagnoses, an
insurer the demographics), aligned to one row order (by position, or privately by a customer key:
:func:`align_rows`). The analyst wants the release the optimal full-domain search (Flash, Incognito,
Samarati: the same satisfying nodes) would publish from the joined table under k-anonymity and
distinct l-diversity with tuple suppression. Distributed k-anonymity over vertically partitioned
data: W. Jiang, C. Clifton, "Privacy-preserving distributed k-anonymity", DBSec 2005; N. Mohammed,
B. C. M. Fung, K. Wang, P. C. K. Hung, "Privacy-preserving data mashup", EDBT 2009.

Why a helper
------------
A node's frequency set counts rows over the product of every party's cells, which no party can
count alone. Jiang and Clifton let the two data parties compare their classes' record sets under
commutative encryption, so *the data parties* learn the sizes of all intersections of their classes
at every checked node. Here a compute-only *helper* (a daemon that holds no data, as in the
commodity-server model of D. Beaver, "Commodity-based cryptography", STOC 1997) learns those sizes
instead — without values, without record identities, and without the data parties learning them.

Construction
------------
* **Group seed.** The data parties agree a secret seed the helper does not know (each sends every
  other a fresh 32-byte contribution over their pairwise mTLS channel; the seed is SHA-256 of all).
* **Per node L, per data party p** (a batch of nodes per request): its rows' cells over its own
  QIs at L (:func:`anonymize.publish.fulldomain.cells.cell_index`), relabelled by a fresh uniformly
  random permutation of the cells that occur, and sent in the row order ``π_L`` — a permutation
  drawn from the seed and L (AES-CTR keys sorted, :func:`mpc.keys.prg_uint64`), fresh per node and
  unknown to the helper. The party holding the sensitive column also sends its rows' values under
  a fresh random relabelling. With NCP each party adds the loss of each of its labels (its cells'
  Σ_j m_j·loss_j, fixed point 2^−F as :data:`.publishing.NCP_FRACTION_BITS`).
* **The helper** joins the label columns position by position, which gives the node's classes: per
  class its size and distinct sensitive values; ``fail = [size < k] ∨ [distinct < l]``; suppressed
  rows ``S``; within = ``[S ≤ MaxSup]``; with ``'star'`` the ``*`` group must pass too; DM
  (Bayardo & Agrawal, ICDE 2005) and NCP of the satisfying nodes. It runs the search top-down a level
  of the lattice at a time exactly as :func:`.publishing.publish_horizontal` does (only nodes whose
  direct generalizations are all within are evaluated), and chooses the satisfying node of least NCP
  (ties DM) or DM, then the lower node, then the level vector — the pooled search's node.
* **Release.** At the chosen node each data party encrypts its rows' cells (and the sensitive
  values) in ``π_L`` order with AES-256-CTR under a fresh key it gives only the analyst; the helper,
  which knows which positions belong to suppressed classes, forwards the ciphertexts of the kept
  rows (and of the suppressed rows' sensitive values, unless ``'drop'``); the analyst decrypts,
  labels the cells with the public hierarchies and shuffles.

Revealed (the job's ``revealed`` list)
--------------------------------------
* the helper: for every node it evaluates, the sizes of the joined classes and of each data party's
  own classes, and the number of rows per (class, sensitive value) — all under fresh pseudonyms and
  a fresh row order per node, so it cannot tell which class is which value, nor link a row across
  nodes; with NCP, the loss of each pseudonymous class of each party (a function of its generalized
  values, which may tell classes of unequal losses apart); the number of rows;
* the data parties: the nodes the helper asks for (so the within-budget bit of the nodes evaluated,
  as in horizontal publishing) and the chosen node; each other's number of rows (equal by alignment);
* the analyst: the release (and the sensitive domain of the party that holds it);
* nothing else, unless the helper colludes with a data party or with the analyst (semi-honest).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from anonymize.publish.fulldomain.cells import cell_index
from anonymize.publish.fulldomain.grid import LatticeGrid
from anonymize.publish.hierarchy import Hierarchy
from anonymize.publish.metrics.cells import hierarchy_loss_tables
from mpc.channel import Channel, agree, pack_arrays, unpack_arrays
from mpc.errors import ProtocolError
from mpc.keys import prg_uint64, subset_channel

from .publishing import JointPublishSpec, _ncp_bits

__all__ = ["VerticalRows", "VerticalLayout", "publish_vertical", "decrypt_release", "MAX_BATCH_ROWS"]

MAX_BATCH_ROWS = 1 << 24
"""Label entries (rows × nodes) one request asks a data party for; a level is split into batches."""


@dataclass(frozen=True)
class VerticalLayout:
    """Who holds what: ``owners[j]`` the data party holding QI ``j`` (in ``spec.qis`` order),
    ``sensitive_owner`` the one holding the sensitive column (or None), ``helper`` the compute-only
    party. Public; every party checks it holds the same."""

    owners: tuple[str, ...]
    sensitive_owner: str | None
    helper: str

    def data_parties(self, parties: Sequence[str]) -> list[str]:
        """The data parties, in session order."""
        return [p for p in parties if p != self.helper]

    def columns_of(self, party: str) -> list[int]:
        """Indices (into ``spec.qis``) of the QIs ``party`` holds."""
        return [j for j, o in enumerate(self.owners) if o == party]


@dataclass
class VerticalRows:
    """One data party's columns, aligned: ``(n, q_p)`` leaf codes of its QIs (in ``spec.qis``
    order), its sensitive values as text (or None), and ``present`` (rows it holds, or None: all)."""

    qi_codes: np.ndarray
    sensitive: Sequence[str] | None = None
    present: np.ndarray | None = None


def _permutation(seed: bytes, node: int, n: int) -> np.ndarray:
    """``π_L``: the order of n AES-CTR 64-bit keys under a key derived from the group seed and the node
    (every data party computes the same; equal keys, probability below n²/2⁶⁵, would only make two
    rows' order depend on the sort)."""
    key = hashlib.sha256(seed + b"|perm|" + str(node).encode()).digest()[:16]
    return np.argsort(prg_uint64(key, n))


def _dense_limit(n: int) -> int:
    """Largest value range counted with a bincount (O(n + range)) rather than a sort."""
    return 4 * n + (1 << 16)


def _relabel(values: np.ndarray, valid: np.ndarray | None) -> tuple[np.ndarray, int]:
    """``values`` (≥ 0) renamed by a fresh uniformly random bijection of the values that occur
    (-1 where not ``valid``): ``(labels int32, number of labels)``."""
    from anonymize.dp.randomness import RandomSource

    vals = values if valid is None else values[valid]
    top = int(vals.max(initial=-1)) + 1
    if top <= _dense_limit(len(values)):
        occurs = np.bincount(vals, minlength=top) > 0
        m = int(occurs.sum())
        rank = np.cumsum(occurs) - 1
        perm = RandomSource().permutation(m).astype(np.int32)
        out = perm[rank[np.where(valid, values, 0) if valid is not None else values]]
    else:
        uniq, inv = np.unique(vals, return_inverse=True)
        m = len(uniq)
        perm = RandomSource().permutation(m).astype(np.int32)
        if valid is None:
            out = perm[inv.reshape(-1)]
        else:
            out = np.zeros(len(values), np.int32)
            out[valid] = perm[inv.reshape(-1)]
    if valid is not None:
        out = np.where(valid, out, -1).astype(np.int32)
    return out.astype(np.int32, copy=False), m


def _class_of(columns: Sequence[np.ndarray], widths: Sequence[int], n: int) -> tuple[np.ndarray, int]:
    """The joined class of every row from per-party label columns (values < widths): mixed radix,
    re-ranked by a sort only when the radix outgrows :func:`_dense_limit` — ``(class, class count)``;
    class numbers may leave gaps (empty classes), which count as nothing."""
    cls = np.zeros(n, dtype=np.int64)
    width = 1
    for col, w in zip(columns, widths):
        if width * w > _dense_limit(n):
            u, inv = np.unique(cls, return_inverse=True)
            cls, width = inv.reshape(-1).astype(np.int64), len(u)
        cls = cls * w + col
        width *= w
    if width > _dense_limit(n):
        u, inv = np.unique(cls, return_inverse=True)
        cls, width = inv.reshape(-1).astype(np.int64), len(u)
    return cls, width


class _DataParty:
    """A data party's side: answers the helper's requests for labels and, at the end, the release."""

    def __init__(
        self,
        ch: Channel,
        hs: Sequence[Hierarchy],
        rows: VerticalRows,
        spec: JointPublishSpec,
        layout: VerticalLayout,
        seed: bytes,
        sens_codes: np.ndarray | None,
        n_sens: int,
        grid: LatticeGrid,
    ):
        self.ch, self.spec, self.layout, self.seed, self.grid = ch, spec, layout, seed, grid
        self.cols = layout.columns_of(ch.me)
        self.hs = [hs[j] for j in self.cols]
        self.codes = np.asarray(rows.qi_codes)
        self.present = rows.present
        self.n = self.codes.shape[0]
        self.sens = sens_codes
        self.n_sens = n_sens
        self.fbits = _ncp_bits(self.n, len(hs))
        self.mult = spec.ncp_multipliers()[self.cols] if self.cols else np.zeros(0)
        self.tables = hierarchy_loss_tables(self.hs, spec.ncp_categorical) if spec.metric == "ncp" else []

    def _cells(self, node: int) -> np.ndarray:
        if not self.cols:
            return np.zeros(self.n, dtype=np.int64)
        levels = [int(self.grid.levels[node][j]) for j in self.cols]
        return cell_index(self.hs, self.codes, levels)

    def _losses(self, node: int, rows: np.ndarray) -> np.ndarray:
        """Fixed-point Σ_j m_j·loss_j of this party's QIs for the given rows."""
        if self.spec.metric != "ncp" or not self.cols:
            return np.zeros(len(rows), dtype=np.uint64)
        w = np.zeros(len(rows))
        for t, (j, h) in enumerate(zip(self.cols, self.hs)):
            lv = int(self.grid.levels[node][j])
            c = self.codes[rows, t]
            node_codes = h.maps[lv][c] if lv else c
            w += self.mult[t] * self.tables[t][lv][node_codes]
        return np.rint(w * float(1 << self.fbits)).astype(np.uint64)

    def labels(self, nodes: Sequence[int]) -> bytes:
        """One batch: per node the relabelled cells in ``π_L`` order (+ sensitive labels, + losses)."""
        labs, sens, counts, losses = [], [], [], []
        for node in nodes:
            pi = _permutation(self.seed, node, self.n)
            lab, m = _relabel(self._cells(node), self.present)
            labs.append(lab[pi])
            counts.append(m)
            if self.spec.metric == "ncp":
                per_label = np.zeros(m, dtype=np.uint64)
                ok = lab >= 0
                per_label[lab[ok]] = self._losses(node, np.flatnonzero(ok))
                losses.append(per_label)
            if self.sens is not None and self.spec.l is not None:  # only l-diversity reads the values
                s, _ = _relabel(self.sens, self.present)
                sens.append(s[pi])
        narrow = max(counts, default=0) < (1 << 15) and self.n_sens < (1 << 15)  # int16 labels halve the bytes
        dt = np.int16 if narrow else np.int32
        return pack_arrays(
            np.concatenate(labs).astype(dt),
            np.concatenate(sens).astype(dt) if sens else np.zeros(0, dt),
            np.asarray(counts, dtype=np.int64),
            np.concatenate(losses) if losses else np.zeros(0, np.uint64),
        )

    def release(self, node: int) -> tuple[bytes, dict]:
        """The release message to the helper (ciphertexts in ``π_L`` order) and the reply's keys."""
        pi = _permutation(self.seed, node, self.n)
        key = os.urandom(32)
        cells = np.ascontiguousarray(self._cells(node)[pi].astype("<i8"))
        ct = [_xor_stream(key, cells.view(np.uint8))]
        out: dict = {
            "cells_key": key.hex(),
            "qis": [self.spec.qis[j] for j in self.cols],
            "levels": [int(self.grid.levels[node][j]) for j in self.cols],
        }
        if self.sens is not None:
            skey = os.urandom(32)
            sv = np.ascontiguousarray(np.where(self.sens < 0, 0, self.sens)[pi].astype("<i4"))
            ct.append(_xor_stream(skey, sv.view(np.uint8)))
            out["sensitive_key"] = skey.hex()
        return pack_arrays(*ct), out


def _xor_stream(key: bytes, data: np.ndarray) -> np.ndarray:
    """``data`` XOR AES-256-CTR(key, nonce 0): encryption and decryption (the key is used once)."""
    enc = Cipher(algorithms.AES(key), modes.CTR(b"\x00" * 16)).encryptor()
    stream = np.frombuffer(enc.update(bytes(data.size)), dtype=np.uint8)
    return np.bitwise_xor(data.reshape(-1), stream)


@dataclass
class _NodeStats:
    within: bool
    ok: bool
    dm: int
    ncp: int
    status: np.ndarray | None  # per position: 0 kept, 1 suppressed, 2 not in the joined table


class _Helper:
    """The helper's side: joins the label columns and runs the search."""

    def __init__(self, spec: JointPublishSpec, n_all: int, q: int):
        self.spec = spec
        self.n_all = n_all
        self.q = q
        self.n = 0  # rows in the joined table (set by the first evaluation)
        self.max_sup = 0
        self.star = spec.suppressed_rows == "star"
        self.fbits = _ncp_bits(n_all, q)
        self.sup_weight = int(round(float(spec.ncp_multipliers().sum()) * float(1 << self.fbits)))

    def evaluate(
        self, labels: list[np.ndarray], widths: list[int], losses: list[np.ndarray], sens: np.ndarray | None
    ) -> _NodeStats:
        spec = self.spec
        present = labels[0] >= 0
        for lab in labels[1:]:
            present &= lab >= 0
        everyone = bool(present.all())
        rows = None if everyone else np.flatnonzero(present)
        cols = labels if rows is None else [lab[rows] for lab in labels]
        sv = None if sens is None else (sens if rows is None else sens[rows])
        n = len(cols[0])
        self.n = n
        self.max_sup = int(math.floor(spec.max_suppression * n + 1e-9))
        cls, width = _class_of(cols, widths, n)
        sizes = np.bincount(cls, minlength=width)
        fail = sizes < spec.k
        n_sv = int(sv.max(initial=-1)) + 1 if sv is not None else 0
        if spec.l is not None and sv is not None:
            if width * n_sv <= _dense_limit(n):
                distinct = (np.bincount(cls * n_sv + sv, minlength=width * n_sv) > 0).reshape(width, n_sv).sum(1)
            else:
                distinct = np.bincount(np.unique(cls * n_sv + sv) // n_sv, minlength=width)
            fail |= distinct < spec.l
        row_fail = fail[cls]
        s = int(sizes[fail].sum())
        within = s <= self.max_sup
        ok = within
        if self.star and within and s > 0:
            ok = s >= spec.k
            if ok and spec.l is not None and sv is not None:
                ok = int((np.bincount(sv[row_fail], minlength=n_sv) > 0).sum()) >= spec.l
        kept = sizes[~fail].astype(np.int64)
        dm = int((kept * kept).sum()) + s * n
        ncp = 0
        if spec.metric == "ncp":
            per_row = np.zeros(n, dtype=np.uint64)
            for lab, loss in zip(cols, losses):
                if len(loss):
                    per_row += loss[lab]
            ncp = int(per_row[~row_fail].sum(dtype=np.uint64)) + s * self.sup_weight
        status = None
        if ok:
            status = np.full(self.n_all, 2, dtype=np.int8)
            if rows is None:
                status[:] = row_fail
            else:
                status[rows] = row_fail
        return _NodeStats(bool(within), bool(ok), dm, ncp, status)


async def _group_seed(ch: Channel, data_parties: Sequence[str]) -> bytes:
    """A 32-byte seed every data party knows and the helper does not (module docstring)."""
    sub = subset_channel(ch, data_parties)
    mine = os.urandom(32)
    others = [p for p in data_parties if p != ch.me]
    await asyncio.gather(*(sub.send(p, "pubv/seed", mine) for p in others))
    got = dict(zip(others, await asyncio.gather(*(sub.recv(p, "pubv/seed") for p in others))))
    got[ch.me] = mine
    if any(len(v) != 32 for v in got.values()):
        raise ProtocolError("bad seed contribution")
    h = hashlib.sha256(b"ppdm/publish-vertical/seed/v1")
    for p in data_parties:
        h.update(bytes(got[p]))
    return h.digest()


async def publish_vertical(
    ch: Channel,
    hierarchies: Sequence[Hierarchy],
    local: VerticalRows | None,
    spec: JointPublishSpec,
    layout: VerticalLayout,
    *,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Run the vertical joint search and release (module docstring) as one party of ``ch``.

    Data parties pass their aligned columns (``local``), the helper None. Every party passes the same
    public ``hierarchies`` (one per QI of ``spec``), ``spec`` and ``layout``. Returns ``levels``,
    ``n``, ``stats``, ``revealed``; the helper's result also carries ``release`` (positions and
    ciphertexts for the analyst), each data party's its keys (:func:`decrypt_release` joins them)."""
    spec.check()
    t0 = time.perf_counter()
    say = progress or (lambda _m: None)
    hs = list(hierarchies)
    if [h.name for h in hs] != list(spec.qis):
        raise ProtocolError("give one hierarchy per quasi-identifier, in order")
    if layout.helper not in ch.parties:
        raise ProtocolError("the helper is not a party of this session")
    data_parties = layout.data_parties(ch.parties)
    if len(data_parties) < 2:
        raise ProtocolError("vertical joint publishing needs at least two data parties and a compute-only helper")
    if len(layout.owners) != len(spec.qis) or not set(layout.owners) <= set(data_parties):
        raise ProtocolError("every quasi-identifier needs an owner among the data parties")
    if spec.sensitive is not None and layout.sensitive_owner not in data_parties:
        raise ProtocolError("the sensitive column needs an owner among the data parties")
    await agree(
        ch,
        "pubv/params",
        **spec.public(hs),
        owners=list(layout.owners),
        sensitive_owner=layout.sensitive_owner,
        helper=layout.helper,
    )
    grid = LatticeGrid([h.height for h in hs])
    if ch.me == layout.helper:
        return await _run_helper(ch, spec, layout, data_parties, grid, hs, say, t0)
    if local is None:
        raise ProtocolError("a data party needs its rows")
    return await _run_data_party(ch, hs, local, spec, layout, data_parties, grid, t0)


async def _run_data_party(ch, hs, local: VerticalRows, spec, layout, data_parties, grid, t0) -> dict:
    me = ch.me
    n = int(local.qi_codes.shape[0])
    if local.qi_codes.shape[1] != len(layout.columns_of(me)):
        raise ProtocolError("this party's columns do not match the layout")
    await ch.send(layout.helper, "pubv/n", json.dumps({"n": n}).encode())  # the helper checks them first
    await agree(subset_channel(ch, data_parties), "pubv/rows", n=n)  # aligned: the same row count everywhere
    sens_codes, n_sens, domain = None, 0, None
    if spec.sensitive is not None and me == layout.sensitive_owner:
        vals = [str(v) for v in (local.sensitive or [])]
        if len(vals) != n:
            raise ProtocolError("the sensitive column does not have one value per row")
        present = np.ones(n, bool) if local.present is None else np.asarray(local.present, bool)
        if spec.sensitive_values is not None:
            domain = list(spec.sensitive_values)
            if set(v for v, p in zip(vals, present) if p) - set(domain):
                raise ProtocolError(f"party {me} has values of '{spec.sensitive}' outside the given sensitive domain")
        else:
            domain = sorted({v for v, p in zip(vals, present) if p})
        index = {v: i for i, v in enumerate(domain)}
        sens_codes = np.fromiter((index.get(v, -1) if p else -1 for v, p in zip(vals, present)), np.int64, n)
        n_sens = len(domain)
    seed = await _group_seed(ch, data_parties)
    party = _DataParty(ch, hs, local, spec, layout, seed, sens_codes, n_sens, grid)
    requests = 0
    while True:
        req = json.loads(await ch.recv(layout.helper, "pubv/req"))
        op = req.get("op")
        if op == "eval":
            nodes = [int(x) for x in req["nodes"]]
            if not nodes or any(not 0 <= i < grid.N for i in nodes) or len(nodes) * n > MAX_BATCH_ROWS * 2:
                raise ProtocolError("the helper asked for nodes outside the lattice")
            requests += 1
            payload = await asyncio.to_thread(party.labels, nodes)
            await ch.send(layout.helper, "pubv/labels", payload)
        elif op == "release":
            node = int(req["node"])
            if not 0 <= node < grid.N:
                raise ProtocolError("the helper chose a node outside the lattice")
            msg, keys = await asyncio.to_thread(party.release, node)
            await ch.send(layout.helper, "pubv/cipher", msg)
            levels = [int(x) for x in grid.levels[node]]
            out = {
                "levels": levels,
                "n": int(req["n"]),
                "n_aligned": n,
                "keys": keys,
                "stats": dict(req.get("stats", {}), requests=requests, seconds=time.perf_counter() - t0),
                "revealed": _revealed(spec, int(req["n"]), n),
            }
            if domain is not None:
                out["sensitive_values"] = domain
            return out
        elif op == "abort":
            raise ProtocolError(str(req.get("why", "the helper stopped the session")))
        else:
            raise ProtocolError("unknown request from the helper")


async def _run_helper(ch, spec, layout, data_parties, grid, hs, say, t0) -> dict:
    sizes = {p: int(json.loads(await ch.recv(p, "pubv/n"))["n"]) for p in data_parties}
    n_all = sizes[data_parties[0]]
    helper = _Helper(spec, n_all, len(hs))
    has_sens = spec.sensitive is not None
    # a data party's cells count only its own QIs; a party with none sends one label per row

    async def abort(why: str) -> None:
        for p in data_parties:
            await ch.send(p, "pubv/req", json.dumps({"op": "abort", "why": why}).encode())
        raise ProtocolError(why)

    async def ask(nodes: list[int]) -> list[_NodeStats]:
        body = json.dumps({"op": "eval", "nodes": nodes}).encode()
        await asyncio.gather(*(ch.send(p, "pubv/req", body) for p in data_parties))
        got = await asyncio.gather(*(ch.recv(p, "pubv/labels") for p in data_parties))
        parsed = []
        for p, payload in zip(data_parties, got):
            lab, sens, counts, losses = unpack_arrays(payload)
            if lab.shape != (len(nodes) * n_all,) or counts.shape != (len(nodes),):
                raise ProtocolError(f"party {p} sent labels of the wrong shape")
            if lab.dtype not in (np.int16, np.int32) or (len(sens) and sens.dtype != lab.dtype):
                raise ProtocolError(f"party {p} sent labels of the wrong type")
            parsed.append((lab.reshape(len(nodes), n_all).astype(np.int64), sens.astype(np.int64), counts, losses))
        for p, (lab, _s, counts, loss) in zip(data_parties, parsed):
            if (spec.metric == "ncp" and len(loss) != int(counts.sum())) or (
                lab.size and (int(lab.min()) < -1 or (lab.max(axis=1) >= counts).any())
            ):
                raise ProtocolError(f"party {p} sent labels outside their range")
        out = []
        for t in range(len(nodes)):
            node_labels, node_losses = [], []
            node_sens = None
            for p, (lab, s, counts, loss) in zip(data_parties, parsed):
                node_labels.append(lab[t])
                if spec.metric == "ncp":
                    off = int(counts[:t].sum())
                    node_losses.append(loss[off : off + int(counts[t])])
                else:
                    node_losses.append(np.zeros(0, np.uint64))
                if has_sens and spec.l is not None and p == layout.sensitive_owner:
                    node_sens = s.reshape(len(nodes), n_all)[t]
            widths = [int(c[t]) for _, _, c, _ in parsed]
            out.append(helper.evaluate(node_labels, widths, node_losses, node_sens))
        return out

    within = np.zeros(grid.N, dtype=bool)
    ok = np.zeros(grid.N, dtype=bool)
    evaluated = np.zeros(grid.N, dtype=bool)
    best: tuple[tuple, int, np.ndarray] | None = None  # (key, node, per-position status) of the best so far
    by_height: dict[int, list[int]] = {}
    for i in range(grid.N):
        by_height.setdefault(grid.height[i], []).append(i)
    requests = 0
    if len(set(sizes.values())) != 1:
        await abort("the data parties hold different numbers of aligned rows")
    for h in sorted(by_height, reverse=True):
        cand = [i for i in by_height[h] if all(within[s] for s in grid.succ[i])]
        if not cand:
            break
        per = max(1, MAX_BATCH_ROWS // max(1, n_all))
        for b in range(0, len(cand), per):
            nodes = cand[b : b + per]
            res = await ask(nodes)
            requests += 1
            if helper.n == 0:
                await abort("the aligned tables have no row in common")
            if spec.k > helper.n:
                await abort(f"k = {spec.k} is larger than the {helper.n} rows of the joined table")
            for i, r in zip(nodes, res):
                evaluated[i] = True
                within[i], ok[i] = r.within, r.ok
                if r.ok:  # only the best node's row status is kept (memory: one byte per row)
                    first = (r.ncp, r.dm) if spec.metric == "ncp" else (r.dm,)
                    key = (*first, grid.height[i], tuple(int(x) for x in grid.levels[i]))
                    if best is None or key < best[0]:
                        assert r.status is not None
                        best = (key, i, r.status)
        say(f"publish: level {h}: {len(cand)} nodes evaluated, {int(within[by_height[h]].sum())} within the budget")
    sat = [i for i in range(grid.N) if ok[i]]
    if best is None:
        await abort("no full-domain generalization satisfies the privacy models within the suppression budget")
    assert best is not None
    _, chosen, status = best
    levels = [int(x) for x in grid.levels[chosen]]
    say(f"publish: chosen node {tuple(levels)} of {len(sat)} satisfying nodes")
    st = {
        "nodes_in_lattice": grid.N,
        "evaluated": int(evaluated.sum()),
        "within_budget": int(within.sum()),
        "satisfying_nodes": len(sat),
        "batches": requests,
    }
    body = json.dumps({"op": "release", "node": chosen, "n": helper.n, "stats": st}).encode()
    await asyncio.gather(*(ch.send(p, "pubv/req", body) for p in data_parties))
    got = await asyncio.gather(*(ch.recv(p, "pubv/cipher") for p in data_parties))
    kept = np.flatnonzero(status == 0)
    star = np.flatnonzero(status == 1) if spec.suppressed_rows != "drop" else np.zeros(0, np.int64)
    release: dict = {
        "n_positions": n_all,
        "kept": _b64(kept.astype("<i8")),
        "star": _b64(star.astype("<i8")),
        "cells": {},
        "sensitive": None,
    }
    for p, payload in zip(data_parties, got):
        arrs = unpack_arrays(payload)
        if arrs[0].shape != (n_all * 8,):
            raise ProtocolError(f"party {p} sent a release of the wrong shape")
        release["cells"][p] = _b64(arrs[0].reshape(n_all, 8)[kept])
        if has_sens and p == layout.sensitive_owner:
            if len(arrs) < 2 or arrs[1].shape != (n_all * 4,):
                raise ProtocolError(f"party {p} sent no sensitive values")
            sv = arrs[1].reshape(n_all, 4)
            release["sensitive"] = {"kept": _b64(sv[kept]), "star": _b64(sv[star])}
    st["seconds"] = time.perf_counter() - t0
    return {
        "levels": levels,
        "n": helper.n,
        "stats": st,
        "revealed": _revealed(spec, helper.n, n_all),
        "release": release,
    }


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _unb64(s: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype=np.uint8)


def decrypt_release(
    hierarchies: Sequence[Hierarchy],
    spec: JointPublishSpec,
    layout: VerticalLayout,
    replies: dict[str, dict],
):
    """The analyst's side: ``(rows, node codes of the kept rows)`` from the helper's ciphertexts and
    each data party's keys. ``rows``: the QIs labelled at the chosen node, ``*`` rows for the
    suppressed (none with ``'drop'``), the sensitive column — kept rows first, each part in position
    order (a random order no record can be linked to; shuffle before writing). ``node codes``:
    ``(kept, q)`` hierarchy node codes, QI order of ``spec``."""
    import pandas as pd

    from anonymize.publish.fulldomain.cells import cell_codes

    rel = replies[layout.helper]["release"]
    n_pos = int(rel["n_positions"])
    kept = _unb64(rel["kept"]).view("<i8")
    star = _unb64(rel["star"]).view("<i8")
    if (kept.size and (kept.min() < 0 or kept.max() >= n_pos)) or (
        star.size and (star.min() < 0 or star.max() >= n_pos)
    ):
        raise ProtocolError("the helper's release names positions outside the table")
    by_name = {h.name: h for h in hierarchies}
    index = {c: j for j, c in enumerate(spec.qis)}
    codes = np.zeros((len(kept), len(spec.qis)), dtype=np.int64)
    levels = [0] * len(spec.qis)
    for p, ct in rel["cells"].items():
        keys = replies[p]["keys"]
        qis = list(keys["qis"])
        if not qis:
            continue
        stream = _xor_stream(bytes.fromhex(keys["cells_key"]), np.zeros(n_pos * 8, np.uint8)).reshape(n_pos, 8)
        raw = _unb64(ct).reshape(-1, 8)
        if raw.shape[0] != len(kept):
            raise ProtocolError(f"the helper's release holds {raw.shape[0]} rows of party {p}, not {len(kept)}")
        cells = np.bitwise_xor(raw, stream[kept]).copy().view("<i8").reshape(-1)
        lv = [int(x) for x in keys["levels"]]
        part = cell_codes([by_name[c] for c in qis], lv, cells)
        for t, c in enumerate(qis):
            codes[:, index[c]] = part[:, t]
            levels[index[c]] = lv[t]
    cols = {}
    for j, c in enumerate(spec.qis):
        lab = by_name[c].labels[levels[j]][codes[:, j]]
        cols[c] = np.concatenate([np.asarray(lab, dtype=object), np.full(len(star), "*", dtype=object)])
    out = pd.DataFrame(cols)
    if spec.sensitive is not None:
        owner = layout.sensitive_owner
        if owner is None or rel["sensitive"] is None:
            raise ProtocolError("the release has no sensitive values")
        stream = _xor_stream(bytes.fromhex(replies[owner]["keys"]["sensitive_key"]), np.zeros(n_pos * 4, np.uint8))
        stream = stream.reshape(n_pos, 4)
        dom = np.asarray(list(replies[owner]["sensitive_values"]), dtype=object)
        parts = []
        for which, pos in (("kept", kept), ("star", star)):
            sv = np.bitwise_xor(_unb64(rel["sensitive"][which]).reshape(-1, 4), stream[pos]).copy().view("<i4")
            sv = sv.reshape(-1)
            if sv.size and (sv.min() < 0 or sv.max() >= len(dom)):
                raise ProtocolError("a sensitive value of the release is outside the domain")
            parts.append(dom[sv])
        out[spec.sensitive] = np.concatenate(parts)
    return out, codes


def _revealed(spec: JointPublishSpec, n: int, n_aligned: int) -> list[str]:
    lines = [
        f"all parties: the joined table's row count n = {n}"
        + (f" (of {n_aligned} aligned rows)" if n_aligned != n else ""),
        "helper: for every node it evaluates, the sizes of the joined classes and of each data party's own "
        "classes, and with l-diversity the rows per (class, sensitive value) — under fresh pseudonyms and a fresh "
        "row order per node (it learns no value, no record, and cannot link a row across nodes)",
    ]
    if spec.metric == "ncp":
        lines.append(
            "helper: with NCP, the loss of each party's pseudonymous classes (a function of their generalized "
            "values under the public hierarchies, which can tell classes of unequal loss apart)"
        )
    lines += [
        "data parties: the nodes the helper asks them for (every node whose direct generalizations are all "
        "within the budget, so the within-budget bit of each node evaluated) and the chosen node",
        "analyst: the release (the kept rows, the suppressed rows' sensitive values unless dropped) and the "
        "sensitive domain of the party holding that column; from the helper only ciphertexts' positions in a "
        "random order no record can be linked to",
        "nothing else, unless the helper colludes with a data party or with the analyst (semi-honest)",
    ]
    return lines
