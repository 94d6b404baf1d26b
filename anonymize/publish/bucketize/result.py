"""What a bucketization publishes and how it is measured.

Bucketization (Xiao & Tao, "Anatomy: simple and effective privacy preservation", VLDB 2006) does not
generalize the quasi-identifiers: it partitions the rows into groups and publishes

* a **QI table** — ``group_id`` and every non-sensitive column, values exactly as in the input
  (rows sorted by group, so the input order is not published);
* one **sensitive table** per sensitive attribute — ``group_id``, the value, ``count``: how many
  rows of the group carry it.

An adversary who knows a person's QI values (and that the person is in the table) finds the
person's group and learns only the group's distribution of each sensitive value: the posterior
probability of value ``v`` is ``count(v)/|group|`` (Xiao & Tao, §3, Lemma 1). With groups where no
value occurs more than ``|group|/l`` times (their l-diversity) that posterior is at most ``1/l``.
What is *not* protected: the QI values themselves are published, so presence and identity are
as visible as in the input (``qi_unique_rows`` counts the rows whose QI combination is unique).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..classes import class_stats
from ..metrics import class_boxes, il_total, summarize_classes
from ..table import EncodedTable

__all__ = ["BucketizationResult", "bucket_tables", "bucket_metrics", "GROUP_ID"]

GROUP_ID = "group_id"


@dataclass
class BucketizationResult:
    """A bucketization: ``group_id`` per input row (``0..n_groups-1``; -1 = not published),
    the published ``qi_table`` and ``tables`` (name → sensitive table), the sensitive attribute
    indices protected, the required ``l`` and work counters ``stats``."""

    group_id: np.ndarray
    n_groups: int
    qi_table: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    sensitive: list[int]
    l: int
    stats: dict = field(default_factory=dict)


def bucket_tables(
    table: EncodedTable, group_id: np.ndarray, sensitive: list[int], names: list[str]
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The QI table and one sensitive table per attribute in ``sensitive`` (published as ``names``)
    for a grouping (module docstring). Group ids are published 1-based, as in Xiao & Tao's tables."""
    gid = np.asarray(group_id, dtype=np.int64)
    keep = np.flatnonzero(gid >= 0)
    keep = keep[np.argsort(gid[keep], kind="stable")]
    sens_cols = list(table.schema.sensitive)
    qi = table.df.drop(columns=sens_cols).iloc[keep].reset_index(drop=True)
    qi.insert(0, GROUP_ID, gid[keep] + 1)
    out = {}
    for j, name in zip(sensitive, names):
        col = sens_cols[j]
        V = len(table.sens_values[j])
        g = gid[keep]
        key = g * V + table.sens_codes[keep, j].astype(np.int64)
        uk, counts = np.unique(key, return_counts=True)
        out[name] = pd.DataFrame(
            {GROUP_ID: uk // V + 1, col: np.asarray(table.sens_values[j], dtype=object)[uk % V], "count": counts}
        )
    return qi, out


def bucket_metrics(table: EncodedTable, res: BucketizationResult) -> dict:
    """Report of a bucketization: rows published and suppressed, group sizes, and per sensitive
    attribute the achieved distinct l (fewest distinct values in a group), the frequency l of Xiao &
    Tao (``min |G| / max count``), the largest posterior an adversary gets (``max count / |G|``)
    against the bound ``1/l``; the QI rows that are unique in the published QI table; and the
    total information loss IL of the groups (Definition 1.1 of the thesis on l-diverse
    publishing, :func:`..metrics.il_total`: the loss if each group's QIs were generalized)."""
    gid = np.asarray(res.group_id, dtype=np.int64)
    pub = gid >= 0
    n_pub = int(pub.sum())
    G = res.n_groups
    stats = class_stats(table, np.where(pub, gid, 0), G, rows=pub)
    sizes = stats.sizes
    sens = {}
    for j in res.sensitive:
        hist = stats.sens_hist[j][sizes > 0]
        sz = sizes[sizes > 0]
        mx = hist.max(axis=1)
        sens[table.schema.sensitive[j]] = {
            "l_distinct": int((hist > 0).sum(axis=1).min()),
            "l_frequency": float((sz / mx).min()),
            "max_posterior": float((mx / sz).max()),
            "posterior_bound": 1.0 / res.l,
        }
    qi_pub = table.qi_codes[pub]
    if n_pub:
        _, inv, cnt = np.unique(qi_pub, axis=0, return_inverse=True, return_counts=True)
        unique_rows = int((cnt[np.ravel(inv)] == 1).sum())
    else:
        unique_rows = 0
    out: dict = {
        "rows": int(table.n),
        "published_rows": n_pub,
        "suppressed_rows": int(table.n - n_pub),
        "suppressed_fraction": (table.n - n_pub) / table.n if table.n else 0.0,
        "classes": summarize_classes(sizes[sizes > 0]),
        "achieved": {
            "groups": int((sizes > 0).sum()),
            "l_required": res.l,
            "sensitive_attributes": sens,
        },
        "qi_published_exactly": True,
        "qi_unique_rows": unique_rows,
    }
    if n_pub:  # rows not published form their own class, left out of the loss as suppressed rows
        cid = np.where(pub, gid, G)
        lo, hi = class_boxes(table, cid, G + 1)
        # what the groups would lose if their QIs were generalized: a bucketization publishes the QIs
        # exactly, so this is not its loss (its utility is the query error, Xiao & Tao)
        out["il_total_if_generalized"] = il_total(table, cid, G + 1, lo, hi, suppressed=~pub)
    return out
