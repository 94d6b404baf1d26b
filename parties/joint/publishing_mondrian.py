"""Joint Mondrian: the strict Mondrian partition of horizontally partitioned rows, cut by secure
medians, without pooling them.

Problem
-------
N ≥ 2 parties hold different rows of one table; three of them compute (with two data parties a
compute-only third joins, as in :mod:`parties.joint.publishing`). The analyst wants the release
that strict Mondrian (LeFevre, DeWitt, Ramakrishnan, "Mondrian multidimensional k-anonymity", ICDE
2006; :func:`anonymize.publish.partition.mondrian.mondrian`) would publish from the pooled table
under k-anonymity and, optionally, distinct l-diversity — the same classes, the same boxes.

Construction
------------
Partitions are public: the whole table first, then the parts of every cut. Each party knows which
of its rows lie in which partition (a cut is a public predicate on one QI), so per round it counts
its rows per (partition, QI, leaf) — and per sensitive value where l-diversity needs it — and the
counts are summed in replicated secret shares (:mod:`mpc.replicated`, Araki et al., CCS 2016;
comparisons by bit decomposition, ABY3, Mohassel & Rindal, CCS 2018). Prefix sums over a numeric
QI's leaves are local. Per round, breadth-first as the local algorithm runs:

* **Boxes.** A numeric QI's smallest and largest value present: the bits ``[P(t) ≥ 1]`` and
  ``[P(t) ≥ W]`` of the prefix counts P (W the partition's size, never opened) are opened — monotone
  in t, they show exactly the two values. A categorical QI's lowest common ancestor: per level the
  bit "exactly one node holds rows" (monotone in the level, it shows the ancestor's level), then the
  presence bits of that level's nodes (one of them set: the ancestor). The QIs' order (widest
  normalized span first, :func:`anonymize.publish.partition.mondrian.dimension_order`) follows
  publicly.
* **A numeric cut.** The median is the value at position ⌊(W − 1)/2⌋: the first t with
  2·P(t) ≥ W. Its indicator e(t) (the bits injected into the ring, minus their shift) gives the two
  candidate cuts c≤ = Σ e·P and c< = Σ e·(P − c) by dot products; "c≤ first" is
  ``c≤ + c< ≤ W`` (the more balanced cut, as the local rule ``|c≤ − W/2| ≤ |c< − W/2|``); each
  candidate is allowable when both sides have ≥ k rows (and ≥ l distinct sensitive values, from
  the per-value prefix counts the same way). Only *which* cut is taken (≤ v, < v or none) is opened,
  and, when one is, the bits of ``2·P(t) ≥ W`` (the median v).
* **A categorical cut.** The children of the box's node: each child's rows (a segment sum of its
  leaves) pass the models or not; the failing ones are pooled into a remainder, which must pass
  itself or merge into the smallest passing child (ties: the first; found by pairwise comparisons
  among the children of the partition); allowable when at least two parts result. Only "allowable"
  is opened, and, when it is, which children pass, whether there is a remainder, whether it merges
  and into which child.
* **Release.** The classes' boxes are public; their rows per sensitive value are returned to the
  analyst as additive shares (one per computing party) and never opened.

Revealed (the job's ``revealed`` list)
--------------------------------------
* everyone: n (the pooled row count); the sensitive values that occur (a secure set union, unless the
  analyst gave the domain); for every partition the algorithm forms, its box — a numeric QI's
  smallest and largest value, a categorical QI's lowest common ancestor (the boxes of the final
  partitions are the release's classes, and a partition's box is the union of its classes' boxes);
  for every QI tried on it, whether it can be cut (for a numeric QI, also which of the two cuts at
  the median is taken); for the cut taken, where: the median value, or which children of the
  ancestor pass the models, whether a remainder exists and which child it merges with;
* the analyst: the release (each class's box and its rows' sensitive values);
* nothing else — no party's rows, counts or row count, no partition's size, no median of a QI that
  cannot be cut — as long as no two of the three computing parties collude (semi-honest, honest
  majority).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from anonymize.publish.hierarchy import Hierarchy
from anonymize.publish.metrics.loss import arx_weights
from anonymize.publish.partition.mondrian import dimension_order, partition_spans
from mpc.channel import Channel, agree
from mpc.errors import ProtocolError
from mpc.replicated import RSS3, Arith, Bool

from .publishing import JointPublishSpec, LocalRows, _sensitive_domain

__all__ = ["publish_mondrian", "mondrian_release", "MAX_ROUNDS", "MAX_ROUND_ELEMENTS"]

MAX_ROUNDS = 200
"""Breadth-first rounds before the protocol gives up (a partition halves per cut, so about
log2(n / k) rounds; the cap only guards against a run that does not end)."""
MAX_ROUND_ELEMENTS = 1 << 24
"""Counts one step shares at most (partitions × leaves of every QI, × sensitive values with
l-diversity): a round's partitions are processed in chunks of that size (Adult, 8 QIs: 4,044
partitions in one chunk at most 671 k counts; l = 3 on occupation 5.8 M)."""


@dataclass
class _Box:
    """One public partition: per QI its box — numeric ``(lo, hi)`` leaf codes; categorical ``(lo,
    hi)`` the first and last leaf of its lowest common ancestor ``node`` at ``level``."""

    lo: np.ndarray
    hi: np.ndarray
    level: np.ndarray
    node: np.ndarray


class _Engine:
    """The computing parties' arithmetic on a session's RSS3 engine (``rss.idx`` None elsewhere):
    comparisons with public or shared bounds in one circuit, logic on width-1 bits."""

    def __init__(self, rss: RSS3, R: int, width: int, wide: int):
        self.rss = rss
        self.R = R
        # comparison widths: every compared count difference lies within ±2^(w−1); the merge targets'
        # keys (count·children + index) within ±2^(wide−1). A narrower circuit saves rounds and bits
        self.w = width
        self.wide = wide

    def sub(self, name: str) -> _Engine:
        """The same arithmetic on a child engine (its own tag namespace, to run concurrently)."""
        return _Engine(self.rss.child(name), self.R, self.w, self.wide)

    @property
    def computing(self) -> bool:
        return self.rss.idx is not None

    async def ge(self, items: Sequence[tuple[Arith, object]], wide: bool = False) -> list[Bool]:
        """``[x ≥ c]`` for every ``(x, c)`` (c a public scalar / array, or an :class:`Arith`), all in one
        comparison circuit (``wide``: of the keys' width)."""
        rss = self.rss
        diffs = [
            rss.sub(x, c) if isinstance(c, Arith) else rss.add_const(x, -np.asarray(c, dtype=np.int64))
            for x, c in items
        ]
        lens = [len(d) for d in diffs]
        lt = await rss.ltz(rss.concat(diffs), self.wide if wide else self.w)
        out, pos = [], 0
        for m in lens:
            out.append(rss.not_(rss.bool_take(lt, np.arange(pos, pos + m))))
            pos += m
        return out

    async def and_(self, x: Bool, y: Bool) -> Bool:
        return await self.rss.and_(x, y)

    async def or_(self, x: Bool, y: Bool) -> Bool:
        rss = self.rss
        return rss.not_(await rss.and_(rss.not_(x), rss.not_(y)))

    async def count(self, bits: Bool, offsets: np.ndarray) -> Arith:
        """The set bits per segment ``[offsets[s], offsets[s+1])``, in the ring."""
        return self.rss.segment_sum(await self.rss.b2a(bits, self.R), offsets)


def _offsets(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths):
        np.cumsum(lengths[:-1], out=out[1:])
    return out


def _zero_at(x: Arith, idx: np.ndarray) -> Arith:
    """x with the elements ``idx`` set to the public 0 (every component 0); local."""
    a, b = x.a.copy(), x.b.copy()
    a[idx] = 0
    b[idx] = 0
    return Arith(a, b, x.bits)


def _first_set(bits: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Per row of a ``(rows, cols)`` 0/1 matrix the first column set (``cols`` when none)."""
    m = np.asarray(bits, dtype=bool).reshape(rows, cols)
    return np.where(m.any(axis=1), m.argmax(axis=1), cols)


async def publish_mondrian(
    ch: Channel,
    hierarchies: Sequence[Hierarchy],
    local: LocalRows,
    spec: JointPublishSpec,
    say: Callable[[str], None] = lambda _m: None,
) -> dict:
    """Run joint strict Mondrian as one session party (every party calls it; the first three of
    ``ch.parties`` compute). Returns ``{"classes", "n", "sensitive_values", "stats", "revealed"}`` and,
    on a computing party, ``"share"``: its additive share of the rows per (class, sensitive value).

    ``spec``: k, distinct l (one sensitive column) and ``weights`` (the weighted order of the QIs); a
    categorical QI is as wide as its ancestor's level over the hierarchy's height, as ``ppdm
    anonymize --algorithm mondrian`` orders them; the suppression and metric fields do not apply
    (Mondrian suppresses nothing). Raises
    :class:`ProtocolError` (every party) when the pooled table itself fails the models."""
    t0 = time.perf_counter()
    spec.check()
    if spec.l is not None and spec.sensitive is None:
        raise ProtocolError("l-diversity needs a sensitive column")
    hs = list(hierarchies)
    if [h.name for h in hs] != list(spec.qis):
        raise ProtocolError("give one hierarchy per quasi-identifier, in order")
    categorical = "height"  # how wide a categorical QI is when ordering the QIs: as ppdm anonymize's Mondrian
    await agree(ch, "mondrian/params", **spec.public(hs), algorithm="mondrian", span=categorical)
    domain, domain_line = await _sensitive_domain(ch, spec, local)
    V = len(domain)
    use_l = spec.l is not None and spec.l > 1
    sens = None
    if spec.sensitive is not None:
        index = {v: i for i, v in enumerate(domain)}
        sens = np.fromiter((index[str(v)] for v in (local.sensitive or [])), dtype=np.int64)
    codes = np.asarray(local.qi_codes, dtype=np.int64).reshape(-1, len(hs))
    rss = await RSS3.create(ch, tuple(ch.parties[:3]), tag="mondrian/rss")
    n_sh = await rss.input_sum(np.array([codes.shape[0]], dtype=np.uint64), 64)
    n_open = await rss.open(n_sh, to="all")
    assert n_open is not None
    n = int(n_open[0])
    if n == 0:
        raise ProtocolError("the parties hold no rows")
    L = [h.n_leaves for h in hs]
    top = max(n * (max(L) + 2), (n + 2) * max(L), 4 * n + 4)  # ≥ every compared value: counts, 2·P, keys
    R = 32 if top < (1 << 29) else 64
    k = int(spec.k)
    lv = int(spec.l or 1)
    # counts, 2·P(t) against W and the like differ by at most 2n + max(k, l); the keys by at most top
    eng = _Engine(rss, R, min(R, (2 * n + max(k, lv) + 2).bit_length() + 1), min(R, top.bit_length() + 2))
    q = len(hs)
    scale = None if spec.weights is None else arx_weights(np.asarray(spec.weights, dtype=np.float64), q)

    # --- the whole table must satisfy the models (the local algorithm's first check)
    if k > n:
        raise ProtocolError(f"the whole table ({n} rows) does not satisfy k = {k}, so no partition can")
    if use_l:
        assert sens is not None
        c = await rss.input_sum(np.bincount(sens, minlength=V).astype(np.uint64), R)
        ok_bit = None
        if eng.computing:
            assert c is not None
            (pres,) = await eng.ge([(c, 1)])
            (ok_bit,) = await eng.ge([(await eng.count(pres, np.array([0])), lv)])
        opened = await rss.open(ok_bit, to="all")
        assert opened is not None
        if not int(opened[0]):
            raise ProtocolError(
                f"the whole table does not satisfy distinct {lv}-diversity, so no partition can; relax k / l"
            )

    part = np.zeros(codes.shape[0], dtype=np.int64)  # each own row's active partition (−1: in a class)
    cls = np.full(codes.shape[0], -1, dtype=np.int64)
    classes: list[_Box] = []
    n_active = 1
    low: np.ndarray | None = None  # the whole table's smallest / largest leaf per QI (numeric ranges)
    high: np.ndarray | None = None
    rounds = 0
    cuts = dict.fromkeys(spec.qis, 0)
    tried = remainders = merges = 0
    while n_active:
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise ProtocolError(f"joint Mondrian did not finish in {MAX_ROUNDS} rounds")
        P = n_active
        mine = part >= 0
        # the round's partitions in chunks whose count vectors stay bounded (MAX_ROUND_ELEMENTS): each
        # chunk is counted, boxed and cut on its own — partitions are independent of one another
        # (and the categorical merge targets' pairwise comparisons: at most L_j² per partition and QI)
        per_partition = sum(L) * (V if use_l else 1) + sum(L[j] ** 2 for j in range(q) if not hs[j].numeric)
        step = max(1, MAX_ROUND_ELEMENTS // max(per_partition, 1))
        boxes: list[_Box] = []
        plans: dict = {}
        for ci, start in enumerate(range(0, P, step)):
            stop = min(P, start + step)
            Pc = stop - start
            local_part = np.where(mine & (part >= start) & (part < stop), part - start, -1)
            inside = local_part >= 0
            # --- counts per (partition, QI, leaf), summed in shares
            vec = np.concatenate(
                [np.bincount(local_part[inside] * L[j] + codes[inside, j], minlength=Pc * L[j]) for j in range(q)]
            ).astype(np.uint64)
            C = await rss.input_sum(vec, R)
            off = _offsets([Pc * L[j] for j in range(q)])
            box = await _boxes(eng, C, off, Pc, hs, L)
            if low is None or high is None:
                low, high = box.lo[0].copy(), box.hi[0].copy()
            spans, ties = partition_spans(hs, box.lo, box.hi, low, high, categorical)
            order = dimension_order(spans, ties, scale)
            got: dict = await _cuts(
                eng, C, off, box, spans, order, hs, L, local_part, codes, sens, V, k, lv, use_l, n, f"{rounds}c{ci}"
            )
            tried += got.pop("tried")
            for p_, (j, plan) in got.items():
                plans[start + p_] = (j, plan)
                cuts[spec.qis[j]] += 1
            boxes.append(box)
        box = _Box(*(np.concatenate([getattr(b, f) for b in boxes]) for f in ("lo", "hi", "level", "node")))
        # --- final partitions become classes; the others are replaced by their parts, in order
        new_index = np.full(P, -1, dtype=np.int64)
        route: list = []
        n_next = 0
        for p in range(P):
            if p not in plans:
                new_index[p] = -2 - len(classes)
                classes.append(_Box(box.lo[p].copy(), box.hi[p].copy(), box.level[p].copy(), box.node[p].copy()))
                continue
            j, plan = plans[p]
            route.append((p, j, plan, n_next))
            n_next += plan[3] if plan[0] == "cat" else plan[2]  # the number of parts
        rows_p = part.copy()
        fin = mine & (new_index[np.maximum(rows_p, 0)] <= -2)
        cls[fin] = -2 - new_index[rows_p[fin]]
        part[fin] = -1
        if route:
            idx = np.flatnonzero(mine)
            idx = idx[np.argsort(rows_p[idx], kind="stable")]  # own rows grouped by partition
            bounds = np.searchsorted(rows_p[idx], np.arange(P + 1))
            for p, j, plan, base in route:
                at = idx[bounds[p] : bounds[p + 1]]
                part[at] = base + _part_of(plan, codes[at, j], hs[j])
                if plan[0] == "cat":
                    remainders += int(plan[4])
                    merges += int(plan[5])
        n_active = n_next
        say(f"mondrian: round {rounds}: {len(classes)} classes final, {n_active} partitions to cut")

    # --- the release: rows per (class, sensitive value) as additive shares for the analyst
    per = max(V, 1)
    own = cls >= 0
    key = cls[own] * per + (sens[own] if sens is not None and V else 0)
    rel = await rss.input_sum(np.bincount(key, minlength=len(classes) * per).astype(np.uint64), R)
    out: dict = {
        "classes": [
            {"lo": b.lo.tolist(), "hi": b.hi.tolist(), "level": b.level.tolist(), "node": b.node.tolist()}
            for b in classes
        ],
        "n": n,
        "sensitive_values": domain,
        "stats": {
            "rounds": rounds,
            "classes": len(classes),
            "cuts": cuts,
            "partitions_tried": tried,
            "categorical_remainders": remainders,
            "categorical_merges": merges,
            "seconds": time.perf_counter() - t0,
        },
        "revealed": _revealed(n, domain_line, len(classes), use_l),
    }
    if rel is not None:  # party i holds (x_i, x_{i+1}): its additive share is x_i
        out["share"] = {"bits": R, "kept": rel.a.astype(np.uint64).tolist(), "suppressed": []}
    return out


async def _cuts(
    eng: _Engine,
    C: Arith | None,
    off: np.ndarray,
    box: _Box,
    spans: np.ndarray,
    order: np.ndarray,
    hs: Sequence[Hierarchy],
    L: list[int],
    part: np.ndarray,
    codes: np.ndarray,
    sens: np.ndarray | None,
    V: int,
    k: int,
    lv: int,
    use_l: bool,
    n: int,
    rnd: str,
) -> dict:
    """The cut of every active partition, as the local loop chooses it: every QI's cut of every
    partition it may cut (span > 0) is evaluated at once, in shares — the numeric QIs' items in one
    vectorized computation and the categorical ones' in another, side by side on two child engines —
    then, rank by rank in each partition's order of QIs, the "allowable" bits of the partitions still
    uncut are opened, so a partition shows the bits of the QIs tried up to its cut, as the local
    algorithm tries them, and no more; finally where the chosen cuts fall. Returns ``{partition: (qi,
    plan)}`` and ``"tried"``: the (partition, QI) bits opened."""
    rss = eng.rss
    P, q = spans.shape
    cand = spans > 0
    numeric = np.array([h.numeric for h in hs], dtype=bool)
    Lv = np.asarray(L, dtype=np.int64)
    kinds = {}
    for kind in (True, False):
        pp, jj = np.nonzero(cand & (numeric if kind else ~numeric)[None, :])
        kinds[kind] = (pp.astype(np.int64), jj.astype(np.int64))
    # per-value counts (l-diversity): one vector over every item's (value, leaf) block, every party inputs
    sizes = {kind: Lv[jj] * V for kind, (_pp, jj) in kinds.items()}
    sstart = _offsets(np.concatenate([sizes[True], sizes[False]])) if use_l else None
    items: dict[bool, _Items] = {}
    at = 0
    for kind, (pp, jj) in kinds.items():
        sb = sstart[at : at + len(pp)] if sstart is not None else np.full(len(pp), -1, dtype=np.int64)
        at += len(pp)
        items[kind] = _Items(pp, jj, off[jj] + pp * Lv[jj], Lv[jj], sb)
    Cs = None
    if use_l:
        assert sens is not None and sstart is not None
        total = int(sizes[True].sum() + sizes[False].sum())
        keys = []
        mine = part >= 0
        for kind in (True, False):
            it = items[kind]
            where = np.full((P, q), -1, dtype=np.int64)
            where[it.p, it.j] = it.sbase
            for j in np.unique(it.j).tolist():
                b = where[part[mine], j]
                ok = b >= 0
                keys.append(b[ok] + sens[mine][ok] * L[j] + codes[mine, j][ok])
        vec = np.bincount(np.concatenate(keys) if keys else np.zeros(0, np.int64), minlength=total)
        Cs = await rss.input_sum(vec.astype(np.uint64), eng.R)
    cat_it = items[False]
    ch = _children_of(hs, cat_it, box)
    shared: dict[bool, _Shared] = {}
    if eng.computing:
        assert C is not None
        jobs = []
        if len(items[True]):
            sub = eng.sub(f"m{rnd}num")
            jobs.append((True, _numeric_eval(sub, C, Cs, items[True], V, k, lv)))
        if len(cat_it):
            sub = eng.sub(f"m{rnd}cat")
            jobs.append((False, _categorical_eval(sub, C, Cs, cat_it, ch, V, k, lv, n)))
        for (kind, _), got in zip(jobs, await asyncio.gather(*(c for _, c in jobs))):
            shared[kind] = got
    pos = np.full((P, q), -1, dtype=np.int64)  # (partition, QI) -> its item in its kind
    for it in items.values():
        pos[it.p, it.j] = np.arange(len(it))
    done = np.zeros(P, dtype=bool)
    chosen = np.full(P, -1, dtype=np.int64)
    tried = 0
    for r in range(q):
        dims = order[:, r]
        trying = ~done & cand[np.arange(P), dims]
        if not trying.any():
            break
        ps = np.flatnonzero(trying)
        groups = [(kind, ps[numeric[dims[ps]] == kind]) for kind in (True, False)]
        groups = [(kind, g) for kind, g in groups if len(g)]
        bits = None
        if shared:
            bits = rss.bool_concat([rss.bool_take(shared[kind].allow, pos[g, dims[g]]) for kind, g in groups])
        opened = np.asarray(await rss.open(bits, to="all"), dtype=np.uint8).reshape(-1)
        at = 0
        for _kind, g in groups:
            a = opened[at : at + len(g)].astype(bool)
            at += len(g)
            chosen[g[a]] = dims[g[a]]
            done[g[a]] = True
        tried += len(ps)
    out: dict = {"tried": tried}
    # where the chosen cuts fall: numeric — which cut and the median bits; categorical — the passing
    # children, the remainder part and the merge bit (one opening), then the merge targets
    cp = np.flatnonzero(chosen >= 0)
    num_p = cp[numeric[chosen[cp]]]
    cat_p = cp[~numeric[chosen[cp]]]
    if not len(cp):
        return out
    ni = pos[num_p, chosen[num_p]]
    ci = pos[cat_p, chosen[cat_p]]
    gidx, _ = _segments(ch.p_off[ci], ch.per_p[ci]) if len(ci) else (np.zeros(0, np.int64), None)
    num_it = items[True]
    parts: list[Bool] = []
    if shared:
        if len(ni):
            take, median = shared[True].take, shared[True].median
            assert take is not None and median is not None
            parts.append(rss.bool_take(take, np.concatenate([ni, len(num_it) + ni])))
            parts.append(rss.bool_take(median, _segments(_offsets(num_it.L)[ni], num_it.L[ni])[0]))
        if len(ci):
            okb_, remb_, mergeb_ = shared[False].ok, shared[False].rem, shared[False].merge
            assert okb_ is not None and remb_ is not None and mergeb_ is not None
            parts += [rss.bool_take(okb_, gidx), rss.bool_take(remb_, ci), rss.bool_take(mergeb_, ci)]
    opened = np.asarray(await rss.open(rss.bool_concat(parts) if parts else None, to="all"), dtype=np.uint8)
    opened = opened.reshape(-1)
    m = len(ni)
    t_le = opened[:m].astype(bool)
    t_lt = opened[m : 2 * m].astype(bool)
    at = 2 * m
    med_len = num_it.L[ni]
    med_bits = opened[at : at + int(med_len.sum())]
    at += int(med_len.sum())
    mo = _offsets(med_len)
    for x, p in enumerate(num_p.tolist()):
        if t_le[x] == t_lt[x]:
            raise ProtocolError("the computing parties opened an inconsistent numeric cut")
        seg = med_bits[mo[x] : mo[x] + med_len[x]]
        out[p] = (int(chosen[p]), ("le" if t_le[x] else "lt", int(np.argmax(seg)), 2))
    nch = len(gidx)
    okb = opened[at : at + nch].astype(bool)
    at += nch
    remb = opened[at : at + len(ci)].astype(bool)
    at += len(ci)
    mergeb = opened[at : at + len(ci)].astype(bool)
    merging = np.flatnonzero(mergeb)
    targets = np.full(len(ci), -1, dtype=np.int64)
    if len(merging):
        g_m, _ = _segments(ch.p_off[ci[merging]], ch.per_p[ci[merging]])
        tb = None
        if shared:
            target = shared[False].target
            assert target is not None
            tb = rss.bool_take(target, g_m)
        opened = np.asarray(await rss.open(tb, to="all"), dtype=np.uint8).reshape(-1)
        to = _offsets(ch.per_p[ci[merging]])
        for y, x in enumerate(merging.tolist()):
            t = opened[to[y] : to[y] + ch.per_p[ci[x]]].astype(bool)
            if int(t.sum()) != 1:
                raise ProtocolError("the computing parties opened an inconsistent merge target")
            targets[x] = int(np.flatnonzero(t)[0])
    co = _offsets(ch.per_p[ci]) if len(ci) else np.zeros(0, np.int64)
    for x, (p, i) in enumerate(zip(cat_p.tolist(), ci.tolist())):
        okc = okb[co[x] : co[x] + ch.per_p[i]]
        j = int(chosen[p])
        out[p] = (j, _categorical_plan(hs[j], ch, i, okc, bool(remb[x]), bool(mergeb[x]), int(targets[x])))
    return out


def _children_of(hs: Sequence[Hierarchy], it: _Items, box: _Box) -> _Children:
    """The children of every categorical item's ancestor, for all QIs at once (``gp``: the item)."""
    parts = []
    for j in np.unique(it.j).tolist():
        sel = np.flatnonzero(it.j == j)
        c = _children(hs[j], box.level[it.p[sel], j], box.node[it.p[sel], j])
        parts.append((sel, c))
    B = len(it)
    level = np.zeros(B, dtype=np.int64)
    gp, gi, leaf, length, node = [], [], [], [], []
    for sel, c in parts:
        level[sel] = c.level
        gp.append(sel[c.gp])
        gi.append(c.gi)
        leaf.append(c.leaf)
        length.append(c.length)
        node.append(c.node)
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return _Children(level, z, z, z, z, z)
    gp_all = np.concatenate(gp)
    o = np.argsort(gp_all, kind="stable")  # grouped by item, each item's children in order
    return _Children(
        level,
        gp_all[o],
        np.concatenate(gi)[o],
        np.concatenate(leaf)[o],
        np.concatenate(length)[o],
        np.concatenate(node)[o],
    )


def _part_of(plan: tuple, col: np.ndarray, h: Hierarchy) -> np.ndarray:
    """Each row's part (0-based) under a cut: numeric ``("le"|"lt", v, 2)`` — left of the median or
    not; categorical ``("cat", level, part per node of that level, parts, remainder part, merged)``."""
    if plan[0] in ("le", "lt"):
        v = plan[1]
        left = col <= v if plan[0] == "le" else col < v
        return np.where(left, 0, 1).astype(np.int64)
    level, child_part = plan[1], plan[2]
    node = h.maps[level][col] if level else col
    return np.asarray(child_part, dtype=np.int64)[node]


def _segments(bases: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The indices ``base + 0 .. base + length − 1`` of every segment, concatenated, and each
    segment's offset in that concatenation."""
    bases = np.asarray(bases, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    offs = _offsets(lengths)
    total = int(lengths.sum())
    idx = np.repeat(bases - offs, lengths) + np.arange(total, dtype=np.int64)
    return idx, offs


def _sens_counts(
    part: np.ndarray, sel: np.ndarray, P: int, col: np.ndarray, sens: np.ndarray, V: int, Lj: int
) -> np.ndarray:
    """This party's rows per (selected partition, sensitive value, leaf of one QI), row-major."""
    rank = np.full(P, -1, dtype=np.int64)
    rank[sel] = np.arange(len(sel))
    mine = part >= 0
    rr = rank[part[mine]]
    keep = rr >= 0
    key = (rr[keep] * V + sens[mine][keep]) * Lj + col[mine][keep]
    return np.bincount(key, minlength=len(sel) * V * Lj).astype(np.uint64)


@dataclass
class _Children:
    """The children of each selected partition's lowest common ancestor on one categorical QI
    (public, from the boxes): per child its partition (index into the selection), its index among
    the partition's children, its first leaf, its number of leaves and its node code."""

    level: np.ndarray  # per partition: the ancestor's level (≥ 1)
    gp: np.ndarray
    gi: np.ndarray
    leaf: np.ndarray
    length: np.ndarray
    node: np.ndarray

    @property
    def per_p(self) -> np.ndarray:
        return np.bincount(self.gp, minlength=len(self.level))

    @property
    def p_off(self) -> np.ndarray:
        return _offsets(self.per_p)


def _children(h: Hierarchy, level: np.ndarray, node: np.ndarray) -> _Children:
    """:class:`_Children` of the ancestors ``(level, node)`` (one per selected partition): the nodes
    one level down whose parent is the ancestor — consecutive node codes, in leaf order."""
    level = np.asarray(level, dtype=np.int64)
    node = np.asarray(node, dtype=np.int64)
    B = len(level)
    per_p = np.zeros(B, dtype=np.int64)
    tables = {}
    for lam in np.unique(level).tolist():
        first, last = h.node_span(lam - 1)  # every node one level down: its first and last leaf
        parent = h.maps[lam][first]
        count = np.bincount(parent, minlength=h.n_nodes(lam))
        tables[lam] = (first, last, _offsets(count))
        at = level == lam
        per_p[at] = count[node[at]]
    p_off = _offsets(per_p)
    G = int(per_p.sum())
    gp = np.repeat(np.arange(B, dtype=np.int64), per_p)
    gi = np.arange(G, dtype=np.int64) - p_off[gp]
    gnode = np.zeros(G, dtype=np.int64)
    gleaf = np.zeros(G, dtype=np.int64)
    glen = np.zeros(G, dtype=np.int64)
    for lam, (first, last, start) in tables.items():
        at = level[gp] == lam
        c = start[node[gp[at]]] + gi[at]
        gnode[at], gleaf[at], glen[at] = c, first[c], last[c] - first[c] + 1
    return _Children(level, gp, gi, gleaf, glen, gnode)


@dataclass
class _Shared:
    """One QI's evaluation of every partition it may cut (computing parties' shares): ``allow`` per
    partition; numeric also ``take`` (c≤ taken, then c< taken: 2·B bits) and ``median`` (B·L bits
    ``[2·P(t) ≥ W]``); categorical ``ok`` per child, ``rem`` (a remainder part) and ``merge`` per
    partition, ``target`` per child."""

    allow: Bool
    take: Bool | None = None
    median: Bool | None = None
    ok: Bool | None = None
    rem: Bool | None = None
    merge: Bool | None = None
    target: Bool | None = None


def _segmented_cumsum(x: Arith, offsets: np.ndarray) -> Arith:
    """Prefix sums within each segment ``[offsets[i], offsets[i+1])`` of x; local (linear)."""
    n = len(x)
    lengths = np.diff(np.r_[offsets, n])
    out = []
    for comp in (x.a, x.b):
        cs = np.cumsum(comp, dtype=comp.dtype)
        before = np.zeros(len(offsets), dtype=comp.dtype)
        nz = offsets > 0
        before[nz] = cs[offsets[nz] - 1]
        out.append(cs - np.repeat(before, lengths))
    return Arith(out[0], out[1], x.bits)


@dataclass
class _Items:
    """The (partition, QI) pairs one evaluation covers, each with the offset of its leaf counts in the
    session's count vector (``base``, ``L`` leaves) and, with l-diversity, of its (value, leaf) block
    in the per-value vector (``sbase``)."""

    p: np.ndarray
    j: np.ndarray
    base: np.ndarray
    L: np.ndarray
    sbase: np.ndarray

    def __len__(self) -> int:
        return len(self.p)


async def _numeric_eval(eng: _Engine, C: Arith, Cs: Arith | None, it: _Items, V: int, k: int, lv: int) -> _Shared:
    """The median cut of every (partition, numeric QI) item (module docstring), in shares: nothing is
    opened here."""
    rss = eng.rss
    B = len(it)
    idx, st = _segments(it.base, it.L)
    c = rss.take(C, idx)
    pre = _segmented_cumsum(c, st)
    ends = st + it.L - 1
    W = rss.take(pre, ends)
    (b,) = await eng.ge([(rss.mul_const(pre, 2), rss.take(pre, np.repeat(ends, it.L)))])  # [2·P(t) ≥ W]
    ba = await rss.b2a(b, eng.R)
    e = rss.sub(ba, _zero_at(rss.take(ba, np.arange(len(idx)) - 1), st))  # 1 at the median only
    total = len(idx)
    both = await rss.segment_dot(
        rss.concat([e, e]), rss.concat([pre, rss.sub(pre, c)]), np.concatenate([st, st + total])
    )
    c_le, c_lt = rss.take(both, slice(0, B)), rss.take(both, slice(B, 2 * B))
    items: list[tuple[Arith, object]] = [
        (W, rss.add(c_le, c_lt)),  # c≤ first: c≤ + c< ≤ W
        (c_le, k),
        (rss.sub(W, c_le), k),
        (c_lt, k),
        (rss.sub(W, c_lt), k),
    ]
    if Cs is not None:  # distinct sensitive values on each side, from the per-value prefix counts
        # (item, value) segments of the item's leaves
        bases = (it.sbase[:, None] + np.arange(V)[None, :] * it.L[:, None]).reshape(-1)
        lens = np.repeat(it.L, V)
        idx_s, st_s = _segments(bases, lens)
        cs_ = rss.take(Cs, idx_s)
        Ps = _segmented_cumsum(cs_, st_s)
        # the median indicator of the item, repeated per value
        er = rss.take(e, _segments(np.repeat(st, V), lens)[0])
        S = len(bases)
        lefts = await rss.segment_dot(
            rss.concat([er, er]), rss.concat([Ps, rss.sub(Ps, cs_)]), np.concatenate([st_s, st_s + len(idx_s)])
        )
        tot = rss.take(Ps, st_s + lens - 1)
        l_le, l_lt = rss.take(lefts, slice(0, S)), rss.take(lefts, slice(S, 2 * S))
        (pres,) = await eng.ge([(rss.concat([l_le, rss.sub(tot, l_le), l_lt, rss.sub(tot, l_lt)]), 1)])
        items.append((await eng.count(pres, np.arange(4 * B) * V), lv))  # (left ≤, right ≤, left <, right <)
    res = await eng.ge(items)
    a_first = res[0]
    allowed = await eng.and_(rss.bool_concat([res[1], res[3]]), rss.bool_concat([res[2], res[4]]))
    if Cs is not None:
        d = res[5]
        dl = rss.bool_concat([rss.bool_take(d, np.arange(0, B)), rss.bool_take(d, np.arange(2 * B, 3 * B))])
        dr = rss.bool_concat([rss.bool_take(d, np.arange(B, 2 * B)), rss.bool_take(d, np.arange(3 * B, 4 * B))])
        allowed = await eng.and_(allowed, await eng.and_(dl, dr))
    allow_le = rss.bool_take(allowed, np.arange(0, B))
    allow_lt = rss.bool_take(allowed, np.arange(B, 2 * B))
    # the first allowable of (c≤, c<) or (c<, c≤): take ≤ iff allowed and (first or < not allowed)
    u = await eng.and_(rss.bool_concat([rss.not_(a_first), a_first]), rss.bool_concat([allow_lt, allow_le]))
    take = await eng.and_(allowed, rss.not_(u))
    return _Shared(allow=await eng.or_(allow_le, allow_lt), take=take, median=b)


async def _categorical_eval(
    eng: _Engine, C: Arith, Cs: Arith | None, it: _Items, ch: _Children, V: int, k: int, lv: int, n: int
) -> _Shared:
    """The cut of every (partition, categorical QI) item into the children of the partition's ancestor
    (module docstring), in shares: nothing is opened here. ``ch``: the items' children (``gp`` an
    item index)."""
    rss = eng.rss
    B = len(it)
    gp, G = ch.gp, len(ch.gp)
    per_p, p_off = ch.per_p, ch.p_off
    idx, offs = _segments(it.base[gp] + ch.leaf, ch.length)
    cnt = rss.segment_sum(rss.take(C, idx), offs)  # rows per child
    items: list[tuple[Arith, object]] = [(cnt, k), (cnt, 1)]
    cnt_s = None
    if Cs is not None:  # rows per (child, value), child-major
        bases = (it.sbase[gp][:, None] + np.arange(V)[None, :] * it.L[gp][:, None] + ch.leaf[:, None]).reshape(-1)
        idx_s, offs_s = _segments(bases, np.repeat(ch.length, V))
        cnt_s = rss.segment_sum(rss.take(Cs, idx_s), offs_s)
        items.append((cnt_s, 1))
    res = await eng.ge(items)
    ok, present = res[0], res[1]
    by_value = _by_value(per_p, p_off, V)
    value_offsets = _offsets(np.repeat(per_p, V))
    if cnt_s is not None:
        (okl,) = await eng.ge([(await eng.count(res[2], np.arange(G) * V), lv)])
        ok = await eng.and_(ok, okl)

    def sub(name: str) -> _Engine:
        return eng.sub(name)

    async def remainder(e: _Engine) -> tuple[Bool, Bool, Arith | None]:
        """[remainder ≠ ∅], [the remainder passes], its rows per value (l) — the failing present children."""
        fail = await e.and_(present, rss.not_(ok))
        if cnt_s is None:
            rem = rss.segment_sum(await e.rss.mul_bit(fail, cnt), p_off)
            r1, rk = await e.ge([(rem, 1), (rem, k)])
            return r1, rk, None
        prods = await e.rss.mul_bit(
            rss.bool_concat([fail, rss.bool_take(fail, np.repeat(np.arange(G), V))]), rss.concat([cnt, cnt_s])
        )
        rem = rss.segment_sum(rss.take(prods, slice(0, G)), p_off)
        rem_s = rss.segment_sum(rss.take(rss.take(prods, slice(G, G + G * V)), by_value), value_offsets)
        (pr,) = await e.ge([(rem_s, 1)])
        r1, rk, rl = await e.ge([(rem, 1), (rem, k), (await e.count(pr, np.arange(B) * V), lv)])
        return r1, await e.and_(rk, rl), rem_s

    async def target_child(e: _Engine) -> Bool:
        """The merge target: the passing child of fewest rows, the first among equals — the child whose
        key count·Gmax + index is below no other child's (a failing child's key: BIG)."""
        Gmax = int(per_p.max()) if len(per_p) else 1
        big = (n + 2) * Gmax
        key = rss.add_const(await e.rss.mul_bit(ok, rss.add_const(rss.mul_const(cnt, Gmax), ch.gi - big)), big)
        pa, pb = _pairs(per_p, p_off)  # ordered pairs (g, d), g ≠ d, of one partition's children
        if not len(pa):
            return ok
        (ge_dg,) = await e.ge([(rss.take(key, pb), rss.take(key, pa))], wide=True)  # [key_d ≥ key_g]
        (ranked,) = await e.ge([(await e.count(rss.not_(ge_dg), _offsets(np.bincount(pa, minlength=G))), 1)])
        return await e.and_(ok, rss.not_(ranked))

    async def passing(e: _Engine) -> tuple[Bool, Bool]:
        """[≥ 1 passing child], [≥ 2 passing children]."""
        n_ok = await e.count(ok, p_off)
        ge1, ge2 = await e.ge([(n_ok, 1), (n_ok, 2)])
        return ge1, ge2

    (r1, rem_ok, rem_s), target, (ge1, ge2) = await asyncio.gather(
        remainder(sub("rem")), target_child(sub("tgt")), passing(sub("nok"))
    )
    merge_ok = ge1
    if cnt_s is not None:  # the target with the remainder must show l values too
        assert rem_s is not None
        tprod = await rss.mul_bit(rss.bool_take(target, np.repeat(np.arange(G), V)), cnt_s)
        t_s = rss.segment_sum(rss.take(tprod, by_value), value_offsets)
        (mp,) = await eng.ge([(rss.add(t_s, rem_s), 1)])
        (ml,) = await eng.ge([(await eng.count(mp, np.arange(B) * V), lv)])
        merge_ok = await eng.and_(merge_ok, ml)
    # need_merge = r1 ∧ ¬rem_ok; the remainder is a part of its own iff r1 ∧ rem_ok
    both = await eng.and_(rss.bool_concat([r1, r1]), rss.bool_concat([rss.not_(rem_ok), rem_ok]))
    need_merge = rss.bool_take(both, np.arange(0, B))
    rem_part = rss.bool_take(both, np.arange(B, 2 * B))
    # parts = passing children + rem_part ≥ 2 ⟺ ≥ 2 passing ∨ (≥ 1 passing ∧ rem_part); a merge must pass
    x = await eng.and_(rss.bool_concat([ge1, need_merge]), rss.bool_concat([rem_part, rss.not_(merge_ok)]))
    two = await eng.or_(ge2, rss.bool_take(x, np.arange(0, B)))
    allow = await eng.and_(two, rss.not_(rss.bool_take(x, np.arange(B, 2 * B))))
    return _Shared(allow=allow, ok=ok, rem=rem_part, merge=need_merge, target=target)


def _categorical_plan(
    h: Hierarchy, ch: _Children, i: int, ok: np.ndarray, rem: bool, merge: bool, target: int
) -> tuple:
    """The public cut of selected partition ``i`` from its opened bits: its passing children (``ok``,
    per child of the partition) in order, then the remainder (``rem``) or, when it ``merge``s, the
    ``target`` child's part."""
    lo, m = int(ch.p_off[i]), int(ch.per_p[i])
    rank_ok = np.cumsum(ok) - 1
    n_ok = int(ok.sum())
    child_part = np.full(h.n_nodes(int(ch.level[i]) - 1), -1, dtype=np.int64)
    rest = int(rank_ok[target]) if merge else n_ok
    child_part[ch.node[lo : lo + m]] = np.where(ok, rank_ok, rest)
    return ("cat", int(ch.level[i]) - 1, child_part, n_ok + int(rem), bool(rem), bool(merge))


def _pairs(per_p: np.ndarray, p_off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (g, d), g ≠ d, of children of the same partition (global child indices),
    grouped by g."""
    per_p = np.asarray(per_p, dtype=np.int64)
    G = int(per_p.sum())
    gp = np.repeat(np.arange(len(per_p), dtype=np.int64), per_p)
    rep = per_p[gp]  # every child is paired with each child of its partition
    ga = np.repeat(np.arange(G, dtype=np.int64), rep)
    gb = p_off[gp[ga]] + (np.arange(len(ga), dtype=np.int64) - np.repeat(_offsets(rep), rep))
    keep = ga != gb
    return ga[keep], gb[keep]


def _by_value(per_p: np.ndarray, p_off: np.ndarray, V: int) -> np.ndarray:
    """The permutation of a child-major (child, value) vector into (partition, value, child) order."""
    per_p = np.asarray(per_p, dtype=np.int64)
    size = per_p * V
    pp = np.repeat(np.arange(len(per_p), dtype=np.int64), size)
    within = np.arange(int(size.sum()), dtype=np.int64) - np.repeat(_offsets(size), size)
    cnt = per_p[pp]
    return (p_off[pp] + within % cnt) * V + within // cnt


async def _boxes(eng: _Engine, C: Arith | None, off: np.ndarray, P: int, hs: Sequence[Hierarchy], L: list[int]) -> _Box:
    """Every active partition's box (module docstring, "Boxes"): two rounds of opening."""
    rss = eng.rss
    q = len(hs)
    lo = np.zeros((P, q), dtype=np.int64)
    hi = np.zeros((P, q), dtype=np.int64)
    level = np.zeros((P, q), dtype=np.int64)
    node = np.zeros((P, q), dtype=np.int64)
    # numeric: [P(t) ≥ 1] and [P(t) ≥ W]; categorical: per level the presence of each node, then
    # "exactly one node present" per (partition, level)
    num = [j for j in range(q) if hs[j].numeric]
    cat = [j for j in range(q) if not hs[j].numeric]
    bits_num: list[Bool] = []
    single: Bool | None = None
    presence: dict[int, dict[int, Bool]] = {}
    cat_layout: list[tuple[int, int, int]] = []  # (j, level, nodes) in the order of the 'single' bits
    for j in cat:
        for g in range(hs[j].height):
            cat_layout.append((j, g, hs[j].n_nodes(g)))
    if eng.computing:
        assert C is not None
        items: list[tuple[Arith, object]] = []
        for j in num:
            c = rss.take(C, slice(int(off[j]), int(off[j]) + P * L[j]))
            pre = _segmented_cumsum(c, np.arange(P, dtype=np.int64) * L[j])
            W = rss.take(pre, np.repeat(np.arange(P) * L[j] + L[j] - 1, L[j]))
            items += [(pre, 1), (pre, W)]
        for j, g, _m in cat_layout:
            c = rss.take(C, slice(int(off[j]), int(off[j]) + P * L[j]))
            first, _last = hs[j].node_span(g)
            starts = (np.arange(P)[:, None] * L[j] + first[None, :]).reshape(-1)
            items.append((rss.segment_sum(c, starts), 1))  # rows per (partition, node) at level g
        res = await eng.ge(items) if items else []
        bits_num = res[: 2 * len(num)]
        pres = res[2 * len(num) :]
        if cat_layout:
            # present nodes per (level, partition): one bit injection, summed per segment; opened is
            # [count < 2] — "exactly one node holds the partition's rows" (every partition has rows)
            seg, pos = [], 0
            for _j, _g, m in cat_layout:
                seg.append(pos + np.arange(P) * m)
                pos += P * m
            counts = await eng.count(rss.bool_concat(pres), np.concatenate(seg))
            (two,) = await eng.ge([(counts, 2)])
            single = rss.not_(two)
            for (j, g, _m), bits in zip(cat_layout, pres):
                presence.setdefault(j, {})[g] = bits
    to_open = bits_num + ([single] if single is not None else [])
    flat = np.zeros(0, np.uint8)
    if num or cat_layout:
        opened_all = await rss.open(rss.bool_concat(to_open) if eng.computing else None, to="all")
        flat = np.asarray(opened_all, dtype=np.uint8).reshape(-1)
    pos = 0
    for j in num:
        ge1 = flat[pos : pos + P * L[j]]
        pos += P * L[j]
        geW = flat[pos : pos + P * L[j]]
        pos += P * L[j]
        lo[:, j] = _first_set(ge1, P, L[j])
        hi[:, j] = _first_set(geW, P, L[j])
        level[:, j] = -1
        node[:, j] = -1
    if cat:
        sing = flat[pos:]
        # per categorical QI: its levels' 'single' bits, (partition-major within a level)
        lam = {}
        spos = 0
        per_j: dict[int, list[np.ndarray]] = {}
        for j, _g, _m in cat_layout:
            per_j.setdefault(j, []).append(sing[spos : spos + P])
            spos += P
        for j in cat:
            h = hs[j]
            if h.height == 0:
                lam[j] = np.zeros(P, dtype=np.int64)
                continue
            lv_bits = np.stack(per_j[j], axis=1) if per_j.get(j) else np.zeros((P, 0), np.uint8)
            lam[j] = _first_set(lv_bits.reshape(-1), P, h.height)  # no level below the top: the top (level H)
        # the presence bits of the ancestor's level, per (partition, QI): one opening
        sel_bits: list[Bool] = []
        want: list[tuple[int, np.ndarray, int]] = []
        for j in cat:
            h = hs[j]
            for g in range(h.height):
                ps = np.flatnonzero(lam[j] == g)
                if not len(ps):
                    continue
                m = h.n_nodes(g)
                want.append((j, ps, g))
                if eng.computing:
                    bits = presence[j][g]
                    idx = (ps[:, None] * m + np.arange(m)[None, :]).reshape(-1)
                    sel_bits.append(rss.bool_take(bits, idx))
        got = np.zeros(0, np.uint8)
        if want:
            opened = await rss.open(rss.bool_concat(sel_bits) if eng.computing else None, to="all")
            got = np.asarray(opened, dtype=np.uint8).reshape(-1)
        gpos = 0
        for j in cat:
            h = hs[j]
            level[:, j] = lam[j]
            top = lam[j] == h.height
            node[top, j] = 0
        for j, ps, g in want:
            m = hs[j].n_nodes(g)
            block = got[gpos : gpos + len(ps) * m].reshape(len(ps), m)
            gpos += len(ps) * m
            node[ps, j] = block.argmax(axis=1)
        for j in cat:
            h = hs[j]
            for g in np.unique(level[:, j]).tolist():
                first, last = h.node_span(int(g))
                at = level[:, j] == g
                lo[at, j] = first[node[at, j]]
                hi[at, j] = last[node[at, j]]
    return _Box(lo, hi, level, node)


def _revealed(n: int, domain_line: str, classes: int, use_l: bool) -> list[str]:
    lines = [f"all parties: the pooled row count n = {n}"]
    if domain_line:
        lines.append(domain_line)
    lines.append(
        "all parties: for every partition Mondrian forms, its box (a numeric QI's smallest and largest value, a "
        "categorical QI's lowest common ancestor) — the union of the boxes of the classes it ends in"
    )
    lines.append(
        "all parties: for every QI tried on a partition, one bit: it can be cut (both sides keep k rows"
        + (" and l distinct sensitive values" if use_l else "")
        + "); for a numeric QI also which of the two cuts at the median is taken"
    )
    lines.append(
        "all parties: for every cut taken, where: the median value, or which children of the categorical "
        "ancestor pass the models, whether a remainder exists and which child it merges with"
    )
    lines.append(
        f"analyst: the release — {classes} classes, each with its box and its rows' sensitive values — from "
        "additive shares the parties never open"
    )
    lines.append(
        "nothing else — no party's rows, counts or row count, no partition's size, no median of a QI that is "
        "not cut — unless two of the three computing parties (semi-honest, honest majority) collude"
    )
    return lines


def mondrian_release(
    hierarchies: Sequence[Hierarchy],
    qis: Sequence[str],
    classes: Sequence[dict],
    counts: np.ndarray,
    sensitive: str | None = None,
    sens_values: Sequence[str] = (),
):
    """The release of joint Mondrian as the local one writes it
    (:func:`anonymize.publish.recode.release_partition`): per class its rows (``counts``: rows per
    (class, sensitive value), class-major; per class without a sensitive column), each QI as the
    class's label — a numeric QI's ``lo-hi`` range of values, a categorical QI's lowest common
    ancestor's label — and the sensitive value. Rows in class order (the caller shuffles)."""
    import pandas as pd

    from anonymize.publish.recode import range_labels

    per = max(len(sens_values), 1) if sensitive is not None else 1
    counts = np.asarray(counts, dtype=np.int64).reshape(len(classes), per)
    rows_per_class = counts.sum(axis=1)
    cols: dict = {}
    for j, (name, h) in enumerate(zip(qis, hierarchies)):
        lo = np.array([c["lo"][j] for c in classes], dtype=np.int64)
        hi = np.array([c["hi"][j] for c in classes], dtype=np.int64)
        if h.numeric:
            vals = np.asarray(h.leaves)
            lab = range_labels(vals[lo], vals[hi]) if len(classes) else np.zeros(0, dtype=object)
        else:
            lev = [int(c["level"][j]) for c in classes]
            node = [int(c["node"][j]) for c in classes]
            lab = np.array([h.labels[a][b] for a, b in zip(lev, node)], dtype=object)
        cols[name] = np.repeat(lab, rows_per_class)
    if sensitive is not None:
        vals_s = np.asarray(list(sens_values), dtype=object)
        cols[sensitive] = np.repeat(np.tile(vals_s, len(classes)), counts.reshape(-1)) if len(vals_s) else []
    return pd.DataFrame(cols)
