"""ARX's outlier semantics measured on a release: the privacy the non-suppressed classes offer, and
what the all-``*`` group of suppressed rows breaks.

ARX (``HashGroupify``) turns the classes that fail a privacy model into *outliers* while the
suppression budget (``ARXConfiguration.setSuppressionLimit``) allows, and checks the models — and
its sample-based risk criteria (``HashGroupifyDistribution`` counts the non-outlier classes only) —
on the other classes: the outliers, written with every QI ``*``, form one group that is not
required to satisfy anything. ppdm's ``suppressed_rows='arx'`` (:data:`..fulldomain.privacy.ARX`)
releases and checks the same way; these functions describe such a release:

* :func:`achieved_outside_group` — k, l, t, β, δ, α of the released classes without the ``*`` group,
  measured, as ARX checks them, against the sensitive distribution of the whole table (the written
  file's, ``*`` rows included);
* :func:`suppressed_group` — the ``*`` group's size and, per model, whether it holds on that group
  alone (e.g. a group of 7 rows breaks k = 10).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..classes import ClassStats, class_stats
from ..table import EncodedTable
from .release import sensitive_privacy, sensitive_summary

__all__ = ["achieved_outside_group", "suppressed_group"]


def achieved_outside_group(table: EncodedTable, class_id: np.ndarray, n_classes: int, suppressed: np.ndarray) -> dict:
    """The privacy of the classes other than the suppressed rows' ``*`` group (same keys as
    :func:`.release.achieved_privacy`), the sensitive reference distribution being the whole
    table's — what ARX requires of the non-outlier classes. k and the l-diversities equal what
    pycanon measures on the written file without its ``*`` rows; t, β and δ there would use the
    remaining rows' distribution instead."""
    sup = np.asarray(suppressed, dtype=bool)
    stats = class_stats(table, np.asarray(class_id, dtype=np.int64), n_classes, rows=~sup if sup.any() else None)
    stats = stats.select(stats.sizes > 0)
    out: dict = {"k": int(stats.sizes.min()) if stats.n_classes else 0, "classes": int(stats.n_classes)}
    glob = table.global_dist()
    sens = {}
    for j, name in enumerate(table.schema.sensitive):
        hist = stats.sens_hist[j]
        if len(hist) == 0:
            continue
        values = table.sens_values[j]
        h = table.sens_hierarchies.get(name)
        leaf = h.encode(values, column=h.name) if h is not None else None
        numeric = bool(np.issubdtype(np.asarray(values).dtype, np.number))
        m = sensitive_privacy(hist, np.asarray(glob[j], dtype=np.float64), numeric, h, leaf)
        sens[name] = sensitive_summary(m)
    out["sensitive_attributes"] = sens
    out["reference_distribution"] = "whole table"
    return out


def suppressed_group(
    table: EncodedTable,
    class_id: np.ndarray,
    n_classes: int,
    suppressed: np.ndarray,
    models: Sequence,
) -> dict:
    """The all-``*`` group of suppressed rows and, per model, whether it holds on that group alone.

    Per-class models are checked on the group as one class against the whole table's sensitive
    distribution (its population count, for δ-presence / k-map with a population table, is the
    whole population: ``*`` matches every row). Table-level models (average risk, sample / population
    uniqueness) have no verdict on one group: they are judged on the file as written, the released
    classes plus the group (``"scope": "file"``). An empty group holds everything.

    Returns ``{"rows", "holds", "breaks": [requirement, ...], "models": [{"model", "requirement",
    "holds", "scope"}, ...]}``.
    """
    from ..models_population import population_of

    sup = np.asarray(suppressed, dtype=bool)
    w = table.row_weights()
    rows = int(round(float(w[sup].sum()))) if sup.any() else 0
    hists = []
    for j, vals in enumerate(table.sens_values):
        hists.append(
            np.bincount(table.sens_codes[sup, j], weights=w[sup], minlength=len(vals))
            .astype(np.int64)
            .reshape(1, len(vals))
        )
    pop = population_of(models)
    group = ClassStats(
        np.array([rows], dtype=np.int64),
        hists,
        table.global_dist(),
        table,
        None if pop is None else np.array([len(pop)], dtype=np.int64),
    )
    verdicts = []
    file_sizes = None
    for m in models:
        if getattr(m, "table_level", False):
            if file_sizes is None:
                cid = np.asarray(class_id, dtype=np.int64)
                keep = ~sup
                file_sizes = np.bincount(cid[keep], weights=w[keep], minlength=n_classes).astype(np.int64)
                if rows:
                    file_sizes = np.append(file_sizes, rows)
            holds = bool(m.table_ok(ClassStats(file_sizes, [], [], table)))
            scope = "file"
        else:
            holds = rows == 0 or bool(m.class_ok(group)[0])
            scope = "group"
        verdicts.append({"model": m.describe(), "requirement": m.requirement(), "holds": holds, "scope": scope})
    return {
        "rows": rows,
        "holds": all(v["holds"] for v in verdicts),
        "breaks": [v["requirement"] for v in verdicts if not v["holds"]],
        "models": verdicts,
    }
