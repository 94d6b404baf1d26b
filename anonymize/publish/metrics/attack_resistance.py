"""The share of equivalence classes that cannot resist an attack (Xu & Guo 2021, §4.3 and Fig. 6).

Y. Xu, H. Guo, "Privacy protection model and parameter optimization method for data dissemination",
Computer Engineering 47(5), 2021, evaluate a release by "the share of equivalence classes that
cannot resist an attack among all equivalence classes", and show (Fig. 6) that it grows with the
number of quasi-identifiers — fastest for k-anonymity, slower for l-diversity and t-closeness. The
paper gives no formula; a class *cannot resist* here when one of the attacks ``ppdm attack`` runs
succeeds against everyone in it (:mod:`anonymize.attacks.disclosure`):

* **linkage** — the class has one row: a person linked to it is re-identified (L. Sweeney,
  "k-anonymity: a model for protecting privacy", IJUFKS 10(5), 2002);
* **homogeneity** — all its rows share one value of a sensitive attribute (A. Machanavajjhala,
  J. Gehrke, D. Kifer, M. Venkitasubramaniam, "ℓ-Diversity: privacy beyond k-anonymity", ICDE 2006, §3);
* **background knowledge** — at most ``rule_out + 1`` distinct values of a sensitive attribute, so an
  adversary who can rule out ``rule_out`` of them learns the value (same paper, §3; ``rule_out`` = 1
  by default, as ``ppdm attack``).

Without a sensitive attribute only linkage applies. The same measure feeds ``ppdm check``,
``ppdm attack`` (key ``attack_resistance``) and ``ppdm tune --sweep-qi`` (the curse of dimensionality,
C. C. Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.3.4).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..classes import equivalence_classes
from ..hierarchy import canonical_strings

__all__ = ["ATTACKS", "attack_resistance", "frame_attack_resistance"]

ATTACKS = ("linkage", "homogeneity", "background_knowledge")


def attack_resistance(sizes, distinct: Sequence = (), rule_out: int = 1) -> dict:
    """The attack-resistance ratio of a release from its classes (module docstring).

    ``sizes`` — (C,) class sizes (empty classes ignored); ``distinct`` — per sensitive attribute, (C,)
    distinct values per class. Returns ``{"classes", "vulnerable", "share_vulnerable", "share_resistant",
    "rule_out", "by_attack": {attack: {"classes", "share"}}}``; a class counts once in ``vulnerable``
    whatever attacks break it."""
    if rule_out < 0:
        raise ValueError("rule_out must be non-negative")
    sizes = np.asarray(sizes, dtype=np.int64)
    live = sizes > 0
    sizes = sizes[live]
    c = len(sizes)
    fails = {"linkage": sizes == 1}
    if len(distinct):
        d = np.min(np.vstack([np.asarray(x, dtype=np.int64)[live] for x in distinct]), axis=0)
        fails["homogeneity"] = d <= 1
        fails["background_knowledge"] = d <= rule_out + 1
    any_fail = np.zeros(c, dtype=bool)
    for f in fails.values():
        any_fail |= f
    n = int(any_fail.sum())
    return {
        "classes": c,
        "vulnerable": n,
        "share_vulnerable": n / c if c else 0.0,
        "share_resistant": 1.0 - n / c if c else 1.0,
        "rule_out": int(rule_out),
        "by_attack": {
            a: {"classes": int(f.sum()), "share": float(f.sum()) / c if c else 0.0} for a, f in fails.items()
        },
    }


def frame_attack_resistance(
    df: pd.DataFrame,
    qis: Sequence[str],
    sensitive: Sequence[str] = (),
    rule_out: int = 1,
    row_hists: dict | None = None,
    weights=None,
) -> dict:
    """:func:`attack_resistance` of a table *as released*: classes are the rows with identical written QI
    cells (``*`` included). ``row_hists`` — for a bucketized release, per sensitive attribute the
    (rows × values) counts each row carries (:func:`anonymize.attacks.bucketized.row_histograms`);
    ``weights`` — rows standing for that many identical rows (a table grouped by an engine)."""
    if len(df) == 0:
        return attack_resistance(np.zeros(0, dtype=np.int64), [], rule_out)
    codes = np.column_stack([pd.factorize(canonical_strings(df[c]))[0] for c in qis])
    cid, nc = equivalence_classes(codes)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    sizes = np.rint(np.bincount(cid, weights=w, minlength=nc)).astype(np.int64)
    distinct = []
    for s in sensitive:
        if row_hists and s in row_hists:
            h = row_hists[s][1]
            per = np.stack([np.bincount(cid, weights=h[:, v], minlength=nc) for v in range(h.shape[1])], axis=1)
            distinct.append((per > 0).sum(axis=1))
            continue
        sc, vals = pd.factorize(canonical_strings(df[s]))
        seen = np.zeros(nc * max(len(vals), 1), dtype=bool)
        present = slice(None) if w is None else w > 0
        seen[(cid * len(vals) + sc)[present]] = True
        distinct.append(seen.reshape(nc, -1).sum(axis=1))
    return attack_resistance(sizes, distinct, rule_out)
