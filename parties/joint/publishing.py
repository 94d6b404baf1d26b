"""Joint publishing of horizontally partitioned data: the optimal full-domain release of the pooled
table, found over secret-shared frequency sets.

Problem
-------
N ≥ 3 parties hold different rows of one table (same columns). The analyst wants the release that
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
  sensitive values < l]``; per node: the suppressed rows ``S = Σ c·fail`` and ``within = [S ≤ MaxSup]``
  (Samarati's MaxSup = ⌊max_suppression·n⌋); with ``suppressed_rows='star'`` also whether the
  all-``*`` group passes the models (``S = 0`` or ``S ≥ k`` and ≥ l distinct values); and
  DM = Σ_{kept} c² + S·n (Bayardo & Agrawal, ICDE 2005).
* **Top-down, a level at a time.** "within" is monotone under generalization (k-anonymity and
  distinct l-diversity are monotone under suppression), so a node with a failing generalization
  fails: the levels of the lattice are evaluated from the top, each level's candidate nodes (all
  direct generalizations within) in one batch — a constant number of rounds per level, not per node.
  This yields "within" for every node (the rest are implied failing) and ``ok`` for every node
  within. The satisfying nodes are exactly those Flash's optimum search ranges over
  (:func:`anonymize.publish.fulldomain.optimum.best_node`: every satisfying node).
* **Optimum.** The satisfying node of least DM, by a secure arg-min (ties: the lower node, then the
  level vector — deterministic; the pooled search breaks DM ties by NCP first, so among nodes of
  equal DM the two may differ).
* **Release.** At the chosen node the per-(cell, sensitive value) counts of the kept cells and the
  per-value counts of the suppressed rows are returned to the analyst *as shares*: each computing
  party returns one additive share, the analyst adds them — the parties never see the release.
  The analyst writes one row per counted row, in random order, no party label.

Revealed (the job's ``revealed`` list)
--------------------------------------
* everyone: n (the pooled row count); the sensitive values that occur (a secure set union, unless
  the analyst gave the domain); per node of the lattice whether it is *within* the suppression
  budget (one bit; the bits of nodes below a failing node are implied) and, for nodes within,
  whether it satisfies the models with its ``*`` group (a second bit, only with ``'star'``); the
  chosen node;
* the analyst: the release (its classes and their sensitive values, the suppressed rows'
  sensitive values);
* nothing else — no party's rows, counts or row count — provided no two of the three computing
  parties collude (honest majority, semi-honest).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from anonymize.publish.fulldomain.cells import cell_counts, domain_size
from anonymize.publish.fulldomain.grid import LatticeGrid
from anonymize.publish.hierarchy import Hierarchy
from mpc.channel import Channel, agree
from mpc.errors import ProtocolError
from mpc.replicated import RSS3, Arith, Bool
from mpc.set_union import secure_set_union

from .named import name_chunks, names_from_chunks

__all__ = ["JointPublishSpec", "publish_horizontal", "combine_release", "MAX_BATCH_CELLS", "SUPPRESSED_ROWS"]

SUPPRESSED_ROWS = ("star", "drop", "arx")
METRICS = ("dm",)
MAX_BATCH_CELLS = 1 << 23
"""Cells evaluated in one protocol batch (a level of the lattice is split into batches of whole nodes)."""
MAX_NODE_CELLS = 1 << 26
"""A node with more cells than this is refused (its dense vector would be too large to share)."""


@dataclass(frozen=True)
class JointPublishSpec:
    """The public parameters of a joint release (every party must hold the same).

    ``qis`` — quasi-identifiers (a hierarchy each); ``sensitive`` — the sensitive column or None;
    ``k`` — k-anonymity (≥ 1); ``l`` — distinct l-diversity (None or ≥ 1, needs ``sensitive``);
    ``max_suppression`` — fraction of rows that may be suppressed; ``suppressed_rows`` — ``'star'``
    (the ``*`` group must pass the models too), ``'arx'`` (it need not) or ``'drop'`` (left out);
    ``metric`` — ``'dm'``; ``sensitive_values`` — the public sensitive domain, or None to agree
    on it by a secure set union."""

    qis: tuple[str, ...]
    sensitive: str | None = None
    k: int = 2
    l: int | None = None
    max_suppression: float = 0.0
    suppressed_rows: str = "star"
    metric: str = "dm"
    sensitive_values: tuple[str, ...] | None = None

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


@dataclass
class LocalRows:
    """One party's rows, encoded against the public hierarchies: ``(n, q)`` leaf codes and the
    sensitive values as text (or None)."""

    qi_codes: np.ndarray
    sensitive: Sequence[str] | None = None


@dataclass
class _Batch:
    nodes: list[int]
    sizes: list[int]  # cells per node
    within: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    ok: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    dm: Arith | None = None


def hierarchy_digest(hierarchies: Sequence[Hierarchy]) -> str:
    """SHA-256 over the hierarchies' rows: parties check they hold the same ones."""
    h = hashlib.sha256()
    for hier in hierarchies:
        h.update(json.dumps([hier.name, hier.to_rows()], separators=(",", ":")).encode())
    return h.hexdigest()


def _ring_bits(n: int) -> int:
    """Arithmetic ring: DM ≤ n² must be below half of it (the arg-min compares signed values)."""
    return 32 if n * n < (1 << 30) else 64


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


class _Circuit:
    """The per-batch computation on shares (one instance per job)."""

    def __init__(self, rss: RSS3, spec: JointPublishSpec, n: int, n_sens: int):
        self.rss, self.spec, self.n, self.S = rss, spec, n, n_sens
        self.max_sup = int(math.floor(spec.max_suppression * n + 1e-9))
        self.R = _ring_bits(n)
        self.ell = _cmp_bits(n, spec.k, spec.l or 0, self.max_sup + 1, n_sens + 1)
        self.use_hist = spec.l is not None
        self.star = spec.suppressed_rows == "star" and self.max_sup > 0

    def local_vector(self, hs: Sequence[Hierarchy], local: LocalRows, sens_codes, nodes_levels, hist: bool):
        parts = []
        for lv in nodes_levels:
            if hist:
                parts.append(cell_counts(hs, local.qi_codes, lv, sens_codes, self.S, dtype=np.uint64))
            else:
                parts.append(cell_counts(hs, local.qi_codes, lv, dtype=np.uint64))
        return np.concatenate(parts) if parts else np.zeros(0, np.uint64)

    async def fail_bits(self, x: Arith, sizes: Sequence[int], hist: bool) -> tuple[Arith, Bool]:
        """From the shared vector ``x`` (counts, or counts per sensitive value): the shared counts per
        cell and the shared bit ``fail`` per cell."""
        rss, spec = self.rss, self.spec
        m = int(sum(sizes))
        if not hist:
            lt = await rss.less_than(x, spec.k, self.ell)
            return x, lt
        S = self.S
        counts = rss.segment_sum(x, np.arange(0, m * S, S, dtype=np.int64))
        if spec.l is None:
            return counts, await rss.less_than(counts, spec.k, self.ell)
        # one comparison call: [c < k] for the cells, [h < 1] for every (cell, value)
        both = rss.concat([counts, x])
        consts = np.concatenate([np.full(m, spec.k, np.int64), np.ones(m * S, np.int64)])
        lt = await rss.less_than(both, consts, self.ell)
        lt_k = rss.bool_take(lt, np.arange(m))
        present = rss.not_(rss.bool_take(lt, np.arange(m, m + m * S)))  # [h ≥ 1]
        distinct = rss.segment_sum(await rss.b2a(present, self.R), np.arange(0, m * S, S, dtype=np.int64))
        lt_l = await rss.less_than(distinct, spec.l, self.ell)
        # fail = lt_k ∨ lt_l = ¬(¬lt_k ∧ ¬lt_l)
        fail = rss.not_(await rss.and_(rss.not_(lt_k), rss.not_(lt_l)))
        return counts, fail

    async def evaluate(
        self, x: Arith | None, sizes: Sequence[int], hist: bool
    ) -> tuple[np.ndarray, np.ndarray, Arith | None]:
        """``(within, ok, DM shares)`` per node of a batch whose shared vector is ``x`` (None on a
        party that only contributes: it takes part in the opening of the bits)."""
        rss, spec = self.rss, self.spec
        nodes = len(sizes)
        if x is None:
            got = await rss.open(None, to="all")
            b = np.asarray(got, dtype=bool).reshape(-1)
            if self.star:
                return b[:nodes], b[nodes:], None
            return b, b.copy(), None
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        counts, fail = await self.fail_bits(x, sizes, hist)
        sup_cells = await rss.mul_bit(fail, counts)
        kept = rss.sub(counts, sup_cells)
        sq = await rss.mul(kept, counts)  # c² on kept cells
        sup = rss.segment_sum(sup_cells, starts)
        dm = rss.add(rss.segment_sum(sq, starts), rss.mul_const(sup, self.n))
        if not self.star:
            opened = await rss.open(await rss.less_than(sup, self.max_sup + 1, self.ell), to="all")  # [S ≤ MaxSup]
            w = np.asarray(opened, dtype=bool)
            return w, w.copy(), dm
        consts = [np.full(nodes, self.max_sup + 1), np.ones(nodes), np.full(nodes, spec.k)]
        lt = await rss.less_than(rss.concat([sup, sup, sup]), np.concatenate(consts).astype(np.int64), self.ell)
        within = rss.bool_take(lt, np.arange(nodes))  # [S < MaxSup + 1]
        empty = rss.bool_take(lt, np.arange(nodes, 2 * nodes))
        big = rss.not_(rss.bool_take(lt, np.arange(2 * nodes, 3 * nodes)))
        if spec.l is not None:
            S = self.S
            # the '*' group's histogram: Σ over failing cells of the per-value counts
            cell_of = np.repeat(np.arange(int(sum(sizes)), dtype=np.int64), S)
            star_h = await rss.mul_bit(rss.bool_take(fail, cell_of), x)
            per_node_value = []
            for i in range(nodes):
                lo, hi = int(starts[i]) * S, (int(starts[i]) + sizes[i]) * S
                seg = rss.take(star_h, np.arange(lo, hi, dtype=np.int64))
                # sum over cells per value: reorder value-major, then segment sums
                order = np.arange(hi - lo, dtype=np.int64).reshape(sizes[i], S).T.ravel()
                per_node_value.append(rss.segment_sum(rss.take(seg, order), np.arange(0, hi - lo, sizes[i])))
            hv = rss.concat(per_node_value)  # (nodes·S): value counts of each node's '*' group
            present = rss.not_(await rss.less_than(hv, 1, self.ell))
            distinct = rss.segment_sum(await rss.b2a(present, self.R), np.arange(0, nodes * S, S, dtype=np.int64))
            enough = rss.not_(await rss.less_than(distinct, spec.l, self.ell))
            big = await rss.and_(big, enough)
        star_ok = rss.not_(await rss.and_(rss.not_(empty), rss.not_(big)))  # empty ∨ big
        ok = await rss.and_(within, star_ok)
        bits = await rss.open(rss.bool_concat([within, ok]), to="all")
        b = np.asarray(bits, dtype=bool)
        return b[:nodes], b[nodes:], dm


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
            "joint publishing needs at least 3 parties (three-party computation with an honest majority)"
        )
    hs = list(hierarchies)
    if [h.name for h in hs] != list(spec.qis):
        raise ProtocolError("give one hierarchy per quasi-identifier, in order")
    await agree(
        ch,
        "publish/params",
        qis=list(spec.qis),
        sensitive=spec.sensitive,
        k=spec.k,
        l=spec.l,
        max_suppression=repr(float(spec.max_suppression)),
        suppressed_rows=spec.suppressed_rows,
        metric=spec.metric,
        domain=None if spec.sensitive_values is None else list(spec.sensitive_values),
        hierarchies=hierarchy_digest(hs),
    )
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
    circ = _Circuit(rss, spec, n, len(domain))
    grid = LatticeGrid([h.height for h in hs])
    within = np.zeros(grid.N, dtype=bool)
    ok = np.zeros(grid.N, dtype=bool)
    evaluated = np.zeros(grid.N, dtype=bool)
    dms: dict[int, tuple[Arith, int]] = {}
    cells_total = 0
    by_height: dict[int, list[int]] = {}
    for i in range(grid.N):
        by_height.setdefault(grid.height[i], []).append(i)
    rounds = 0
    for h in sorted(by_height, reverse=True):
        cand = [i for i in by_height[h] if all(within[s] for s in grid.succ[i])]
        if not cand:
            break
        sized = []
        for i in cand:
            d = domain_size(hs, grid.levels[i])
            if d > MAX_NODE_CELLS:
                raise ProtocolError(
                    f"node {grid.levels[i]} has {d:,} cells (more than {MAX_NODE_CELLS:,}): use coarser "
                    "hierarchies or fewer quasi-identifiers for joint publishing"
                )
            sized.append((i, d))
        for batch in _split(sized, MAX_BATCH_CELLS // (circ.S if circ.use_hist else 1)):
            nodes = [i for i, _ in batch]
            sizes = [d for _, d in batch]
            vec = circ.local_vector(hs, local, sens_codes, [grid.levels[i] for i in nodes], circ.use_hist)
            x = await rss.input_sum(vec, circ.R)
            w, o, dm = await circ.evaluate(x, sizes, circ.use_hist)
            rounds += 1
            cells_total += int(sum(sizes))
            for j, i in enumerate(nodes):
                evaluated[i] = True
                within[i] = bool(w[j])
                ok[i] = bool(o[j])
            if dm is not None:
                for j, i in enumerate(nodes):
                    if ok[i]:
                        dms[i] = (dm, j)
        say(f"publish: level {h}: {len(cand)} nodes evaluated, {int(within[by_height[h]].sum())} within the budget")
    sat = sorted((i for i in range(grid.N) if ok[i]), key=lambda i: (grid.height[i], grid.levels[i]))
    if not sat:
        raise ProtocolError("no full-domain generalization satisfies the privacy models within the suppression budget")
    keys = None if rss.idx is None else [rss.concat([rss.take(dms[i][0], np.array([dms[i][1]])) for i in sat])]
    win = await rss.argmin(keys, [circ.R])
    chosen = sat[int(win)]
    levels = tuple(int(x) for x in grid.levels[chosen])
    say(f"publish: chosen node {levels} of {len(sat)} satisfying nodes")
    share = await _release_shares(rss, circ, hs, local, sens_codes, levels)
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
            "batches": rounds,
            "seconds": time.perf_counter() - t0,
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


async def _release_shares(rss: RSS3, circ: _Circuit, hs, local: LocalRows, sens_codes, levels) -> dict | None:
    """The release at ``levels`` as one additive share per computing party: the count of every
    (kept cell[, sensitive value]) and of the suppressed rows [per sensitive value]."""
    hist = sens_codes is not None
    d = domain_size(hs, levels)
    vec = circ.local_vector(hs, local, sens_codes, [levels], hist)
    x = await rss.input_sum(vec, circ.R)
    if x is None:  # a contributing party: it holds no share of the release
        return None
    counts, fail = await circ.fail_bits(x, [d], hist)
    if hist:
        S = circ.S
        kept = await rss.mul_bit(rss.not_(rss.bool_take(fail, np.repeat(np.arange(d, dtype=np.int64), S))), x)
        star = rss.sub(x, kept)
        order = np.arange(d * S, dtype=np.int64).reshape(d, S).T.ravel()
        star_v = rss.segment_sum(rss.take(star, order), np.arange(0, d * S, d, dtype=np.int64))
    else:
        kept = await rss.mul_bit(rss.not_(fail), counts)
        star_v = rss.segment_sum(rss.sub(counts, kept), np.array([0], dtype=np.int64))
    # party i holds (x_i, x_{i+1}) of x = x_0 + x_1 + x_2: its additive share is x_i
    mine_kept, mine_star = kept.a, star_v.a
    return {
        "bits": circ.R,
        "kept": mine_kept.astype(np.uint64).tolist(),
        "suppressed": mine_star.astype(np.uint64).tolist(),
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
        "generalizations are all within the budget), one bit: rows in failing classes <= MaxSup "
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
