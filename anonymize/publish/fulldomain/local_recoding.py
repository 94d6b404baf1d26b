"""Local recoding on top of a full-domain lattice search, as ARX's "local transformation" does it.

What it does (ARX: ``ARXResult.optimize`` / ``optimizeIterative``; the GUI's "local
transformation"; Prasser, Kohlmayer, Kuhn, BMC Medical Informatics and Decision Making 16:49, 2016,
for the search ARX runs inside each step). The optimal full-domain (global) transformation with
suppression is computed first. Its suppressed rows are then anonymized again **on their own**: the
same search, the same privacy models and the same metric on the sub-table of just those rows. Rows
the sub-search releases are published generalized at *its* node; the ones it suppresses are the
input of the next iteration. This repeats until an iteration releases no row, no row is left, fewer
rows are left than the smallest class the models allow, no node satisfies the models on them, or
``max_iterations`` sub-searches have run (ARX's GUI default is 100). The release is the union.

The suppression budget of a sub-search (``budget``):

* ``'fraction'`` (default, what ARX's ``optimizeIterative`` does: the configuration is cloned with
  its suppression limit, a fraction, and applied to the subset) — the run's ``max_suppression``
  fraction of the sub-table: each iteration must release all but ``⌊f·|sub-table|⌋`` of the rows it
  is given, so the rows left suppressed always stay within the global budget too;
* ``'records'`` (ARX's ``optimizeIterativeFast(handle, records)``) — every sub-search must release at
  least a fraction ``records`` of **all** the table's rows: its suppression limit is
  ``1 − min(1, records·n / |sub-table|)`` (ARX: ``1 − relativeRecords`` with ``relativeRecords =
  records·baselineRecords / rowset.size()``, clamped to [0, 1]). A small ``records`` lets each step
  keep most of its rows suppressed and pick a finer node for the rest; the steps then need more
  iterations. (ARX's quality models also carry a "gs-factor" weighting generalization against
  suppression: with ``metric='loss'`` each sub-search takes the run's, through ``lattice_options``.)
* ``'all'`` — every row of the sub-table may stay suppressed (the whole remaining budget): the
  sub-search then picks the node with the best metric over the sub-table, suppressed rows costing
  what the metric charges them (NCP 1 per cell, DM n per row). Metrics that do not charge for
  suppression (height, CDM, average class size) would always keep everything suppressed, so the
  sub-searches use NCP for them; Samarati, which returns only the lowest satisfying height, picks
  the bottom node there and recovers nothing.

**Classes are the released tuples.** Two rows generalized at different nodes can get overlapping
but different cells — ``20-29`` and ``20-24`` — and, as in ARX, each *distinct released tuple* is
its own equivalence class (an overlap does not merge them; two identical tuples from different
iterations are one class, as a reader of the file sees them). Every iteration is kept only if the
union so far passes every model on exactly those classes (:func:`release_ok`): each iteration's
search checks its classes on the sub-table, and the union is checked again on the released text
(suppressed rows are one more all-``*`` class with ``suppressed_rows='star'``) — a merge of two
identical tuples, or a changed reference distribution, cannot slip through.

**Models that compare a class with the table's distribution** (t-closeness, β-likeness,
δ-disclosure) compare every iteration's classes with the distribution of the **whole input
table**, not of the sub-table: the sub-table (:class:`SubTable`) answers
:meth:`~.table.EncodedTable.global_dist` with its parent's. This is what ARX does (a subset's
``DataManagerSubset.getDistribution`` delegates to the source data manager) and what the written
file is measured against with ``suppressed_rows='star'``: every row is in the file, so the file's
distribution is the input's. With ``suppressed_rows='drop'`` the file's reference is the
distribution of the rows it keeps, which grows with every recovered row; the check of the union
(:func:`release_ok`) uses that distribution, and an iteration after which some class fails it is
discarded (the loop stops).

Models ARX does not recode locally are refused: δ-presence and k-map with a population table
(``population`` given), sample and population uniqueness (their estimate depends on the whole
table's class-size structure). Average risk and estimated k-map are allowed (bound to the whole
table's size).

:func:`local_recoding` returns a :class:`LocalRecodingResult` (each row's node, the rows still
suppressed, the iterations); :func:`release_local` writes the release, :func:`released_classes` gives
the classes of the written tuples, :func:`boxes_from_row_levels` the cells for the loss metrics and
:func:`achieved_from_release` the report's "achieved" measured on the written table.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import AnonymizeError
from .. import registry
from ..classes import ClassStats, class_stats, equivalence_classes
from ..hierarchy import value_str
from ..metrics import measure_release
from ..metrics.loss import DEFAULT_GS_FACTOR
from ..metrics.release import sensitive_summary
from ..models import PrivacyModel, all_ok
from ..models_population import bind_models, table_models
from ..recode import STAR, SUPPRESSED_ROWS
from ..table import EncodedTable
from .engine import Lattice
from .result import SearchResult

__all__ = [
    "BUDGETS",
    "LOCAL_ALGORITHMS",
    "LocalRecodingResult",
    "SubTable",
    "achieved_from_release",
    "boxes_from_row_levels",
    "check_local_models",
    "local_recoding",
    "release_local",
    "release_ok",
    "released_classes",
]

#: the full-domain searches local recoding runs (optimal or lowest-height searches; Datafly is a
#: one-node heuristic and refused, as in the CLI)
LOCAL_ALGORITHMS = ("flash", "incognito", "samarati")
#: suppression budget of each sub-search (module docstring)
BUDGETS = ("fraction", "records", "all")
#: metrics that charge suppressed rows; the others are replaced by NCP in sub-searches with budget 'all'
_CHARGES_SUPPRESSION = ("ncp", "dm", "suppressed", "loss")
#: ``suppressed_rows='arx'`` (:mod:`.privacy`): written as ``*`` like ``'star'``, but the ``*`` group is
#: not judged (ARX's outliers) and the reference distribution is the whole table's
_ARX = "arx"
_MODES = (*SUPPRESSED_ROWS, _ARX)
#: models ARX does not recode locally (``isLocalRecodingSupported`` false)
_REFUSED = ("sample-uniqueness", "population-uniqueness")


class SubTable(EncodedTable):
    """The rows ``rows`` of ``parent`` as a table of their own, whose reference distribution
    (:meth:`global_dist`) stays the parent's — the whole input's, as in ARX."""

    def __init__(self, parent: EncodedTable, rows: np.ndarray):
        rows = np.asarray(rows, dtype=np.int64)
        super().__init__(
            parent.df.iloc[rows].reset_index(drop=True),
            parent.schema,
            parent.hierarchies,
            np.ascontiguousarray(parent.qi_codes[rows]),
            np.ascontiguousarray(parent.sens_codes[rows]),
            parent.sens_values,
            parent.sens_hierarchies,
            None if parent.weights is None else parent.weights[rows],
        )
        self.parent = parent

    def global_dist(self) -> list[np.ndarray]:
        """The parent table's distribution of every sensitive attribute (not the sub-table's)."""
        return self.parent.global_dist()


def check_local_models(models: Sequence[PrivacyModel]) -> None:
    """One-line error for a model local recoding cannot honour (see the module docstring)."""
    for m in models:
        if getattr(m, "population", None) is not None or m.name in _REFUSED:
            raise AnonymizeError(
                f"local recoding cannot honour {m.name}"
                + (" with a population table" if getattr(m, "population", None) is not None else "")
                + ": its check depends on the whole table (ARX refuses it too); drop --local-recoding"
            )


# ---------------------------------------------------------------------------------- released text
class _Labels:
    """Per QI, an integer id for every distinct released text: hierarchy node labels at every level
    (level 0: the leaf values' canonical text, :func:`.hierarchy.value_str`) and ``*``. Two
    nodes whose labels read the same get the same id — one class in the file."""

    def __init__(self, table: EncodedTable):
        self.ids: list[list[np.ndarray]] = []
        self.texts: list[np.ndarray] = []
        self.star: list[int] = []
        for h in table.hierarchies:
            texts: list[str] = []
            sizes = []
            for lv in range(h.height + 1):
                lab = h.leaves if lv == 0 else h.labels[lv]
                texts.extend(value_str(x) for x in lab.tolist())
                sizes.append(len(lab))
            texts.append(STAR)
            codes, uniq = pd.factorize(np.asarray(texts, dtype=object))
            bounds = np.cumsum([0, *sizes])
            self.ids.append([codes[bounds[i] : bounds[i + 1]].astype(np.int64) for i in range(len(sizes))])
            self.texts.append(np.asarray(uniq, dtype=object))
            self.star.append(int(codes[-1]))

    def codes(self, table: EncodedTable, row_levels: np.ndarray, suppressed: np.ndarray) -> np.ndarray:
        """``(n, q)`` text ids of every row's released cells (``*`` for suppressed rows)."""
        out = np.empty(table.qi_codes.shape, dtype=np.int64)
        for j, h in enumerate(table.hierarchies):
            col = table.qi_codes[:, j]
            lv_col = row_levels[:, j]
            for lv in np.unique(lv_col).tolist():
                sel = lv_col == lv
                node = col[sel] if lv == 0 else h.maps[lv][col[sel]]
                out[sel, j] = self.ids[j][lv][node]
            out[suppressed, j] = self.star[j]
        return out


def released_classes(table: EncodedTable, row_levels: np.ndarray, suppressed: np.ndarray) -> tuple[np.ndarray, int]:
    """``(class_id per row, number of classes)``: one class per distinct released tuple as its text
    reads (suppressed rows form the all-``*`` class, shared with any generalized tuple that reads
    ``*`` in every QI)."""
    return equivalence_classes(_Labels(table).codes(table, row_levels, suppressed))


def release_ok(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    class_id: np.ndarray,
    n_classes: int,
    suppressed: np.ndarray,
    suppressed_rows: str = "star",
) -> bool:
    """Every class of a release passes every model, and the table-level models pass on the release.

    ``class_id`` — the released-tuple classes (:func:`released_classes`). ``'star'``: the suppressed
    rows are in the file (their class is one of ``class_id``'s), measured against the whole table's
    distribution; ``'drop'``: they are not, and the reference distribution is the kept rows';
    ``'arx'``: the suppressed rows are not judged (ARX's outliers), the reference is the whole
    table's."""
    sup = np.asarray(suppressed, dtype=bool)
    if suppressed_rows == _ARX:
        stats = class_stats(table, class_id, n_classes, rows=~sup)
    elif suppressed_rows == "drop":
        keep = ~sup
        if not keep.any():
            return False
        raw = class_stats(table, class_id, n_classes, rows=keep)
        ref = [h.sum(axis=0) / max(int(h.sum()), 1) for h in raw.sens_hist]
        stats = ClassStats(raw.sizes, raw.sens_hist, ref, table)
    else:
        stats = class_stats(table, class_id, n_classes)
    stats = stats.select(stats.sizes > 0)
    if not bool(all_ok(list(models), stats).all()):
        return False
    return all(m.table_ok(stats) for m in table_models(models))


# ---------------------------------------------------------------------------------- the iterations
@dataclass
class LocalRecodingResult:
    """What :func:`local_recoding` returns.

    ``search`` — the global search (iteration 0); ``nodes`` — the node (levels, one per QI) of every
    kept iteration, ``nodes[0]`` the global optimum; ``node_of_row`` — ``(n_tuples,)`` index into
    ``nodes`` of the node each row is released at, ``-1`` for a row still suppressed;
    ``suppressed_before`` / ``suppressed_after`` — rows suppressed by the global transformation and
    by the union (weighted rows counted); ``iterations`` — one dict per sub-search run (the last
    one may have recovered nothing); ``stopped`` — why the loop ended; ``budget``, ``sub_metric``,
    ``max_iterations`` — how it ran.
    """

    search: SearchResult
    nodes: list[tuple[int, ...]]
    node_of_row: np.ndarray
    suppressed_before: int
    suppressed_after: int
    iterations: list[dict] = field(default_factory=list)
    stopped: str = ""
    budget: str = "fraction"
    sub_metric: str = "ncp"
    max_iterations: int = 100
    seconds: float = 0.0
    suppressed_rows: str = "star"
    records: float | None = None

    @property
    def suppressed(self) -> np.ndarray:
        """Rows still suppressed after the last kept iteration."""
        return self.node_of_row < 0

    @property
    def recovered_rows(self) -> int:
        """Rows the global transformation suppressed and local recoding released."""
        return self.suppressed_before - self.suppressed_after

    def row_levels(self, heights: Sequence[int]) -> np.ndarray:
        """``(n_tuples, q)`` level of every row's cells: its node's levels; a suppressed row is at the
        top of every hierarchy (``heights``), which is what ``*`` says."""
        table = np.asarray([*self.nodes, tuple(int(h) for h in heights)], dtype=np.int64)
        return table[np.where(self.node_of_row < 0, len(self.nodes), self.node_of_row)]

    def report(self, qis: Sequence[str], weights: np.ndarray | None = None) -> dict:
        """The report's ``local_recoding`` entry: iterations run, rows recovered, suppressed before /
        after, and every node with the rows released at it."""
        w = np.ones(len(self.node_of_row), dtype=np.int64) if weights is None else np.asarray(weights)
        rows = np.bincount(
            self.node_of_row[self.node_of_row >= 0], weights=w[self.node_of_row >= 0], minlength=len(self.nodes)
        )
        return {
            "iterations": len(self.iterations),
            "max_iterations": self.max_iterations,
            "recovered_rows": int(self.recovered_rows),
            "suppressed_before": int(self.suppressed_before),
            "suppressed_after": int(self.suppressed_after),
            "stopped": self.stopped,
            "budget": self.budget,
            **({"records": self.records} if self.records is not None else {}),
            "sub_metric": self.sub_metric,
            "reference_distribution": "the rows the file keeps (the union is re-checked against them)"
            if self.suppressed_rows == "drop"
            else "the whole input table (as ARX: every sub-search compares with it)",
            "classes": "each distinct released tuple (cells of different nodes never merge unless they read the same)",
            "nodes": [
                {
                    "iteration": int(i),
                    "levels": {name: int(x) for name, x in zip(qis, lv)},
                    "rows": int(rows[i]),
                }
                for i, lv in enumerate(self.nodes)
            ],
            "runs": self.iterations,
            "seconds": self.seconds,
        }


def local_recoding(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    max_suppression: float,
    metric: str = "ncp",
    max_iterations: int = 100,
    *,
    algorithm: str = "flash",
    budget: str = "fraction",
    suppressed_rows: str = "star",
    progress: Callable[[str], None] | None = None,
    lattice: Lattice | None = None,
    lattice_options: Mapping | None = None,
    records: float | None = None,
    gs_adaption: float = 0.0,
) -> LocalRecodingResult:
    """Global full-domain search, then iterative re-searches of the suppressed rows (module docstring).

    ``table`` — the encoded table; ``models`` — privacy models (bound to the whole table here:
    estimated k-map keeps the whole table's ``k'``); ``max_suppression`` — the fraction of rows the
    global search may suppress (and, with ``budget='fraction'``, each sub-search of its sub-table);
    ``metric`` — how a search chooses its node (:data:`.result.METRICS`); ``max_iterations`` — most
    sub-searches; ``algorithm`` — one of :data:`LOCAL_ALGORITHMS`; ``suppressed_rows`` — ``'star'``,
    ``'drop'`` or ``'arx'`` (:func:`release_ok`); ``lattice`` — a lattice of ``table`` already built with
    these models and budget (the global search runs on it); ``lattice_options`` — further keyword
    arguments of :class:`.engine.Lattice` (e.g. the NCP flavour, QI weights), the same for the global
    lattice and every sub-search's; ``records`` — with ``budget='records'``, the fraction in (0, 1] of
    all rows each sub-search must release (ARX's ``optimizeIterativeFast``); ``gs_adaption`` — ARX's
    adaption factor (``optimizeIterative(handle, gsFactor, maxIterations, adaptionFactor)``, the GUI's
    "fixpoint adaptive" mode; ``budget='fraction'`` and ``metric='loss'`` only): after a sub-search that
    releases no row (or finds no node) the steps' gs-factor (``lattice_options['gs_factor']``) grows by
    it and the loop goes on while it stays ≤ 1 — each such step counts as an iteration, as in ARX.
    It matters where a step may keep every row suppressed (a suppression limit of 1): a low factor
    makes suppression cheap, a higher one makes the next step release rows.

    Errors (:class:`AnonymizeError`, one line): another algorithm, a refused model
    (:func:`check_local_models`), a bad budget or iteration count, or no global node.
    """
    t0 = time.perf_counter()
    if algorithm not in LOCAL_ALGORITHMS:
        raise AnonymizeError(
            f"local recoding runs on the full-domain searches {', '.join(LOCAL_ALGORITHMS)}, not '{algorithm}'"
        )
    if budget not in BUDGETS:
        raise AnonymizeError(f"unknown local recoding budget '{budget}' (use {' or '.join(BUDGETS)})")
    if suppressed_rows not in _MODES:
        raise AnonymizeError(f"unknown handling of suppressed rows '{suppressed_rows}' (use {', '.join(_MODES)})")
    if int(max_iterations) < 1:
        raise AnonymizeError(f"local recoding needs at least one iteration, got {max_iterations}")
    if budget == "records":
        if records is None or not (0.0 < float(records) <= 1.0):
            raise AnonymizeError(
                f"the share of records each local recoding step releases must be in (0, 1], got {records}"
            )
    elif records is not None:
        raise AnonymizeError(f"a share of records per step needs the budget 'records' (budget: {budget})")
    if not 0.0 <= float(gs_adaption) <= 1.0:
        raise AnonymizeError(f"the gs-factor's adaption must be in [0, 1], got {gs_adaption}")
    if gs_adaption and (budget != "fraction" or metric != "loss"):
        raise AnonymizeError(
            "adapting the gs-factor is ARX's optimizeIterative: it needs the metric 'loss' and each step's "
            "suppression fraction (not a share of records per step)"
        )
    models = bind_models(list(models), table.n)
    check_local_models(models)
    alg = registry.get(algorithm)
    opts = dict(lattice_options or {})
    step_gs = float(opts.get("gs_factor", DEFAULT_GS_FACTOR))
    lat = lattice
    if lat is None:
        lat = Lattice(table, models, max_suppression, suppressed_rows=suppressed_rows, **opts)
    search = alg.run(lat, metric=metric, progress=progress)
    cid, fail = lat.row_classes(search.levels)
    sup = fail[cid]
    w = table.row_weights()
    node_of_row = np.where(sup, -1, 0).astype(np.int64)
    nodes: list[tuple[int, ...]] = [tuple(int(x) for x in search.levels)]
    before = int(w[sup].sum())
    sub_metric = metric if budget != "all" or metric in _CHARGES_SUPPRESSION else "ncp"
    sub_fraction = float(max_suppression) if budget == "fraction" else 1.0  # 'records': set per iteration
    min_size = max((m.minimal_class_size for m in models), default=1)
    labels = _Labels(table)
    heights = table.heights
    res = LocalRecodingResult(
        search,
        nodes,
        node_of_row,
        before,
        before,
        [],
        "",
        budget,
        sub_metric,
        int(max_iterations),
        0.0,
        suppressed_rows,
        None if records is None else float(records),
    )
    while True:
        rows = np.flatnonzero(node_of_row < 0)
        if len(rows) == 0:
            res.stopped = "no row left suppressed"
            break
        if len(res.iterations) >= int(max_iterations):
            res.stopped = "iteration limit"
            break
        n_sub = int(w[rows].sum())
        if n_sub < min_size:
            res.stopped = f"{n_sub} row(s) left, fewer than the smallest class the models allow ({min_size})"
            break
        it = len(res.iterations) + 1
        t = time.perf_counter()
        sub = SubTable(table, rows)
        sub_progress = None if progress is None else (lambda msg, it=it: progress(f"local recoding {it}: {msg}"))
        if budget == "records":  # ARX's optimizeIterativeFast: release at least records·n rows of the sub-table
            assert records is not None
            sub_fraction = 1.0 - min(1.0, float(records) * float(table.n) / float(n_sub))
        if gs_adaption:
            opts["gs_factor"] = step_gs
        try:
            slat = Lattice(sub, models, sub_fraction, suppressed_rows=suppressed_rows, **opts)
            sres = alg.run(slat, metric=sub_metric, progress=sub_progress)
        except AnonymizeError as e:
            res.iterations.append(
                {"iteration": it, "rows": n_sub, "recovered": 0, "levels": None, "seconds": time.perf_counter() - t}
                | ({"gs_factor": step_gs} if gs_adaption else {})
            )
            if gs_adaption and step_gs + gs_adaption <= 1.0:  # ARX: adapt and try again
                step_gs += gs_adaption
                continue
            res.stopped = f"no node satisfies the models on the {n_sub} suppressed rows ({e})"
            break
        scid, sfail = slat.row_classes(sres.levels)
        released = rows[~sfail[scid]]
        run = {
            "iteration": it,
            "rows": n_sub,
            "suppression_limit": sub_fraction,
            "recovered": int(w[released].sum()),
            "levels": [int(x) for x in sres.levels],
            "checked": int(sres.stats.get("checked", 0) or 0),
            "seconds": 0.0,
        }
        if gs_adaption:
            run["gs_factor"] = step_gs
        res.iterations.append(run)
        if len(released) == 0:
            run["seconds"] = time.perf_counter() - t
            if gs_adaption and step_gs + gs_adaption <= 1.0:  # ARX: adapt and try again
                step_gs += gs_adaption
                continue
            res.stopped = "an iteration released no row"
            break
        candidate = node_of_row.copy()
        candidate[released] = len(nodes)
        lv_rows = np.asarray([*nodes, tuple(int(x) for x in sres.levels), tuple(heights)], dtype=np.int64)
        row_levels = lv_rows[np.where(candidate < 0, len(nodes) + 1, candidate)]
        c_sup = candidate < 0
        ccid, cn = equivalence_classes(labels.codes(table, row_levels, c_sup))
        ok = release_ok(table, models, ccid, cn, c_sup, suppressed_rows)
        run["seconds"] = time.perf_counter() - t
        if not ok:
            run["discarded"] = True
            res.stopped = "the union failed the models on its released tuples; the iteration was discarded"
            break
        nodes.append(tuple(int(x) for x in sres.levels))
        node_of_row = candidate
        res.node_of_row = node_of_row
        if progress:
            progress(f"local recoding {it}: {run['recovered']:,} rows released at {run['levels']}")
    res.suppressed_after = int(w[node_of_row < 0].sum())
    res.seconds = time.perf_counter() - t0
    return res


# ---------------------------------------------------------------------------------- the release
def boxes_from_row_levels(table: EncodedTable, row_levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells ``(lo, hi)`` (each ``(n, q)`` leaf codes) of a release whose row ``i`` is generalized
    at ``row_levels[i]`` (:func:`.metrics.cells.boxes_from_levels` per row)."""
    lo = np.empty(table.qi_codes.shape, dtype=np.int64)
    hi = np.empty_like(lo)
    for j, h in enumerate(table.hierarchies):
        col = table.qi_codes[:, j]
        for lv in np.unique(row_levels[:, j]).tolist():
            sel = row_levels[:, j] == lv
            first, last = h.node_span(int(lv))
            node = h.maps[int(lv)][col[sel]]
            lo[sel, j] = first[node]
            hi[sel, j] = last[node]
    return lo, hi


def release_local(
    table: EncodedTable,
    row_levels: np.ndarray,
    suppressed: np.ndarray,
    *,
    suppressed_rows: str = "star",
) -> pd.DataFrame:
    """The release of per-row levels: QI ``j`` of row ``i`` → its hierarchy label at
    ``row_levels[i, j]``, suppressed rows ``*`` everywhere (``'star'``, ``'arx'``) or left out
    (``'drop'``).

    A QI whose released rows are all at one level is written as :func:`.recode.release_levels`
    writes it (level 0: the input's values); a QI whose rows are at several levels is written as
    text — labels, and the canonical text of the values at level 0 — which is exactly the text the
    classes of :func:`released_classes` are built from."""
    if suppressed_rows not in _MODES:
        raise AnonymizeError(f"unknown handling of suppressed rows '{suppressed_rows}' (use {', '.join(_MODES)})")
    sup = np.asarray(suppressed, dtype=bool)
    labels = _Labels(table)
    codes = labels.codes(table, row_levels, sup)
    out = table.df.copy()
    for j, (name, h) in enumerate(zip(table.schema.qis, table.hierarchies)):
        used = np.unique(row_levels[~sup, j]) if (~sup).any() else np.zeros(1, dtype=np.int64)
        if len(used) == 1:
            lv = int(used[0])
            col = table.df[name].to_numpy() if lv == 0 else h.labels[lv][h.maps[lv][table.qi_codes[:, j]]]
            if sup.any():
                col = np.asarray(col, dtype=object).copy()
                col[sup] = STAR
        else:
            col = labels.texts[j][codes[:, j]]
        out[name] = col
    if suppressed_rows == "drop" and sup.any():
        out = out.loc[~sup].reset_index(drop=True)
    return out


def achieved_from_release(df: pd.DataFrame, table: EncodedTable, suppressed: np.ndarray, suppressed_rows: str) -> dict:
    """The report's "achieved" (the keys of :func:`.metrics.achieved_privacy`) measured on the
    release as written (:func:`.metrics.measure_release`: its QI columns as text, each distinct
    tuple one class) — k, classes, and per sensitive attribute distinct / entropy l, the recursive
    (c,l) bound, t, β, δ-disclosure and α."""
    w = table.weights
    if w is not None and suppressed_rows == "drop":
        w = w[~np.asarray(suppressed, dtype=bool)]
    qis, sens = table.schema.qis, table.schema.sensitive
    frame = df[qis + sens].copy()
    for c in qis:
        frame[c] = frame[c].map(value_str)
    rep = measure_release(frame, qis, sens, hierarchies=dict(table.sens_hierarchies), weights=w)
    sa = {}
    for name, m in rep["sensitive_attributes"].items():
        sa[name] = sensitive_summary(m)
    return {
        "k": int(rep["k"]),
        "classes": int(rep["classes"].get("classes", 0)),
        "sensitive_attributes": sa,
        "measured_on": "the written release (each distinct released tuple is a class)",
    }
