"""Measuring privacy as released: what ``ppdm check`` prints and what every report's "achieved" says.

* :func:`sensitive_privacy` — the one measurement of a sensitive attribute over classes:
  distinct l, entropy l (Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam, "l-Diversity: privacy
  beyond k-anonymity", ACM TKDD 1(1), 2007; Aggarwal, *Data Mining: The Textbook*, Springer 2015,
  eq. 20.10), the recursive-(c,l) bound (eq. 20.11), and t for every distance (Li, Li,
  Venkatasubramanian, "t-Closeness: privacy beyond k-anonymity and l-diversity", ICDE 2007;
  Aggarwal 2015, eqs. 20.12–20.14), basic and enhanced β (J. Cao, P. Karras, "Publishing microdata
  with a robust privacy guarantee", PVLDB 2012), δ-disclosure (J. Brickell, V. Shmatikov, "The cost
  of privacy: destruction of data-mining utility in anonymized data publishing", KDD 2008) and the α
  of (α,k)-anonymity (R. C.-W. Wong, J. Li, A. W.-C. Fu, K. Wang, KDD 2006) — the last three as
  :mod:`..models_sensitive` defines them. Both functions below call it.
* :func:`achieved_privacy` — the privacy an anonymizer's release offers, from its encoded table,
  class labels and suppressed rows;
* :func:`measure_release` — any table *as released* (generalized values such as ``*`` or
  ``20-29`` are plain categories), like pycanon but vectorized and index-independent, with
  DM, CDM, C_avg, re-identification risks and NCP where hierarchies are given.
"""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pandas as pd

from ...errors import AnonymizeError
from ..classes import class_stats, equivalence_classes
from ..distances import (
    class_entropy,
    emd_hierarchical,
    emd_ordered,
    kl_divergence,
    probabilities,
    sorted_desc,
    variational,
)
from ..hierarchy import Hierarchy, canonical_strings, value_str
from ..models_sensitive import achieved_alpha, achieved_beta, achieved_delta
from ..table import EncodedTable, Schema
from .cells import cell_loss, hierarchy_domain
from .class_size import CDM_DEFINITION, average_class_size, cdm, discernibility, summarize_classes
from .risk import reidentification_risk

__all__ = ["sensitive_privacy", "achieved_privacy", "measure_release"]


def sensitive_privacy(
    hist: np.ndarray,
    Q: np.ndarray,
    numeric: bool,
    hierarchy: Hierarchy | None = None,
    leaf_of_value: np.ndarray | None = None,
    c: float | None = None,
) -> dict:
    """Privacy of one sensitive attribute over ``C`` non-empty classes.

    ``hist`` — ``(C, V)`` counts of each value per class; ``Q`` — ``(V,)`` the reference
    distribution (the whole table's); ``numeric`` — the values are ordered (EMD uses the ordered
    ground distance); ``hierarchy`` and ``leaf_of_value`` (the hierarchy leaf of each value) add
    the hierarchical EMD; ``c`` adds the largest l with recursive (c,l)-diversity at that c.

    Returns ``l_distinct`` (fewest distinct values in a class), ``l_entropy`` = exp(min class
    entropy) and its floor (what pycanon reports), ``recursive`` = ``{"l": l_distinct, "c_bound"}``
    (every class is (c, l_distinct)-diverse for every c > c_bound; with ``c``: ``"c"``,
    ``"l_at_c"``), ``t`` per distance (max over classes) and ``ground_for_emd``; ``beta_basic`` /
    ``beta_enhanced`` — the smallest β with basic / enhanced β-likeness against ``Q`` (enhanced:
    ``None`` when some class has ``q_v > Q_v(1 − ln Q_v)``, which no β allows); ``delta_disclosure``
    — max |ln(q_v/Q_v)| (``None`` when a value is missing from some class: no δ holds); ``alpha`` —
    the largest frequency of a value in a class.
    """
    hist = np.asarray(hist)
    P = probabilities(hist)
    distinct = (hist > 0).sum(axis=1)
    l_distinct = int(distinct.min())
    ent = class_entropy(hist)
    r = sorted_desc(hist)
    tail = r[:, l_distinct - 1 :].sum(axis=1) if l_distinct >= 1 else np.zeros(len(r))
    c_bound = float((r[:, 0] / np.maximum(tail, 1e-300)).max()) if l_distinct >= 1 else float("inf")
    rec: dict = {"l": l_distinct, "c_bound": c_bound}
    if c is not None:
        best = 0
        for l_try in range(1, l_distinct + 1):
            if np.all(r[:, 0] < c * r[:, l_try - 1 :].sum(axis=1)):
                best = l_try
        rec["c"] = float(c)
        rec["l_at_c"] = best
    var = float(variational(P, Q).max())
    t = {
        "variational": var,
        "kl": float(kl_divergence(P, Q).max()),
        "emd_equal": var,
        "emd_ordered": float(emd_ordered(P, Q).max()),
    }
    t["emd"] = t["emd_ordered"] if numeric else t["emd_equal"]
    if hierarchy is not None and leaf_of_value is not None:
        t["emd_hierarchical"] = float(emd_hierarchical(P, Q, hierarchy, leaf_of_value).max())
    e_min = float(ent.min())
    return {
        "l_distinct": l_distinct,
        "l_entropy": float(math.exp(e_min)),
        "l_entropy_floor": int(math.floor(math.exp(e_min) + 1e-9)),
        "recursive": rec,
        "t": t,
        "ground_for_emd": "ordered" if numeric else "equal",
        "beta_basic": achieved_beta(hist, Q, "basic"),
        "beta_enhanced": achieved_beta(hist, Q, "enhanced"),
        "delta_disclosure": achieved_delta(hist, Q),
        "alpha": achieved_alpha(hist),
    }


def sensitive_summary(m: dict) -> dict:
    """The per-attribute figures a report's "achieved" keeps of :func:`sensitive_privacy`'s measurement."""
    return {
        "l_distinct": m["l_distinct"],
        "l_entropy": m["l_entropy"],
        "recursive_c_bound": m["recursive"]["c_bound"],
        "t": m["t"],
        "beta_basic": m["beta_basic"],
        "beta_enhanced": m["beta_enhanced"],
        "delta_disclosure": m["delta_disclosure"],
        "alpha": m["alpha"],
    }


def achieved_privacy(
    table: EncodedTable, class_id: np.ndarray, n_classes: int, suppressed: np.ndarray, suppressed_rows: str = "star"
) -> dict:
    """Privacy the release offers *as written*, measured with :func:`sensitive_privacy`: k (smallest
    class); per sensitive attribute distinct l, entropy l, the recursive-(c,l) bound, t for each
    distance, basic and enhanced β, δ-disclosure and α.

    ``suppressed_rows`` says how the suppressed rows were written: ``'star'`` — as one more class
    (``*`` in every QI), measured like the others, against the distribution of all rows;
    ``'drop'`` — left out, so the classes are measured against the distribution of the rows
    kept. Either way the figures equal what :func:`measure_release` (or pycanon) reads off the
    file."""
    sup = np.asarray(suppressed, dtype=bool)
    cid = np.asarray(class_id, dtype=np.int64)
    rows = None
    if sup.any():
        if suppressed_rows == "star":
            cid = np.where(sup, n_classes, cid)
            n_classes += 1
        else:
            rows = ~sup
    stats = class_stats(table, cid, n_classes, rows=rows)
    stats = stats.select(stats.sizes > 0)
    out: dict = {"k": int(stats.sizes.min()) if stats.n_classes else 0, "classes": int(stats.n_classes)}
    sens = {}
    for j, name in enumerate(table.schema.sensitive):
        hist = stats.sens_hist[j]
        if len(hist) == 0:
            continue
        values = table.sens_values[j]
        h = table.sens_hierarchies.get(name)
        leaf = h.encode(values, column=h.name) if h is not None else None
        numeric = bool(np.issubdtype(np.asarray(values).dtype, np.number))
        ref = hist.sum(axis=0) / max(int(hist.sum()), 1)
        m = sensitive_privacy(hist, ref, numeric, h, leaf)
        sens[name] = sensitive_summary(m)
    out["sensitive_attributes"] = sens
    return out


def _factorize_columns(df: pd.DataFrame, cols, uniques: list | None = None) -> np.ndarray:
    out = np.empty((len(df), len(cols)), dtype=np.int64)
    for j, c in enumerate(cols):
        out[:, j], u = pd.factorize(df[c], use_na_sentinel=False)
        if uniques is not None:
            uniques.append(u)
    return out


_RANGE = None


def _parse_range(text: str):
    """``'20-29'``, ``'[20, 30)'``, ``'20..29'``, ``'20~29'`` → (lo, hi, hi_open) or None."""
    global _RANGE
    if _RANGE is None:
        num = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
        _RANGE = re.compile(r"^\s*([\[(]?)\s*" + num + r"\s*(?:-|,|\.\.|~)\s*" + num + r"\s*([\])]?)\s*$")
    m = _RANGE.match(text)
    if not m:
        return None
    return float(m.group(2)), float(m.group(3)), m.group(4) == ")"


def _label_cells(h: Hierarchy, inv: np.ndarray, uniq_raw, column: str):
    """Map released values to hierarchy cells (lo, hi leaf codes): the lowest level whose label
    matches; for numeric hierarchies also plain leaf numbers and ranges such as ``20-29`` or
    ``[20, 30)``. A categorical value that is no label of the hierarchy is an error; a numeric
    value that is neither (e.g. a class mean) gives None (NCP not measurable). ``inv``/``uniq_raw``
    are the column's ``pd.factorize`` codes and uniques."""
    uniq = np.array([value_str(v) for v in uniq_raw], dtype=object)
    lo = np.full(len(uniq), -1, dtype=np.int64)
    hi = np.full(len(uniq), -1, dtype=np.int64)
    for lv in range(h.height + 1):
        pos = pd.Index(h.labels[lv].astype(str)).get_indexer(uniq)  # labels are unique within a level
        first, last = h.node_span(lv)
        new = (lo < 0) & (pos >= 0)
        lo[new] = first[pos[new]]
        hi[new] = last[pos[new]]
    if (lo < 0).any() and h.numeric:
        leaf_values = h.leaves.astype(np.float64)
        for i in np.flatnonzero(lo < 0):
            try:
                x = float(uniq[i])
                a, b, open_ = x, x, False
            except ValueError:
                r = _parse_range(uniq[i])
                if r is None:
                    continue
                a, b, open_ = r
            lo_i = int(np.searchsorted(leaf_values, a, side="left"))
            hi_i = int(np.searchsorted(leaf_values, b, side="left" if open_ else "right")) - 1
            if lo_i <= hi_i and lo_i < len(leaf_values) and (a != b or leaf_values[lo_i] == a):
                lo[i], hi[i] = lo_i, hi_i
    if (lo < 0).any():
        bad = uniq[lo < 0]
        if not h.numeric:
            more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
            raise AnonymizeError(
                f"column '{column}': value {', '.join(repr(str(b)) for b in bad[:3])}{more} not in hierarchy "
                f"'{h.name}' (at any level)"
            )
        return None
    return lo[inv], hi[inv]


def measure_release(
    df: pd.DataFrame,
    qis,
    sensitive=(),
    identifiers=(),
    hierarchies=None,
    c: float | None = None,
    population: pd.DataFrame | None = None,
    weights: np.ndarray | None = None,
) -> dict:
    """Measure a table *as released* (generalized values such as ``*`` or ``20-29`` are plain
    categories), like pycanon but vectorized and index-independent.

    Reports: rows, classes and their sizes, k (Aggarwal 2015, def. 20.3.1); per sensitive attribute
    distinct l (Machanavajjhala et al. 2007), entropy l = exp(min class entropy) (Aggarwal 2015,
    eq. 20.10; pycanon reports its floor), recursive (c,l) (eq. 20.11: ``c_bound`` such that every
    class is (c, l)-diverse for every c > c_bound at l = distinct l, and with ``c`` the largest l
    that holds), t for each distance (variational eq. 20.13, KL eq. 20.14, EMD equal/ordered,
    hierarchical when a hierarchy for the attribute is given), basic and enhanced β, δ-disclosure and
    α (:func:`sensitive_privacy`); DM, CDM, C_avg,
    prosecutor/journalist/marketer risk (journalist against ``population`` if given: a table with
    the same QI columns in the same released form); NCP for QIs whose hierarchy is given and whose
    released values are labels of it.

    ``weights`` — each row's multiplicity: ``df`` is then the distinct released tuples of a larger
    table with their counts (what an engine's ``GROUP BY`` of a written file returns, see
    :mod:`anonymize.engines`); every figure is the one of the table the rows stand for.
    """
    t0 = time.perf_counter()
    qis, sensitive, identifiers = list(qis), list(sensitive), list(identifiers)
    if len(df.columns) == 0 or len(df) == 0:
        raise AnonymizeError("the table has no rows")

    Schema(qis, sensitive, identifiers).validate(df.columns)
    for col in qis + sensitive:
        na = df[col].isna().to_numpy()
        if na.any():
            raise AnonymizeError(
                f"column '{col}' has {int(na.sum())} missing value(s) (first at data row "
                f"{int(np.argmax(na)) + 1}); fill or drop them first"
            )
    hierarchies = dict(hierarchies or {})
    w = None
    if weights is not None:
        w = np.asarray(weights, dtype=np.int64)
        if population is not None:
            raise AnonymizeError("a population table cannot be matched against a weighted (grouped) release")
    n = len(df) if w is None else int(w.sum())
    qi_uniques: list = []
    codes = _factorize_columns(df, qis, qi_uniques)
    cid, C = equivalence_classes(codes)
    sizes = np.bincount(cid, weights=w, minlength=C).astype(np.int64)
    k = int(sizes.min())
    out: dict = {
        "rows": n,
        "quasi_identifiers": qis,
        "sensitive": sensitive,
        "classes": summarize_classes(sizes),
        "k": k,
    }
    sens_out = {}
    for s in sensitive:
        col = df[s]
        h = hierarchies.get(s)
        if h is not None:
            leaf = h.encode(col, column=s)
            present = np.unique(leaf)
            sc = np.searchsorted(present, leaf)
            values = h.leaves[present]
        else:
            is_num = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
            sc, values = pd.factorize(col if is_num else canonical_strings(col), sort=True)
        V = len(values)
        hist = np.bincount(cid * V + sc, weights=w, minlength=C * V).reshape(C, V).astype(np.int64)
        Q = np.bincount(sc, weights=w, minlength=V) / n
        numeric_sens = np.issubdtype(np.asarray(values).dtype, np.number)
        sens_out[s] = {
            "distinct_values": V,
            **sensitive_privacy(hist, Q, numeric_sens, h, present if h is not None else None, c),
        }
    out["sensitive_attributes"] = sens_out
    out["dm"] = discernibility(sizes)
    out["cdm"] = cdm(sizes)
    out["cdm_definition"] = CDM_DEFINITION
    out["c_avg"] = average_class_size(sizes, k)
    pop_sizes = None
    if population is not None:
        missing = [q_ for q_ in qis if q_ not in population.columns]
        if missing:
            raise AnonymizeError(f"population table lacks quasi-identifier column(s): {', '.join(missing)}")
        both = pd.concat(
            [df[qis].apply(canonical_strings), population[qis].apply(canonical_strings)], ignore_index=True
        )
        bcodes = _factorize_columns(both, qis)
        bid, BC = equivalence_classes(bcodes)
        pop_count = np.bincount(bid[n:], minlength=BC)
        # release class -> combined class id of any of its rows
        rep = np.zeros(C, dtype=np.int64)
        rep[cid] = bid[:n]
        pop_sizes = pop_count[rep]
        out["population_rows"] = int(len(population))
    out["risk"] = reidentification_risk(sizes, pop_sizes)
    ncp_per: dict[str, float | None] = {}
    for j, qname in enumerate(qis):
        h = hierarchies.get(qname)
        if h is None:
            continue
        cells = _label_cells(h, codes[:, j], qi_uniques[j], qname)
        if cells is None:
            ncp_per[qname] = None
            continue
        lo, hi = cells
        loss = cell_loss(h, lo, hi, hierarchy_domain(h) if h.numeric else None, "height")
        ncp_per[qname] = float(np.mean(loss)) if w is None else float(loss @ w) / n
    if ncp_per:
        vals_ = [v for v in ncp_per.values() if v is not None]
        out["ncp"] = {"per_attribute": ncp_per, "ncp": float(np.mean(vals_)) if len(vals_) == len(qis) else None}
    out["seconds"] = time.perf_counter() - t0
    return out
