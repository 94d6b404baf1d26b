"""Join a release to an external table on quasi-identifiers; what each external person's match reveals.

The adversary (L. Sweeney, "k-anonymity: a model for protecting privacy", IJUFKS 10(5), 2002;
C. C. Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.3, Tables 20.1–20.2) holds an
external table naming people with their raw quasi-identifier values (a voter list). For each
external person, the released records whose every QI cell covers the person's value
(:func:`.cells.cover_matrix`) are the candidates. Everything the attacks in :mod:`.attacks`
report is computed from the candidates:

* ``n_records`` — how many released records match (1 → the person is re-identified;
  1/n_records is the probability of guessing the right record);
* ``sensitive_counts`` — per sensitive value, how many candidates carry it (a single value →
  disclosed whatever the record; Machanavajjhala et al., "ℓ-Diversity: Privacy Beyond
  k-Anonymity", ICDE 2006, §3 homogeneity attack).

Vectorized: released records are grouped into distinct QI-cell tuples (equivalence classes)
and external people into distinct raw QI tuples; per column a (distinct cells × distinct values)
cover matrix; the class × person match is the AND of gathered cover rows, computed in blocks
of people so memory stays bounded; counts are matrix products. ``mask`` (person × column)
lets an attacker use only some columns per person (known-attribute attacks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from ..publish.hierarchy import Hierarchy
from .cells import cover_matrix, value_text

__all__ = ["Linkage", "link", "factorize_text"]

_BLOCK_CELLS = 1 << 23  # class × person booleans per block


@dataclass
class Linkage:
    """Per external person (row of the external table): the release records that match.

    ``n_classes`` / ``n_records`` — matching equivalence classes / records; ``sensitive_values``
    — the distinct sensitive values of the release (per sensitive column); ``sensitive_counts``
    — per sensitive column, a (persons × values) count matrix of matching records per value;
    ``single_record`` — index of the matching release row when ``n_records == 1`` (else −1).
    """

    n_classes: np.ndarray
    n_records: np.ndarray
    sensitive_values: dict[str, np.ndarray]
    sensitive_counts: dict[str, np.ndarray]
    single_record: np.ndarray

    @property
    def n_people(self) -> int:
        return len(self.n_records)


def factorize_text(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes and distinct canonical texts (:func:`.cells.value_text`; missing → ``""``) of a
    column, converting each distinct value once."""
    codes, u = pd.factorize(s, use_na_sentinel=False)
    txt = np.array([("" if pd.isna(v) else value_text(v)) for v in u], dtype=object)
    tcodes, tu = pd.factorize(txt, use_na_sentinel=False)
    return tcodes[codes].astype(np.int64), np.asarray(tu, dtype=object)


def _check_columns(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    for c in cols:
        if c not in df.columns:
            raise AnonymizeError(f"{what} has no column '{c}' (it has: {', '.join(map(str, df.columns))})")


def link(
    release: pd.DataFrame,
    external: pd.DataFrame,
    qis: Sequence[str],
    sensitive: Sequence[str] = (),
    hierarchies: Mapping[str, Hierarchy] | None = None,
    mask: np.ndarray | None = None,
) -> Linkage:
    """Match every external person to the release records whose QI cells cover their values.

    ``mask`` — optional (len(external) × len(qis)) bool: column j is used for person i only where
    ``mask[i, j]`` (an unused column matches everything).
    """
    qis, sensitive = list(qis), list(sensitive)
    if not qis:
        raise AnonymizeError("at least one quasi-identifier is needed to link")
    _check_columns(release, qis + sensitive, "the release")
    _check_columns(external, qis, "the external table")
    if len(release) == 0 or len(external) == 0:
        raise AnonymizeError("the release and the external table must both have rows")
    hierarchies = dict(hierarchies or {})
    q = len(qis)

    # released records → classes (distinct cell tuples), cells factorized per column
    rel_codes = np.empty((len(release), q), dtype=np.int64)
    cell_uniques = []
    for j, c in enumerate(qis):
        rel_codes[:, j], u = factorize_text(release[c])
        cell_uniques.append(u)
    cls_rows, rel_class, sizes = np.unique(rel_codes, axis=0, return_inverse=True, return_counts=True)
    rel_class = rel_class.ravel()
    n_cls = len(cls_rows)

    # external people → distinct raw tuples (plus the mask pattern, when given)
    ext_codes = np.empty((len(external), q), dtype=np.int64)
    covers = []
    for j, c in enumerate(qis):
        col = external[c]
        if col.isna().any():
            raise AnonymizeError(f"external column '{c}' has missing values")
        ext_codes[:, j], u = pd.factorize(col, use_na_sentinel=False)
        covers.append(cover_matrix(list(cell_uniques[j]), list(u), hierarchies.get(c)))
    key = ext_codes
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (len(external), q):
            raise AnonymizeError("mask must have one row per external person and one column per QI")
        key = np.hstack([ext_codes, mask.astype(np.int64)])
    people, person_of = np.unique(key, axis=0, return_inverse=True)
    person_of = person_of.ravel()
    pv = people[:, :q]
    pm = people[:, q:].astype(bool) if mask is not None else None

    # sensitive histograms per class
    sens_vals, sens_hist = {}, {}
    for s in sensitive:
        codes, u = factorize_text(release[s])
        h = np.bincount(rel_class * len(u) + codes, minlength=n_cls * len(u)).reshape(n_cls, len(u))
        sens_vals[s], sens_hist[s] = u, h.astype(np.float64)

    n_p = len(people)
    n_classes = np.zeros(n_p, dtype=np.int64)
    n_records = np.zeros(n_p, dtype=np.int64)
    counts = {s: np.zeros((n_p, sens_hist[s].shape[1]), dtype=np.int64) for s in sensitive}
    single_class = np.full(n_p, -1, dtype=np.int64)
    sizes_f = sizes.astype(np.float64)
    block = max(1, _BLOCK_CELLS // max(n_cls, 1))
    for b0 in range(0, n_p, block):
        sl = slice(b0, min(b0 + block, n_p))
        m = np.ones((n_cls, sl.stop - sl.start), dtype=bool)
        for j in range(q):
            g = covers[j][cls_rows[:, j]][:, pv[sl, j]]
            if pm is not None:
                g |= ~pm[sl, j][None, :]
            m &= g
        mf = m.astype(np.float64)
        n_classes[sl] = m.sum(axis=0)
        n_records[sl] = np.rint(sizes_f @ mf).astype(np.int64)
        for s in sensitive:
            counts[s][sl] = np.rint(mf.T @ sens_hist[s]).astype(np.int64)
        one = n_classes[sl] == 1
        if one.any():
            single_class[sl][one] = np.argmax(m[:, one], axis=0)
    # the release row of a person matched to one record (a class of size 1)
    first_row = np.full(n_cls, -1, dtype=np.int64)
    first_row[rel_class[::-1]] = np.arange(len(release))[::-1]
    single = np.where((n_records == 1) & (single_class >= 0), first_row[np.maximum(single_class, 0)], -1)
    return Linkage(
        n_classes=n_classes[person_of],
        n_records=n_records[person_of],
        sensitive_values=sens_vals,
        sensitive_counts={s: counts[s][person_of] for s in sensitive},
        single_record=single[person_of],
    )
