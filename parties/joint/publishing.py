"""Joint publishing of horizontally partitioned data: the optimal full-domain release of the pooled
table, found over secret-shared frequency sets.

Problem
-------
N ≥ 2 parties hold different rows of one table (same columns); three parties compute (with two
data parties, a third *compute-only* party that holds no rows joins them). The analyst wants the release that
an optimal full-domain search (Flash, Incognito, Samarati: every one finds the same satisfying
nodes) would publish from the pooled table under k-anonymity and distinct l-diversity with tuple
suppression — without anyone pooling the rows. Distributed k-anonymity over horizontally
partitioned data: Zhong, Yang, Wright, "Privacy-enhancing k-anonymization of customer data", PODS
2005; Jurczyk, Xiong, "Distributed anonymization: achieving privacy for both data subjects and data
providers", DBSec 2009. Here the search is exact and reveals one or two bits per node.

Construction
------------
* **Public cells.** For a node L the cells are all tuples of hierarchy nodes at L
  (:mod:`anonymize.publish.fulldomain.cells`); each party counts its rows into that dense vector
  (per sensitive value when l-diversity is asked), so the pooled frequency set is the sum of the
  parties' vectors, empty cells included — nobody learns which cells are empty.
* **Three-party computation.** The vectors are secret-shared among three computing parties (the
  first three of the session) with replicated secret sharing (:mod:`mpc.replicated`: Araki,
  Furukawa, Lindell, Nof, Ohara, CCS 2016; comparisons by bit decomposition as in ABY3, Mohassel &
  Rindal, CCS 2018); further parties only contribute shares. Per cell: ``fail = [c < k] ∨ [distinct
  sensitive values < l]``; per node: the suppressed rows ``S = Σ c·fail`` and ``within =
  [S ≤ MaxSup]``. S comes from additive pieces of the counts (each computing party's own counts,
  plus its pieces of the other parties'): with l-diversity or NCP each computing party sends one
  masked ring element per cell (:meth:`mpc.replicated.RSS3.mul_bit_additive`) and the per-node sums
  are reshared, where injecting the fail bits into the ring and inputting the counts as shares cost
  about 2.3 elements per cell; the kept counts c − c·fail of the satisfying nodes' cells are then
  reshared from the same pieces for DM and NCP
  (Samarati's MaxSup = ⌊max_suppression·n⌋); with ``suppressed_rows='star'`` also whether the
  all-``*`` group passes the models (``S = 0`` or ``S ≥ k`` and ≥ l distinct values); and
  DM = Σ_{kept} c² + S·n (Bayardo & Agrawal, ICDE 2005).
* **Narrow where the values are small.** ``[c < k]`` is computed on the capped counts
  c' = Σ_p min(c_p, k) — below k exactly when c is, and at most P·k, so a few bits suffice (6
  instead of 17 on Adult with k = 5, in an 8-bit ring). With k-anonymity alone and DM a failing
  cell holds fewer than k rows, so it equals its capped count: ``t = c'·fail`` is exact in the
  capped counts' ring, S is summed there over chunks of ⌊(2^8 − 1)/(k − 1)⌋ cells whose sums are
  lifted to DM's ring (:meth:`mpc.replicated.RSS3.lift`), and the full counts are input only for
  the cells of the nodes that satisfy the models, once their bits are open: DM = Σ c² − Σ t² + S·n
  (Σ_kept c² = Σ c² − Σ t² as t·(c − t) = 0; Σ t² over chunks the same way), each Σ a dot product
  (one ring element per node, :meth:`mpc.replicated.RSS3.segment_dot`). None of this changes
  what is revealed: every party already learns which nodes satisfy the models.
* **Distinct values without rings.** With l-diversity each party's presence bit per (cell,
  sensitive value) is XOR-shared and ORed; the distinct values per cell are a boolean popcount
  over the value planes (a carry-save adder tree) compared with l
  (:meth:`mpc.replicated.RSS3.popcount`, :meth:`mpc.replicated.RSS3.ge_public`). The bits are laid
  out value-major (each value's cells together, the batch padded with empty cells to whole 64-bit
  words), so the value planes are the words themselves, and the ``*`` group's OR over a node's cells
  (groups of up to 64 cells, each node padded to a multiple of its group) halves each group by
  reading its word as two 32-bit (then 16-, 8-bit) integers — local, with no bit unpacking.
* **Top-down, several levels a batch.** "within" is monotone under generalization (k-anonymity and
  distinct l-diversity are monotone under suppression), so a node with a failing generalization
  fails: the levels of the lattice are evaluated from the top, a level's candidate nodes (all
  direct generalizations within) in one batch — a constant number of rounds per batch, not per node.
  While the batch has room (:data:`MAX_BATCH_CELLS`, :data:`MAX_BATCH_ELEMENTS`) the next levels
  join it, each with the nodes whose generalizations are all within or in the batch; such a node
  whose generalization then fails comes out failing — the bit its generalization implies, so
  evaluating it early reveals nothing new (:func:`_next_layers`). This yields "within" for every
  node (the rest are implied failing) and ``ok`` for every node within. The satisfying nodes are
  exactly those Flash's optimum search ranges over
  (:func:`anonymize.publish.fulldomain.optimum.best_node`: every satisfying node).
* **Optimum.** The satisfying node of least DM — or, with ``metric='ncp'``, of least NCP then DM — by
  a secure arg-min (ties: the lower node, then the level vector — deterministic; the pooled search
  breaks DM ties by NCP first, so among nodes of equal DM the two may differ). NCP is linear in the
  kept counts with public per-cell weights (the pooled search's loss tables over the hierarchies), so
  each computing party weighs its shares locally, in fixed point (:data:`NCP_FRACTION_BITS`).
* **Release.** At the chosen node the per-(cell, sensitive value) counts of the kept cells and the
  per-value counts of the suppressed rows are returned to the analyst *as shares*: each computing
  party returns one additive share, the analyst adds them — the parties never see the release.
  The analyst writes one row per counted row, in random order, no party label.

Revealed (the job's ``revealed`` list)
--------------------------------------
* everyone: n (the pooled row count); the sensitive values that occur (a secure set union, unless
  the analyst gave the domain); per node of the lattice whether it is *within* the suppression
  budget (one bit; the bits of nodes below a failing node are implied, and when such a node is
  evaluated in the same batch as its failing generalization its opened bit is that implied 0)
  and, for nodes within, whether it satisfies the models with its ``*`` group (a second bit, only
  with ``'star'``); the chosen node;
* the analyst: the release (its classes and their sensitive values, the suppressed rows'
  sensitive values);
* nothing else — no party's rows, counts or row count — provided no two of the three computing
  parties collude (honest majority, semi-honest).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import hashlib
import json
import math
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from anonymize.publish.fulldomain.cells import CellCounter, domain_size
from anonymize.publish.fulldomain.grid import LatticeGrid
from anonymize.publish.hierarchy import Hierarchy
from anonymize.publish.metrics.cells import CATEGORICAL_LOSSES, cell_losses_of_node, hierarchy_loss_tables
from mpc.channel import Channel, agree
from mpc.errors import ProtocolError
from mpc.replicated import RSS3, Arith, Bool, pack_bits, unpack_bits
from mpc.set_union import secure_set_union

from .named import name_chunks, names_from_chunks

__all__ = [
    "JointPublishSpec",
    "publish_horizontal",
    "combine_release",
    "MAX_BATCH_CELLS",
    "MAX_BATCH_ELEMENTS",
    "SUPPRESSED_ROWS",
]

SUPPRESSED_ROWS = ("star", "drop", "arx")
METRICS = ("dm", "ncp")
MAX_BATCH_CELLS = 1 << 23
"""Cells evaluated in one protocol batch (a level of the lattice is split into batches of whole nodes)."""
MAX_BATCH_ELEMENTS = 1 << 25
"""With l-diversity, (cell, sensitive value) pairs in one batch: fewer, larger batches mean fewer
rounds (every batch costs about 45), which dominate over a WAN (Adult, l = 3, 3 parties: 7 batches
instead of 12 at 2^24, 41.6 s instead of 46.8 s at 50 ms RTT; about 0.4 GB per party)."""
OR_LEVELS = 6
"""Pairwise OR levels before the bit injection that counts the values of a node's '*' group: each
level is one round of one AND bit per pair and halves what the injection (about 20 bits per
element) costs (Adult, l = 3: 3 levels sent 272 MiB per party, 6 levels 245 MiB, for 3 more rounds
a batch on a branch that runs beside the suppressed rows' chain)."""
MAX_NODE_CELLS = 1 << 26
"""A node with more cells than this is refused (its dense vector would be too large to share)."""


@dataclass(frozen=True)
class JointPublishSpec:
    """The public parameters of a joint release (every party must hold the same).

    ``qis`` — quasi-identifiers (a hierarchy each); ``sensitive`` — the sensitive column or None;
    ``k`` — k-anonymity (≥ 1); ``l`` — distinct l-diversity (None or ≥ 1, needs ``sensitive``);
    ``max_suppression`` — fraction of rows that may be suppressed; ``suppressed_rows`` — ``'star'``
    (the ``*`` group must pass the models too), ``'arx'`` (it need not) or ``'drop'`` (left out);
    ``metric`` — ``'dm'`` or ``'ncp'`` (the search's NCP: :mod:`anonymize.publish.fulldomain.node_metrics`,
    categorical flavour ``ncp_categorical``); ``sensitive_values`` — the public sensitive domain, or None
    to agree on it by a secure set union."""

    qis: tuple[str, ...]
    sensitive: str | None = None
    k: int = 2
    l: int | None = None
    max_suppression: float = 0.0
    suppressed_rows: str = "star"
    metric: str = "dm"
    sensitive_values: tuple[str, ...] | None = None
    ncp_categorical: str = "height"
    weights: tuple[float, ...] | None = None

    def check(self) -> None:
        if not self.qis:
            raise ValueError("give at least one quasi-identifier")
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.l is not None and (self.l < 1 or self.sensitive is None):
            raise ValueError("l-diversity needs l >= 1 and a sensitive column")
        if not 0.0 <= self.max_suppression <= 1.0:
            raise ValueError(f"max suppression must be a fraction in [0, 1], got {self.max_suppression}")
        if self.suppressed_rows not in SUPPRESSED_ROWS:
            raise ValueError(f"suppressed rows must be one of {', '.join(SUPPRESSED_ROWS)}")
        if self.metric not in METRICS:
            raise ValueError(f"joint publishing chooses by {', '.join(METRICS)} (got metric '{self.metric}')")
        if self.ncp_categorical not in CATEGORICAL_LOSSES:
            raise ValueError(f"the categorical NCP is one of {', '.join(CATEGORICAL_LOSSES)}")
        if self.weights is not None and (
            len(self.weights) != len(self.qis) or not all(math.isfinite(w) and w >= 0 for w in self.weights)
        ):
            raise ValueError("give one finite weight >= 0 per quasi-identifier")

    def public(self, hierarchies: Sequence[Hierarchy]) -> dict:
        """What every party checks it holds the same of (:func:`mpc.channel.agree`): the parameters
        and the hierarchies' digest."""
        return {
            "qis": list(self.qis),
            "sensitive": self.sensitive,
            "k": self.k,
            "l": self.l,
            "max_suppression": repr(float(self.max_suppression)),
            "suppressed_rows": self.suppressed_rows,
            "metric": self.metric,
            "ncp_categorical": self.ncp_categorical,
            "weights": None if self.weights is None else [repr(float(w)) for w in self.weights],
            "domain": None if self.sensitive_values is None else list(self.sensitive_values),
            "hierarchies": hierarchy_digest(hierarchies),
        }

    def ncp_multipliers(self) -> np.ndarray:
        """Per QI, what its cell losses count in the NCP sum: 1 each (the plain mean, as the pooled
        search sums it), or the weights normalized to sum 1 (the weighted mean,
        :func:`anonymize.publish.metrics.loss.weighted_mean`; all-zero weights: the plain mean)."""
        q = len(self.qis)
        if self.weights is None or sum(self.weights) <= 0:
            return np.ones(q)
        w = np.asarray(self.weights, dtype=np.float64)
        return w / w.sum()


@dataclass
class LocalRows:
    """One party's rows, encoded against the public hierarchies: ``(n, q)`` leaf codes and the
    sensitive values as text (or None)."""

    qi_codes: np.ndarray
    sensitive: Sequence[str] | None = None


def hierarchy_digest(hierarchies: Sequence[Hierarchy]) -> str:
    """SHA-256 over the hierarchies' rows: parties check they hold the same ones."""
    h = hashlib.sha256()
    for hier in hierarchies:
        h.update(json.dumps([hier.name, hier.to_rows()], separators=(",", ":")).encode())
    return h.hexdigest()


def _ring_bits(n: int, metric: str = "dm") -> int:
    """Arithmetic ring: DM ≤ n² must be below half of it (the arg-min compares signed values); NCP's
    fixed-point sums use 64 bits (:data:`NCP_FRACTION_BITS`)."""
    return 32 if metric == "dm" and n * n < (1 << 30) else 64


NCP_FRACTION_BITS = 40
"""Fixed-point NCP: a cell's loss Σ_j loss_j is rounded to a multiple of 2^−F (F at most this, fewer
when n·q would not fit): the joint ranking equals the pooled one unless two nodes' NCPs lie within
n·2^−(F+1) row-attribute losses of each other (ties, which both searches break deterministically)."""


def _ncp_bits(n: int, q: int) -> int:
    """F with (n·q + n)·2^F < 2^61: every NCP numerator and its differences fit the signed 64-bit ring."""
    return max(0, min(NCP_FRACTION_BITS, 61 - (n * (q + 1)).bit_length()))


def _cmp_bits(n: int, *consts: int) -> int:
    """Bits of the comparisons: every compared difference lies in (−2^(b−1), 2^(b−1))."""
    return max(int(n) + max(consts) + 1, 2).bit_length() + 1


async def _sensitive_domain(ch: Channel, spec: JointPublishSpec, local: LocalRows) -> tuple[list[str], str]:
    """The sensitive domain every party uses, and the line saying how it was agreed."""
    if spec.sensitive is None:
        return [], ""
    mine = sorted(set(map(str, local.sensitive or [])))
    if spec.sensitive_values is not None:
        dom = list(spec.sensitive_values)
        if len(set(dom)) != len(dom):
            raise ProtocolError("the sensitive domain names a value twice")
        missing = set(mine) - set(dom)
        flag = b"1" if missing else b"0"
        # a party with values outside the public domain stops the session (without naming them)
        for p in ch.parties:
            if p != ch.me:
                await ch.send(p, "publish/domain-check", flag)
        bad = [p for p in ch.parties if p != ch.me and await ch.recv(p, "publish/domain-check") == b"1"]
        if missing:
            bad.append(ch.me)
        if bad:
            raise ProtocolError(
                f"party {', '.join(sorted(bad))} has values of '{spec.sensitive}' outside the given sensitive domain"
            )
        return dom, f"all parties: nothing to agree on the values of '{spec.sensitive}' (the analyst's public domain)"
    union = await secure_set_union(ch, name_chunks(mine), tag="publish/sensitive-union")
    dom = [str(x) for x in names_from_chunks(union)]
    return dom, (
        f"all parties: the {len(dom)} values of '{spec.sensitive}' that occur at some party, by secure set "
        "union (Kantarcioglu–Clifton 2004; sizes as its docstring states)"
    )


def _or_width(cells: Sequence[int], levels: int) -> int:
    """The groups of cells :func:`_or_cells` ORs by a tree: 2^levels cells, fewer when every node is
    smaller."""
    top = max((int(d) for d in cells), default=1)
    return 1 << max(0, min(levels, (top - 1).bit_length()))


def _padded(cells: Sequence[int], width: int, align: int = 1) -> list[int]:
    """Node sizes rounded up to a multiple of ``width``, the last node's further so that the batch's
    total is a multiple of ``align`` (a multiple of ``width``): the batch's layout, every node's cells
    followed by empty cells (no row is counted there)."""
    out = [-(-int(d) // width) * width for d in cells]
    if out and align > 1:
        out[-1] += -sum(out) % align
    return out


async def _or_cells(rss: RSS3, x: Bool, cells: Sequence[int], S: int, width: int) -> tuple[Bool, list[int]]:
    """OR over each group of ``width`` consecutive cells, per value, of value-major bits ``x``
    (value·total + cell; nodes of ``cells`` cells, each a multiple of ``width``, so no group spans two
    nodes or two values): a tree of log2(width) levels, one AND round each and one bit per pair, the
    halves of every group contiguous, so every rearrangement is a local reshape. Returns the
    per-(value, group) ORs (value-major) and the groups per node. Cuts what a later bit injection
    (B2A) costs by ``width``."""
    if any(int(d) % width for d in cells):
        raise ValueError("every node's cells must be a multiple of the OR width")
    if x.n != S * int(sum(int(d) for d in cells)):
        raise ValueError("expected one bit per (sensitive value, cell)")
    groups = [int(d) // width for d in cells]
    while width > 1:
        a, b = _field_halves(x, width)  # each group a w-bit field of the words
        x = rss.not_(await rss.and_(rss.not_(a), rss.not_(b)))  # a ∨ b
        width //= 2
    return x, groups


#: a field of w bits and its halves, as the unsigned types numpy views the words with
_FIELD_TYPES = {64: (np.uint64, np.uint32), 32: (np.uint32, np.uint16), 16: (np.uint16, np.uint8)}


def _nibble_tables(w: int) -> tuple[np.ndarray, np.ndarray]:
    """For fields of w = 8, 4 or 2 bits (8/w per byte): per byte value, the 4 bits made of its fields'
    low halves (in field order), and of their high halves."""
    b = np.arange(256, dtype=np.uint16)
    h = w // 2
    lo = np.zeros(256, np.uint16)
    hi = np.zeros(256, np.uint16)
    for f in range(8 // w):
        for j in range(h):
            lo |= ((b >> (f * w + j)) & 1) << (f * h + j)
            hi |= ((b >> (f * w + h + j)) & 1) << (f * h + j)
    return lo.astype(np.uint8), hi.astype(np.uint8)


_NIBBLES = {w: _nibble_tables(w) for w in (8, 4, 2)}


def _field_halves(x: Bool, w: int) -> tuple[Bool, Bool]:
    """A one-plane Bool of consecutive w-bit fields (w a power of two from 2 to 64; element j at bit
    j % 64 of word j // 64) split into the fields' low and high halves, each packed again, without
    unpacking bits (local: both components alike). On a little-endian machine a 64-, 32- or 16-bit
    field is one unsigned integer and its halves the two integers it consists of (strided views); a
    byte holding 8/w smaller fields gives 4 bits of low and 4 of high halves (two 256-entry tables),
    and two bytes' nibbles make one byte."""
    fields = x.n // w
    if x.width != 1 or x.n % w or w < 2 or w & (w - 1) or w > 64:
        raise ValueError(f"expected one plane of whole {w}-bit fields")
    nbytes = fields * w // 8 if w >= 8 else -(-fields * w // 8)

    def split(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        by = words[0].view(np.uint8)[:nbytes]
        if w in _FIELD_TYPES:
            full, half = _FIELD_TYPES[w]
            parts = by.view(full).view(half)
            return _packed(parts[0::2]), _packed(parts[1::2])
        lo_t, hi_t = _NIBBLES[w]
        if nbytes % 2:
            by = np.concatenate([by, np.zeros(1, np.uint8)])
        lo, hi = lo_t[by], hi_t[by]
        return _packed(lo[0::2] | (lo[1::2] << 4)), _packed(hi[0::2] | (hi[1::2] << 4))

    (alo, ahi), (blo, bhi) = split(x.a), split(x.b)
    n = fields * (w // 2)
    return Bool(alo, blo, n), Bool(ahi, bhi, n)


def _packed(v: np.ndarray) -> np.ndarray:
    """Unsigned integers' bytes as one plane of uint64 words (zero-padded to whole words)."""
    v = np.ascontiguousarray(v)
    out = np.zeros(-(-v.nbytes // 8) * 8, np.uint8)
    out[: v.nbytes] = v.view(np.uint8)
    return out.view(np.uint64)[None, :]


@dataclass
class _StarCheck:
    """What the deferred '*' group check of a batch needs (:meth:`_Circuit.star_ok`): the fail bits per
    cell, the presence bits per (value, cell), value-major, and per node the bits [S = 0] and [S ≥ k]."""

    fail: Bool
    present: Bool
    empty: Bool
    big: Bool
    or_width: int


@dataclass
class _Batch:
    """A batch of nodes as one party holds it: its own counts per cell (plain) and the shares of the
    pooled ones (None on a party that only contributes, or when not input)."""

    local: np.ndarray
    counts: Arith | None
    capped: Arith | None
    hist: Arith | Bool | None
    or_width: int = 1
    pieces: np.ndarray | None = None
    """Unless :attr:`_Circuit.lean`: this computing party's additive piece of the pooled counts."""


def _segment_sums(v: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sums of ``v`` over the segments beginning at ``starts`` (non-empty segments), in v's ring."""
    return np.add.reduceat(v, starts, dtype=v.dtype) if len(v) else np.zeros(len(starts), v.dtype)


def _starts(sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    """Where each of consecutive groups of ``sizes`` elements starts (int64)."""
    return np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))[:-1]]).astype(np.int64)


def _rank_in_group(sizes: np.ndarray) -> np.ndarray:
    """0, 1, ..., size − 1 for each of consecutive groups of ``sizes`` elements, concatenated."""
    return np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(_starts(sizes), sizes)


def _cells_of(sizes: Sequence[int] | np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Positions, in a batch of nodes with ``sizes`` cells, of the cells of the nodes with ``keep``."""
    sizes_a = np.asarray(sizes, dtype=np.int64)
    keep = np.asarray(keep, dtype=bool)
    sel = sizes_a[keep]
    return np.repeat(_starts(sizes_a)[keep], sel) + _rank_in_group(sel)


def _planes_of(x: Bool, S: int) -> Bool:
    """Value-major bits (value·m + cell, m a multiple of 64) of a one-plane Bool as S planes over the
    cells: the same words, reshaped (no copy)."""
    m = x.n // S
    if m % 64 or x.width != 1:
        raise ValueError("value-major planes need one plane of a multiple of 64 cells per value")
    return Bool(x.a.reshape(S, -1), x.b.reshape(S, -1), m)


def _tiled(x: Bool, S: int) -> Bool:
    """A one-plane Bool over cells (a multiple of 64) repeated for each of S values, value-major
    (local: the words, tiled)."""
    if x.n % 64 or x.width != 1:
        raise ValueError("tiling needs one plane of a multiple of 64 cells")
    return Bool(np.tile(x.a, (1, S)), np.tile(x.b, (1, S)), x.n * S)


def _sum_value_major(x: Arith, groups: Sequence[int], S: int) -> Arith:
    """Per node and value (node-major: node·S + value), the sum over the node's ``groups`` of
    value-major ``x`` (value·G + group; local, the ring wraps)."""
    g = np.asarray(groups, dtype=np.int64)
    starts = _starts(g)

    def f(v: np.ndarray) -> np.ndarray:
        if not g.size:
            return v[:0]
        return np.ascontiguousarray(np.add.reduceat(v.reshape(S, -1), starts, axis=1, dtype=v.dtype).T).reshape(-1)

    return Arith(f(x.a), f(x.b), x.bits)


def _value_planes(x: Bool, S: int) -> Bool:
    """Cell-major bits (cell·S + value) of a one-plane Bool as S planes (one per value) over the cells
    (local: both components rearranged the same way)."""
    m = x.n // S

    def planes(words: np.ndarray) -> np.ndarray:
        return pack_bits(np.ascontiguousarray(unpack_bits(words[0], x.n).reshape(m, S).T))

    return Bool(planes(x.a), planes(x.b), m)


def _sum_groups(x: Arith, size: int) -> Arith:
    """Sums of consecutive groups of ``size`` elements (local; the ring wraps)."""
    m = len(x) // size
    return Arith(
        x.a.reshape(m, size).sum(axis=1, dtype=x.a.dtype), x.b.reshape(m, size).sum(axis=1, dtype=x.b.dtype), x.bits
    )


class _Circuit:
    """The per-batch computation on shares (one instance per job).

    Rings: counts and DM in Z_2^R (R = 32 while n² < 2^30, else 64); capped counts (and, when
    :attr:`lean`, the suppressed rows per cell) in Z_2^Rk (8 or 16 bits); the release's per-value
    counts in Z_2^16 when the comparisons fit (they never exceed n); the '*' group's distinct-value
    counts in Z_2^8 (or 16). During the search the presence bits are boolean and distinct values per
    cell a boolean popcount. Comparisons look at the low ``ell`` bits only
    (:meth:`mpc.replicated.RSS3.ltz`)."""

    def __init__(self, rss: RSS3, spec: JointPublishSpec, n: int, n_sens: int, n_parties: int = 3):
        self.rss, self.spec, self.n, self.S = rss, spec, n, n_sens
        # during the search a (cell, value) needs only whether some party has a row there: each party
        # inputs its own presence bit, XOR-shared, and the bits are ORed
        self.max_sup = int(math.floor(spec.max_suppression * n + 1e-9))
        self.R = _ring_bits(n, spec.metric)
        self.ell = _cmp_bits(n, spec.k, spec.l or 0, self.max_sup + 1, n_sens + 1)
        self.Rh = 16 if self.ell <= 16 else self.R
        self.ell_d = _cmp_bits(n_sens, spec.l or 0)
        self.Rd = 8 if self.ell_d <= 8 else 16 if self.ell_d <= 16 else 32
        self.use_hist = spec.l is not None
        self.star = spec.suppressed_rows == "star" and self.max_sup > 0
        # [c < k] needs only min(c_p, k) per party: their sum is below k exactly when c is, and lies in
        # 0..P·k, so the comparison looks at a few bits (6 for k = 5 and 3 parties) instead of log2 n + 2
        self.ell_k = _cmp_bits(min(n_parties * spec.k, n), spec.k)
        self.capped = self.ell_k < self.ell
        self.Rk = 8 if self.ell_k <= 8 else 16 if self.ell_k <= 16 else self.R
        # k-anonymity alone, by DM: a failing cell's count is below k, so it equals its capped count and
        # t = c·fail < k is computed on the capped counts, in their ring; sums of G such values fit it,
        # so S comes from per-chunk sums lifted to ring R (:meth:`mpc.replicated.RSS3.lift`), Σ t² the
        # same way from chunks of G2; the full counts (ring R) are input only for the satisfying nodes'
        # cells, for Σ c² (DM = Σ c² − Σ t² + S·n, as t·(c − t) = 0)
        room = (1 << self.Rk) - 1
        km1 = max(spec.k - 1, 1)
        self.G, self.G2 = room // km1, room // (km1 * km1)
        self.lean = (
            spec.l is None and spec.metric == "dm" and self.capped and self.Rk <= 16 and self.G2 >= 1 and self.R >= 32
        )
        # otherwise S = Σ c·fail from additive pieces of the counts (:meth:`mpc.replicated.RSS3.mul_bit_additive`:
        # one ring element per cell and party, where injecting the fail bits and inputting the counts as
        # RSS cost about 2.3); the counts are then input as RSS only when [c < k] needs them (not capped)
        # with l-diversity and star, the '*' group's per-value check (about 3 bits per cell and value) runs
        # after the budget bits are open, for the nodes within only, beside the next batch
        self.deferred_star = self.star and self.use_hist

    async def inputs(
        self,
        counter: CellCounter,
        nodes: Sequence,
        hist: bool,
        presence: bool = False,
        full: bool = True,
        sizes: Sequence[int] | None = None,
        or_width: int = 1,
        pieces: bool = False,
    ) -> _Batch:
        """Every party's counts for ``nodes`` summed into shares: per cell (ring R; not with ``full=False``);
        the capped counts Σ_p min(c_p, k) per cell (ring Rk, when they make [c < k] narrower); with
        ``hist`` per cell and sensitive value (ring Rh) — or with ``presence`` each party's bit "I
        have a row there", XOR-shared (a Bool with one plane per party, value-major: value·cells +
        cell, the batch's cells a multiple of 64), all the search's checks need; with ``pieces`` the pooled counts as
        additive pieces (:meth:`mpc.replicated.RSS3.input_additive`). The input rounds run concurrently.
        With ``sizes`` node j takes ``sizes[j]`` cells, its own first and then empty ones (a multiple of
        ``or_width``, for :func:`_or_cells`)."""
        rss = self.rss
        pres = None
        if hist and presence:  # the cell numbers computed once for both; presence value-major
            cvec, pres = counter.counts_and_presence(nodes, sizes)
        else:
            cvec = counter.counts(nodes, sizes=sizes, dtype=counter.count_dtype)
        jobs: list[Coroutine[Any, Any, Arith | Bool | np.ndarray | None]] = []
        if full:
            jobs.append(rss.input_sum(cvec, self.R))
        if pieces:
            jobs.append(rss.input_additive(cvec, self.R))
        if self.capped:
            cap = cvec.dtype.type(min(self.spec.k, np.iinfo(cvec.dtype).max))  # k in the counts' own type
            jobs.append(rss.input_sum(np.minimum(cvec, cap), self.Rk))
        if hist:
            # with presence each party's 0/1 "I have a row there" bits, XOR-shared, one plane per party
            if presence:
                jobs.append(rss.input_bits(pres))
            else:
                jobs.append(rss.input_sum(counter.counts(nodes, hist=True), self.Rh))
        got = list(await asyncio.gather(*jobs))
        c = got.pop(0) if full else None
        piece = got.pop(0) if pieces else None
        capped = got.pop(0) if self.capped else None
        h = got.pop(0) if hist else None
        assert isinstance(c, Arith | None) and isinstance(capped, Arith | None) and isinstance(piece, np.ndarray | None)
        assert not isinstance(h, np.ndarray)
        return _Batch(cvec, c, capped, h, or_width, piece)

    async def input_kept(self, batch: _Batch, sizes: Sequence[int], keep: np.ndarray) -> Arith | None:
        """The full counts (ring R) of the cells of the batch's nodes with ``keep``, input by every party
        (:attr:`lean`: the search itself needed only the capped counts)."""
        return await self.rss.input_sum(batch.local[_cells_of(sizes, keep)], self.R)

    async def _lt_k(self, counts: Arith | None, capped: Arith | None) -> Bool:
        """[c < k] per cell, on the capped counts when there are (:attr:`ell_k` bits)."""
        if capped is not None:
            return await self.rss.less_than(capped, self.spec.k, self.ell_k)
        assert counts is not None
        return await self.rss.less_than(counts, self.spec.k, self.ell)

    async def fail_bits(
        self, counts: Arith | None, capped: Arith | None, hist: Arith | Bool | None
    ) -> tuple[Bool, Bool | None]:
        """Per cell the shared bit ``fail`` = [c < k] ∨ [distinct values < l], and with l-diversity
        the bit [h ≥ 1] per cell and value (``hist`` counts rows, an :class:`Arith`; or it holds each
        party's presence bits, a :class:`Bool`, whose OR it is)."""
        rss, spec = self.rss, self.spec
        if hist is None or spec.l is None:
            return await self._lt_k(counts, capped), None
        S = self.S

        async def diversity() -> tuple[Bool, Bool]:
            if isinstance(hist, Bool):  # presence bits, value-major (value·cells + cell)
                present = await rss.or_planes(hist)
                planes = _planes_of(present, S)
            else:  # counts, cell-major (cell·S + value)
                present = rss.not_(await rss.less_than(hist, 1, self.ell))  # [h ≥ 1]
                planes = _value_planes(present, S)
            # distinct values per cell: a boolean popcount over the S value planes (about one AND bit
            # per plane), compared with l — not a ring element per (cell, value) as injecting would cost
            ge = await rss.ge_public(await rss.popcount(planes), int(spec.l or 0))
            return rss.not_(ge), present

        # [c < k] (one step, then its own sub-rounds) runs beside the whole diversity chain
        lt_k, (lt_l, present) = await asyncio.gather(self._lt_k(counts, capped), diversity())
        # fail = lt_k ∨ lt_l = ¬(¬lt_k ∧ ¬lt_l)
        return rss.not_(await rss.and_(rss.not_(lt_k), rss.not_(lt_l))), present

    async def evaluate(self, batch: _Batch, sizes: Sequence[int]):
        """``(within, ok, shares, star)`` of a batch: the bits per node (opened to every party; ``ok`` is
        None with :attr:`deferred_star`, whose :meth:`star_ok` opens it later from ``star``, the shares
        it needs), and on computing parties the ``shares`` ``(sup per node, per cell)`` the DM of
        satisfying nodes needs: per cell t = c·fail in ring Rk when :attr:`lean`, else this party's
        additive piece of the kept counts c − c·fail (ring R)."""
        rss, spec = self.rss, self.spec
        nodes = len(sizes)
        counts, capped, hist = batch.counts, batch.capped, batch.hist
        if rss.idx is None:  # a party that only contributes: it takes part in opening the bits
            got = await rss.open(None, to="all")
            b = np.asarray(got, dtype=bool).reshape(-1)
            if self.deferred_star:
                return b, None, None, None
            if self.star:
                return b[:nodes], b[nodes:], None, None
            return b, b.copy(), None, None
        starts = _starts(sizes)
        fail, present = await self.fail_bits(counts, capped, hist)

        async def suppressed() -> tuple[Arith | np.ndarray, Arith]:
            if self.lean:
                assert capped is not None
                t = await rss.mul_bit(fail, capped)  # t = c·fail < k: exact in ring Rk
                return t, await self._lifted_sums(t, sizes, self.G)
            # S = Σ fail·c per node from the counts' additive pieces: one masked ring element per cell
            # and party, then the per-node sums reshared (one element per node)
            assert batch.pieces is not None
            failed = await rss.mul_bit_additive(fail, batch.pieces, self.R)
            sup = await rss.reshare_additive(_segment_sums(failed, starts), self.R)
            return batch.pieces - failed, sup  # the kept counts' pieces, for DM / NCP later

        sup_cells, sup = await suppressed()
        if not self.star:
            opened = await rss.open(await rss.less_than(sup, self.max_sup + 1, self.ell), to="all")  # [S ≤ MaxSup]
            w = np.asarray(opened, dtype=bool)
            return w, w.copy(), (sup, sup_cells), None
        consts = [np.full(nodes, self.max_sup + 1), np.ones(nodes), np.full(nodes, spec.k)]
        lt = await rss.less_than(rss.concat([sup, sup, sup]), np.concatenate(consts).astype(np.int64), self.ell)
        within = rss.bool_take(lt, np.arange(nodes))  # [S < MaxSup + 1]
        empty = rss.bool_take(lt, np.arange(nodes, 2 * nodes))
        big = rss.not_(rss.bool_take(lt, np.arange(2 * nodes, 3 * nodes)))
        if self.deferred_star:
            # the '*' group's distinct values are checked later, for the nodes within only (:meth:`star_ok`)
            w = np.asarray(await rss.open(within, to="all"), dtype=bool)
            assert present is not None
            return w, None, (sup, sup_cells), _StarCheck(fail, present, empty, big, batch.or_width)
        star_ok = rss.not_(await rss.and_(rss.not_(empty), rss.not_(big)))  # empty ∨ big
        ok = await rss.and_(within, star_ok)
        bits = await rss.open(rss.bool_concat([within, ok]), to="all")
        b = np.asarray(bits, dtype=bool)
        return b[:nodes], b[nodes:], (sup, sup_cells), None

    async def star_ok(
        self, rss: RSS3, check: _StarCheck | None, sizes: Sequence[int], within: np.ndarray
    ) -> np.ndarray:
        """With :attr:`deferred_star`, per node of a batch whether it satisfies the models (opened to every
        party): the nodes ``within`` the budget whose '*' group is empty or holds at least k rows and l
        distinct values — checked on the within nodes' cells only (every node's cells are whole
        64-cell words, so they are taken word by word), on ``rss`` (a child engine: it runs beside the
        search's next batch). ``check``: :meth:`evaluate`'s shares (None on a contributing party)."""
        out = np.zeros(len(sizes), dtype=bool)
        sel = np.flatnonzero(within)
        if not sel.size:  # public: every party skips it alike
            return out
        if rss.idx is None:
            out[sel] = np.asarray(await rss.open(None, to="all"), dtype=bool).reshape(-1)
            return out
        assert check is not None
        S = self.S
        words = np.asarray(sizes, dtype=np.int64) // 64
        cols = _cells_of(words, within)  # the within nodes' words
        f, p = check.fail, check.present
        fail = Bool(np.ascontiguousarray(f.a[:, cols]), np.ascontiguousarray(f.b[:, cols]), 64 * len(cols))

        def values(x: np.ndarray) -> np.ndarray:  # value-major: each value's words of the within nodes
            return np.ascontiguousarray(x.reshape(S, -1)[:, cols]).reshape(1, -1)

        present = Bool(values(p.a), values(p.b), S * 64 * len(cols))
        enough = await self._star_diversity(rss, fail, present, [int(sizes[int(i)]) for i in sel], check.or_width)
        big = await rss.and_(rss.bool_take(check.big, sel), enough)
        ok = rss.not_(await rss.and_(rss.not_(rss.bool_take(check.empty, sel)), rss.not_(big)))  # empty ∨ big
        out[sel] = np.asarray(await rss.open(ok, to="all"), dtype=bool).reshape(-1)
        return out

    async def kept(self, pieces: np.ndarray, sizes: Sequence[int], keep: np.ndarray):
        """The cells of the batch's nodes with ``keep`` (unless :attr:`lean`): ``(their counts, their kept
        counts c − fail·c, the kept nodes' indices, their segment offsets)`` — what DM and NCP sum over —
        from this party's additive pieces of the kept counts k = c − c·fail (:meth:`evaluate`), reshared
        (one ring element per cell). Σ_kept c² = Σ k² (k = c or 0), so k stands for both."""
        sel = np.flatnonzero(keep)
        kc = await self.rss.reshare_additive(pieces[_cells_of(sizes, keep)], self.R)
        return kc, kc, sel, _starts(np.asarray(sizes, dtype=np.int64)[sel])

    async def _star_diversity(self, rss: RSS3, fail: Bool, present: Bool, sizes: Sequence[int], width: int) -> Bool:
        """Per node, whether its '*' group (the rows of its failing cells) holds at least l distinct
        sensitive values: value s occurs there iff some failing cell holds it (OR over cells of
        fail ∧ [h ≥ 1]; first over groups of ``width`` cells by :func:`_or_cells`)."""
        S = self.S
        both = await rss.and_(_tiled(fail, S), present)  # value-major
        red, left = await _or_cells(rss, both, sizes, S, width)
        ell2 = _cmp_bits(max(left), 1)
        ring2 = next(b for b in (8, 16, 32, 64) if b >= ell2)  # counts of at most max(left) cells
        per_value = _sum_value_major(await rss.b2a(red, ring2), left, S)  # (node, value)
        occurs = rss.not_(await rss.less_than(per_value, 1, ell2))
        distinct = _sum_groups(await rss.b2a(occurs, self.Rd), S)  # per node
        return rss.not_(await rss.less_than(distinct, self.spec.l, self.ell_d))

    async def _lifted_sums(self, x: Arith, sizes: Sequence[int] | np.ndarray, per: int, square: bool = False) -> Arith:
        """Per node (of ``sizes`` cells) the sum over its cells of x (or, with ``square``, of x²) in ring
        R: computed in x's ring over chunks of at most ``per`` cells (the caller knows a chunk's sum
        fits), the chunks' sums lifted to ring R and added."""
        rss = self.rss
        sizes_a = np.asarray(sizes, dtype=np.int64)
        per_node = -(-sizes_a // per)  # chunks per node
        first = _starts(per_node)  # a node's first chunk
        offsets = np.repeat(_starts(sizes_a), per_node) + _rank_in_group(per_node) * per
        part = await rss.segment_dot(x, x, offsets) if square else rss.segment_sum(x, offsets)
        return rss.segment_sum(await rss.lift(part, self.R), first)

    async def dm(
        self,
        counts: Arith | None,
        sup: Arith,
        sup_cells: Arith,
        sizes: Sequence[int],
        keep: np.ndarray,
        kept: tuple | None = None,
    ) -> Arith:
        """DM = Σ_{kept cells} c² + S·n of the batch's nodes with ``keep`` (one dot product per node;
        ``kept``: :meth:`kept` of them, unless :attr:`lean`).
        When :attr:`lean`, ``counts`` are the full counts of those nodes' cells only
        (:meth:`input_kept`), ``sup_cells`` t = c·fail in ring Rk, and Σ_kept c² = Σ c² − Σ t²
        (t·(c − t) = 0), Σ t² from chunks of :attr:`G2` cells in ring Rk, lifted."""
        rss = self.rss
        assert counts is not None
        if self.lean:
            sizes_a = np.asarray(sizes, dtype=np.int64)
            sel = np.flatnonzero(keep)
            sel_starts = _starts(sizes_a[sel])
            t = rss.take(sup_cells, _cells_of(sizes, keep))
            c2, t2 = await asyncio.gather(
                rss.segment_dot(counts, counts, sel_starts),
                self._lifted_sums(t, sizes_a[sel], self.G2, square=True),
            )
            return rss.add(rss.sub(c2, t2), rss.mul_const(rss.take(sup, sel), self.n))
        assert kept is not None
        c, kept_c, sel, sel_starts = kept
        sq = await rss.segment_dot(kept_c, c, sel_starts)  # Σ c² over the kept cells, per node
        return rss.add(sq, rss.mul_const(rss.take(sup, sel), self.n))

    def ncp(
        self,
        kept: tuple,
        sup: Arith,
        nodes: Sequence,
        sizes: Sequence[int],
        tables: list[list[np.ndarray]],
        fbits: int,
        mult: np.ndarray,
    ) -> Arith:
        """NCP·n·Σm·2^F of the batch's nodes with ``keep``: Σ_{kept cells} c·⌊2^F·Σ_j m_j·loss_j(cell)⌉ +
        S·⌊2^F·Σ_j m_j⌉ with the public multipliers ``mult`` (:meth:`JointPublishSpec.ncp_multipliers`) —
        linear in the shares with public weights, so local (the suppressed cells cost 1 per QI, as in
        :class:`anonymize.publish.fulldomain.node_metrics.NodeMetrics`; ``kept``: :meth:`kept`)."""
        rss = self.rss
        _c, kept_c, sel, sel_starts = kept
        scale = float(1 << fbits)
        weights = []
        for i in sel:  # a node's cells, then the empty cells that pad it to sizes[i] (weight 0)
            w = np.rint(cell_losses_of_node(tables, nodes[int(i)], mult) * scale).astype(np.uint64)
            weights.append(np.concatenate([w, np.zeros(int(sizes[int(i)]) - len(w), np.uint64)]))
        weighted = rss.mul_const(kept_c, np.concatenate(weights))
        sup_weight = int(round(float(mult.sum()) * scale))
        return rss.add(rss.segment_sum(weighted, sel_starts), rss.mul_const(rss.take(sup, sel), sup_weight))


async def publish_horizontal(
    ch: Channel,
    hierarchies: Sequence[Hierarchy],
    local: LocalRows,
    spec: JointPublishSpec,
    *,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Run the joint search and release (module docstring) as one party of ``ch``.

    Every party calls it with its own rows and the same public ``hierarchies`` and ``spec``.
    Returns a dict: ``levels`` (the chosen node), ``n``, ``stats``, ``revealed``, and on each
    computing party its ``share`` of the release counts (:func:`combine_release` adds them)."""
    spec.check()
    t0 = time.perf_counter()
    say = progress or (lambda _m: None)
    if len(ch.parties) < 3:
        raise ProtocolError(
            "joint publishing needs at least 3 parties (three-party computation with an honest majority): "
            "with two data parties, add a compute-only party"
        )
    hs = list(hierarchies)
    if [h.name for h in hs] != list(spec.qis):
        raise ProtocolError("give one hierarchy per quasi-identifier, in order")
    await agree(ch, "publish/params", **spec.public(hs))
    domain, domain_line = await _sensitive_domain(ch, spec, local)
    sens_codes = None
    if spec.sensitive is not None:
        index = {v: i for i, v in enumerate(domain)}
        sens_codes = np.fromiter((index[str(v)] for v in (local.sensitive or [])), dtype=np.int64)
    rss = await RSS3.create(ch, tuple(ch.parties[:3]), tag="publish/rss")
    n_sh = await rss.input_sum(np.array([local.qi_codes.shape[0]], dtype=np.uint64), 64)
    n_open = await rss.open(n_sh, to="all")
    assert n_open is not None
    n = int(n_open[0])
    if n == 0:
        raise ProtocolError("the parties hold no rows")
    if spec.k > n:
        raise ProtocolError(f"k = {spec.k} is larger than the {n} rows of the pooled table")
    circ = _Circuit(rss, spec, n, len(domain), len(ch.parties))
    counter = CellCounter(hs, local.qi_codes, sens_codes, len(domain))
    grid = LatticeGrid([h.height for h in hs])
    within = np.zeros(grid.N, dtype=bool)
    ok = np.zeros(grid.N, dtype=bool)
    evaluated = np.zeros(grid.N, dtype=bool)
    dms: dict[int, tuple[Arith, int]] = {}
    ncps: dict[int, tuple[Arith, int]] = {}
    fbits = _ncp_bits(n, len(hs))
    loss_tables = hierarchy_loss_tables(hs, spec.ncp_categorical) if spec.metric == "ncp" else []
    mult = spec.ncp_multipliers()
    cells_total = cells_ok = cells_within = 0
    by_height: dict[int, list[int]] = {}
    for i in range(grid.N):
        by_height.setdefault(grid.height[i], []).append(i)
    rounds = 0

    async def node_metrics(b: int, batch: _Batch, kept_shares, nodes: list[int], sizes: list[int], o: np.ndarray):
        """DM (and NCP) of the batch's satisfying nodes, on a child engine of its own: it runs while the
        search goes on to the next level (nothing later in the search depends on it)."""
        sub = copy.copy(circ)
        sub.rss = rss.child(f"metrics{b}")
        counts = batch.counts
        if sub.lean:  # every party inputs its counts of the satisfying nodes' cells
            counts = await sub.input_kept(batch, sizes, o)
        if kept_shares is None:
            return
        kept = None
        if not sub.lean:  # the kept counts of these nodes' cells, reshared from their additive pieces
            kept = await sub.kept(kept_shares[1], sizes, o)
            counts = kept[0]
        dm = await sub.dm(counts, kept_shares[0], kept_shares[1], sizes, o, kept)
        for j, i in enumerate(np.asarray(nodes)[o]):
            dms[int(i)] = (dm, j)
        if spec.metric == "ncp":
            assert kept is not None
            lv = [grid.levels[i] for i in nodes]
            nc = sub.ncp(kept, kept_shares[0], lv, sizes, loss_tables, fbits, mult)
            for j, i in enumerate(np.asarray(nodes)[o]):
                ncps[int(i)] = (nc, j)

    def satisfying(nodes: list[int], real: list[int], o: np.ndarray) -> None:
        nonlocal cells_ok
        cells_ok += int(np.asarray(real, dtype=np.int64)[np.asarray(o, dtype=bool)].sum())
        for j, i in enumerate(nodes):
            ok[i] = bool(o[j])

    async def star_then_metrics(b: int, batch: _Batch, kept_shares, nodes, sizes, real, w: np.ndarray, star) -> None:
        o = await circ.star_ok(rss.child(f"star{b}"), star, sizes, w)
        satisfying(nodes, real, o)
        if o.any():
            await node_metrics(b, batch, kept_shares, nodes, sizes, o)

    per_cell = circ.S if circ.use_hist else 1  # with l-diversity a cell is counted per sensitive value

    @functools.cache
    def _cells(i: int) -> int:
        d = domain_size(hs, grid.levels[i])
        if d * per_cell > MAX_NODE_CELLS:
            raise ProtocolError(
                f"node {grid.levels[i]} has {d:,} cells{f' × {per_cell} sensitive values' if per_cell > 1 else ''} "
                f"(more than {MAX_NODE_CELLS:,}): use coarser hierarchies or fewer quasi-identifiers for "
                "joint publishing"
            )
        return d

    pending: list[asyncio.Task] = []
    try:
        heights = sorted(by_height, reverse=True)
        succ = _successors(grid.succ, grid.N)
        cap = MAX_BATCH_ELEMENTS // circ.S if circ.use_hist else MAX_BATCH_CELLS
        pos = 0
        while pos < len(heights):
            # the next level's candidates, then — while the batch has room — the next levels' nodes whose
            # generalizations are all within or in this batch (a bit that a failing generalization implies
            # comes out 0 anyway: "within" is monotone, so evaluating such a node reveals nothing new)
            layers = _next_layers(heights[pos:], by_height, succ, within, lambda i: _cells(i) * per_cell, cap)
            if not layers:
                break
            pos += len(layers)
            sized = [(i, _cells(i)) for _h, cand in layers for i in cand]
            for group in _split(sized, cap):
                nodes = [i for i, _ in group]
                real = [d for _, d in group]
                # the '*' group's per-value OR runs over groups of cells: every node padded with empty
                # cells to a multiple of the group width (about 1 % more cells on Adult)
                width = _or_width(real, OR_LEVELS) if circ.star and circ.use_hist else 1
                # with l-diversity the presence bits are value-major, each value's cells whole words; with the
                # deferred '*' group check every node's cells are whole words (taken word by word)
                sizes = _padded(real, 64 if circ.deferred_star else width, 64 if circ.use_hist else 1)
                batch = await circ.inputs(
                    counter,
                    [grid.levels[i] for i in nodes],
                    circ.use_hist,
                    presence=True,
                    full=not circ.lean and not circ.capped,  # RSS counts only where [c < k] needs them
                    sizes=sizes,
                    or_width=width,
                    pieces=not circ.lean,
                )
                w, o, kept_shares, star = await circ.evaluate(batch, sizes)
                rounds += 1
                cells_total += int(sum(real))
                cells_within += int(np.asarray(real, dtype=np.int64)[np.asarray(w, dtype=bool)].sum())
                for j, i in enumerate(nodes):
                    evaluated[i] = True
                    within[i] = bool(w[j])
                if o is None:  # the '*' group check, then the metrics, beside the next batch
                    pending.append(
                        asyncio.create_task(star_then_metrics(rounds, batch, kept_shares, nodes, sizes, real, w, star))
                    )
                else:
                    satisfying(nodes, real, o)
                    if o.any():
                        pending.append(asyncio.create_task(node_metrics(rounds, batch, kept_shares, nodes, sizes, o)))
                for t in pending:  # a failed one ends the search now
                    if t.done() and t.exception() is not None:
                        raise t.exception()  # type: ignore[misc]
            for h, cand in layers:
                say(
                    f"publish: level {h}: {len(cand)} nodes evaluated, {int(within[by_height[h]].sum())} within the budget"
                )
        await asyncio.gather(*pending)
    finally:
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    t_search = time.perf_counter()
    sat = sorted((i for i in range(grid.N) if ok[i]), key=lambda i: (grid.height[i], grid.levels[i]))
    if not sat:
        raise ProtocolError("no full-domain generalization satisfies the privacy models within the suppression budget")

    def column(vals: dict[int, tuple[Arith, int]]) -> Arith:
        return rss.concat([rss.take(vals[i][0], np.array([vals[i][1]])) for i in sat])

    # NCP first (ties: DM), or DM; then the lower node, the level vector (the order of ``sat``)
    order = [ncps, dms] if spec.metric == "ncp" else [dms]
    keys = None if rss.idx is None else [column(v) for v in order]
    win = await rss.argmin(keys, [circ.R] * len(order))
    t_optimum = time.perf_counter()
    chosen = sat[int(win)]
    levels = tuple(int(x) for x in grid.levels[chosen])
    say(f"publish: chosen node {levels} of {len(sat)} satisfying nodes")
    share = await _release_shares(rss, circ, counter, levels)
    out: dict = {
        "levels": list(levels),
        "n": n,
        "sensitive_values": domain,
        "stats": {
            "nodes_in_lattice": grid.N,
            "evaluated": int(evaluated.sum()),
            "within_budget": int(within.sum()),
            "satisfying_nodes": len(sat),
            "cells_evaluated": cells_total,
            "cells_of_satisfying_nodes": cells_ok,
            "cells_of_nodes_within": cells_within,
            "batches": rounds,
            "seconds": time.perf_counter() - t0,
            # wall seconds of the phases: the search (every batch and its metrics), the arg-min, the release
            "seconds_search": t_search - t0,
            "seconds_optimum": t_optimum - t_search,
            "seconds_release": time.perf_counter() - t_optimum,
        },
        "revealed": _revealed(spec, n, domain_line, int(evaluated.sum()), grid.N, circ.star),
    }
    if share is not None:
        out["share"] = share
    return out


def _split(sized: Sequence[tuple[int, int]], cap: int) -> list[list[tuple[int, int]]]:
    """Whole nodes into batches of at most ``cap`` cells (a larger node gets a batch alone)."""
    out: list[list[tuple[int, int]]] = []
    cur: list[tuple[int, int]] = []
    tot = 0
    for i, d in sized:
        if cur and tot + d > cap:
            out.append(cur)
            cur, tot = [], 0
        cur.append((i, d))
        tot += d
    if cur:
        out.append(cur)
    return out


def _successors(succ: Sequence[Sequence[int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """The direct generalizations of every node as two arrays: (node, generalization) pairs."""
    owner = np.repeat(np.arange(n, dtype=np.int64), [len(succ[i]) for i in range(n)])
    target = np.fromiter((s for i in range(n) for s in succ[i]), dtype=np.int64, count=len(owner))
    return owner, target


def _next_layers(
    heights: Sequence[int],
    by_height: dict[int, list[int]],
    succ: tuple[np.ndarray, np.ndarray],
    within: np.ndarray,
    size: Callable[[int], int],
    cap: int,
) -> list[tuple[int, list[int]]]:
    """The levels one batch evaluates, top-down from ``heights[0]``: that level's candidates (nodes
    whose direct generalizations — ``succ``, :func:`_successors` — are all ``within``), then, while the
    batch's total ``size`` stays within ``cap``, each next level's nodes whose generalizations are all
    within or in the batch. A level whose candidates exceed ``cap`` alone makes the batch (split
    later). An empty list: no candidate left (every lower node fails by monotonicity)."""
    owner, target = succ
    out: list[tuple[int, list[int]]] = []
    inside = np.zeros(len(within), dtype=bool)
    total = 0
    for h in heights:
        settled = np.asarray(within, dtype=bool) | inside
        open_gens = np.bincount(owner[~settled[target]], minlength=len(within))
        nodes = np.asarray(by_height[h], dtype=np.int64)
        cand = [int(i) for i in nodes[open_gens[nodes] == 0]]
        if not cand:
            break
        grown = total + sum(size(i) for i in cand)
        if out and grown > cap:
            break
        out.append((h, cand))
        inside[cand] = True
        total = grown
        if total > cap:
            break
    return out


async def _release_shares(rss: RSS3, circ: _Circuit, counter: CellCounter, levels) -> dict | None:
    """The release at ``levels`` as one additive share per computing party: the count of every
    (kept cell[, sensitive value]) and of the suppressed rows [per sensitive value]."""
    hist = counter.sens is not None
    d = counter.sizes([levels])[0]
    batch = await circ.inputs(counter, [levels], hist)
    counts, capped, h = batch.counts, batch.capped, batch.hist
    if counts is None:  # a contributing party: it holds no share of the release
        return None
    fail, _ = await circ.fail_bits(counts, capped, h if circ.use_hist else None)
    if h is not None:
        assert isinstance(h, Arith)  # the per-value counts (no presence bits at the release)
        S = circ.S
        kept = await rss.mul_bit(rss.not_(rss.bool_take(fail, np.repeat(np.arange(d, dtype=np.int64), S))), h)
        star = rss.sub(h, kept)
        order = np.arange(d * S, dtype=np.int64).reshape(d, S).T.ravel()
        star_v = rss.segment_sum(rss.take(star, order), np.arange(0, d * S, d, dtype=np.int64))
    else:
        kept = await rss.mul_bit(rss.not_(fail), counts)
        star_v = rss.segment_sum(rss.sub(counts, kept), np.array([0], dtype=np.int64))
    # party i holds (x_i, x_{i+1}) of x = x_0 + x_1 + x_2: its additive share is x_i
    return {
        "bits": kept.bits,
        "kept": kept.a.astype(np.uint64).tolist(),
        "suppressed": star_v.a.astype(np.uint64).tolist(),
    }


def combine_release(shares: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Add the computing parties' shares (:func:`publish_horizontal`): ``(kept counts per cell
    [× value], suppressed rows [per value])`` as int64."""
    if len(shares) != 3:
        raise ProtocolError(f"expected the release shares of 3 computing parties, got {len(shares)}")
    bits = {int(s["bits"]) for s in shares}
    if len(bits) != 1:
        raise ProtocolError("the computing parties' release shares disagree on the ring")
    mask = (1 << bits.pop()) - 1
    kept = [np.asarray(s["kept"], dtype=np.uint64) for s in shares]
    sup = [np.asarray(s["suppressed"], dtype=np.uint64) for s in shares]
    if len({len(x) for x in kept}) != 1 or len({len(x) for x in sup}) != 1:
        raise ProtocolError("the computing parties' release shares differ in length")
    k = (kept[0] + kept[1] + kept[2]) & np.uint64(mask)
    s = (sup[0] + sup[1] + sup[2]) & np.uint64(mask)
    return k.astype(np.int64), s.astype(np.int64)


def _revealed(spec: JointPublishSpec, n: int, domain_line: str, evaluated: int, total: int, star: bool) -> list[str]:
    lines = [f"all parties: the pooled row count n = {n}"]
    if domain_line:
        lines.append(domain_line)
    lines.append(
        f"all parties: for {evaluated} of the {total} nodes of the lattice (every node whose direct "
        "generalizations are all within the budget, and nodes evaluated in the same batch as a failing "
        "generalization, whose bit that implies), one bit: rows in failing classes <= MaxSup "
        "(the other nodes fail by monotonicity)"
    )
    if star:
        lines.append(
            "all parties: for the nodes within the budget, one more bit: the '*' group of suppressed rows "
            "satisfies the models"
        )
    lines.append("all parties: the chosen node (the satisfying node of least DM, by secure arg-min)")
    lines.append(
        "analyst: the release — every kept class with its rows' sensitive values, and the suppressed rows' "
        "sensitive values — from additive shares the parties never open"
    )
    lines.append(
        "nothing else about any party's rows, counts or row count, unless two of the three computing "
        f"parties ({'semi-honest, honest majority'}) collude"
    )
    return lines
