"""Every attack against one release and one external table: what ``ppdm attack`` prints.

:func:`run_attacks` joins the release to the external table once (:func:`.linkage.link`) and
reports, per attack, the share of external people it harms:

* ``linkage`` — re-identified (exactly one matching record);
* ``homogeneity`` and ``background_knowledge`` — sensitive value disclosed (per sensitive column);
* ``known_values`` — re-identified from B random known values (with ``known``);
* ``differencing`` — sensitive value obtained by two answerable aggregate queries if the release
  were served by an unaudited interface refusing query sets below ``min_query_size`` rows
  (only for people matched to one record; per sensitive column).

A bucketized release (Anatomy, MSAL) has no sensitive column: pass each sensitive attribute's table
(``group_id``, value, ``count``) in ``sensitive_tables``; every released row then carries its group's
histogram (:mod:`.bucketized`), and differencing, which needs a row-level value, is not run for it.

When the external table also has a sensitive column (ground truth, e.g. in a test), each
disclosure attack also reports how many of its conclusions are ``correct``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from ..publish.hierarchy import Hierarchy
from .bucketized import row_histograms
from .cells import value_text
from .differencing import differencing_exposed
from .disclosure import AttackResult, background_knowledge_attack, homogeneity_attack, linkage_attack
from .known_values import known_values_attack
from .linkage import factorize_text, link

__all__ = ["run_attacks"]


def run_attacks(
    release: pd.DataFrame,
    external: pd.DataFrame,
    qis: Sequence[str],
    sensitive: Sequence[str] = (),
    hierarchies: Mapping[str, Hierarchy] | None = None,
    known: int | None = None,
    rule_out: int = 1,
    min_query_size: int = 2,
    seed: int = 0,
    sensitive_tables: Mapping[str, pd.DataFrame] | None = None,
) -> list[AttackResult]:
    """Run every applicable attack (module docstring); a list of :class:`.disclosure.AttackResult`."""
    qis, sensitive = list(qis), list(sensitive)
    if rule_out < 0:
        raise AnonymizeError(f"--rule-out must be non-negative, got {rule_out}")
    if min_query_size < 0:
        raise AnonymizeError(f"--min-query-size must be non-negative, got {min_query_size}")
    overlap = set(qis) & set(sensitive)
    if overlap:
        raise AnonymizeError(f"column(s) {', '.join(sorted(overlap))} cannot be both quasi-identifier and sensitive")
    tables = dict(sensitive_tables or {})
    unknown = sorted(set(tables) - set(sensitive))
    if unknown:
        raise AnonymizeError(f"sensitive table(s) for {', '.join(unknown)}, which --sensitive does not name")
    row_hists = {s: row_histograms(release, t, s) for s, t in tables.items()}
    lk = link(release, external, qis, sensitive, hierarchies, row_hists=row_hists)
    truth = {s: external[s].to_numpy() for s in sensitive if s in external.columns}
    results = [linkage_attack(lk, sensitive[0] if sensitive else None, truth.get(sensitive[0]) if sensitive else None)]
    for s in sensitive:
        results.append(homogeneity_attack(lk, s, truth.get(s)))
        results.append(background_knowledge_attack(lk, s, rule_out, truth.get(s)))
    if known is not None:
        results.append(known_values_attack(release, external, known, None, hierarchies, seed))
    if sensitive:
        exposed_rows = differencing_exposed(release, qis, min_query_size)
        single = lk.single_record
        hit = (single >= 0) & exposed_rows[np.maximum(single, 0)]
        for s in sensitive:
            if s in row_hists:
                continue  # bucketized: no row-level value to obtain by subtraction
            correct = None
            if s in truth:
                _, rel_txt = factorize_text(release[s])
                codes, _ = factorize_text(release[s])
                got = rel_txt[codes][np.maximum(single, 0)]
                want = np.array([value_text(v) for v in truth[s]], dtype=object)
                correct = int(np.sum(hit & (got == want)))
            results.append(
                AttackResult(
                    "differencing",
                    lk.n_people,
                    int(hit.sum()),
                    f"two answerable aggregate queries (sets >= {min_query_size} rows) differ by the person: "
                    f"'{s}' obtained by subtraction",
                    correct,
                    {"sensitive": s, "min_query_size": min_query_size},
                    hit,
                )
            )
    return results
