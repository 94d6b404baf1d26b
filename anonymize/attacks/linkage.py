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
cover matrix. The join is sparse: candidate (person, class) pairs come from the most selective
column (value → covering cells → classes with that cell, expanded with ``np.repeat``), then are
filtered by gathering the other columns' cover entries; counts are ``np.bincount`` over the
surviving pairs. Work and memory grow with the number of candidate pairs, in blocks of people,
not with classes × people. ``mask`` (person × column) lets an attacker use only some columns
per person (known-attribute attacks); people are grouped by the columns they use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from ..publish.hierarchy import Hierarchy
from .cells import cover_matrix, value_text

__all__ = ["Linkage", "link", "factorize_text", "unique_rows"]

_BLOCK_CELLS = 1 << 22  # (person, class) candidate pairs per block


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


def unique_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(codes, axis=0, return_inverse=True, return_counts=True)`` for non-negative integer
    codes, via one mixed-radix int64 key per row when it fits (much faster than sorting rows)."""
    codes = np.asarray(codes, dtype=np.int64)
    if codes.ndim != 2 or codes.shape[1] == 0 or len(codes) == 0:
        u, inv, cnt = np.unique(codes.reshape(len(codes), -1), axis=0, return_inverse=True, return_counts=True)
        return u, inv.ravel(), cnt
    radix = codes.max(axis=0) + 1
    if float(np.prod(radix.astype(np.float64))) >= 2**62:
        u, inv, cnt = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        return u, inv.ravel(), cnt
    key = np.zeros(len(codes), dtype=np.int64)
    for j in range(codes.shape[1]):
        key = key * int(radix[j]) + codes[:, j]
    _, first, inv, cnt = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    return codes[first], inv.ravel(), cnt


def _ragged(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For items with ``counts[i]`` children each: (item index, offset within the item) of every child."""
    counts = np.asarray(counts, dtype=np.int64)
    item = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return item, np.arange(len(item)) - starts[item]


def _chunks(group: np.ndarray, fan: np.ndarray, limit: int):
    """Split ``group`` (people) into runs whose candidate counts ``fan`` add up to about ``limit``."""
    cum = np.cumsum(fan)
    cuts = np.searchsorted(cum, np.arange(limit, int(cum[-1]) if len(cum) else 0, limit), side="right")
    for part in np.split(group, np.unique(cuts)):
        if len(part):
            yield part


class _ColumnIndex:
    """Sparse view of one column's cover matrix: for a raw value, the classes whose cell covers it."""

    def __init__(self, cover: np.ndarray, class_cells: np.ndarray):
        n_cells = cover.shape[0]
        self.order = np.argsort(class_cells, kind="stable")  # classes grouped by their cell
        self.cell_n = np.bincount(class_cells, minlength=n_cells)
        self.cell_start = np.cumsum(self.cell_n) - self.cell_n
        val, cell = np.nonzero(cover.T)  # (value, covering cell) pairs, grouped by value
        self.val_cells = cell
        self.val_deg = np.bincount(val, minlength=cover.shape[1])
        self.val_start = np.cumsum(self.val_deg) - self.val_deg
        self.fan = cover.T.astype(np.int64) @ self.cell_n  # classes covering each value

    def candidates(self, people: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(person, class) for every class whose cell in this column covers the person's value."""
        pi, off = _ragged(self.val_deg[values])
        cell = self.val_cells[self.val_start[values][pi] + off]
        ci, off2 = _ragged(self.cell_n[cell])
        cls = self.order[self.cell_start[cell][ci] + off2]
        return people[pi[ci]], cls


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
    row_hists: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> Linkage:
    """Match every external person to the release records whose QI cells cover their values.

    ``mask`` — optional (len(external) × len(qis)) bool: column j is used for person i only where
    ``mask[i, j]`` (an unused column matches everything). ``row_hists`` — for a sensitive attribute
    the release does not hold row by row (a bucketized release, :mod:`.bucketized`): its values and a
    (rows × values) count matrix that each matching row contributes instead of one value.
    """
    qis, sensitive = list(qis), list(sensitive)
    row_hists = dict(row_hists or {})
    if not qis:
        raise AnonymizeError("at least one quasi-identifier is needed to link")
    _check_columns(release, qis + [s for s in sensitive if s not in row_hists], "the release")
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
    cls_rows, rel_class, sizes = unique_rows(rel_codes)
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
    people, person_of, _ = unique_rows(key)
    person_of = person_of.ravel()
    pv = people[:, :q]
    pm = people[:, q:].astype(bool) if mask is not None else None

    # sensitive histograms per class
    sens_vals, sens_hist = {}, {}
    for s in sensitive:
        if s in row_hists:
            u, rows_h = row_hists[s]
            h = np.stack([np.bincount(rel_class, weights=rows_h[:, v], minlength=n_cls) for v in range(len(u))], axis=1)
            sens_vals[s], sens_hist[s] = np.asarray(u, dtype=object), h.reshape(n_cls, len(u)).astype(np.float64)
            continue
        codes, u = factorize_text(release[s])
        h = np.bincount(rel_class * len(u) + codes, minlength=n_cls * len(u)).reshape(n_cls, len(u))
        sens_vals[s], sens_hist[s] = u, h.astype(np.float64)

    # a representative release row per class (for people matched to a single record)
    first_row = np.full(n_cls, -1, dtype=np.int64)
    first_row[rel_class[::-1]] = np.arange(len(release))[::-1]

    n_p = len(people)
    n_classes = np.zeros(n_p, dtype=np.int64)
    n_records = np.zeros(n_p, dtype=np.int64)
    counts = {s: np.zeros((n_p, sens_hist[s].shape[1]), dtype=np.int64) for s in sensitive}
    last_row = np.full(n_p, -1, dtype=np.int64)

    patterns = [(np.arange(n_p), np.arange(q))]
    if pm is not None:
        pats, which, _ = unique_rows(pm)
        which = which.ravel()
        patterns = [(np.flatnonzero(which == g), np.flatnonzero(pats[g])) for g in range(len(pats))]
    for group, used in patterns:
        # classes as seen through the columns this group of people uses (all of them without a mask)
        if len(used) == q:
            g_rows, g_sizes, g_hist, g_first = cls_rows, sizes, sens_hist, first_row
        else:
            g_rows, inv, _ = unique_rows(cls_rows[:, used])
            inv = inv.ravel()
            g_sizes = np.bincount(inv, weights=sizes, minlength=len(g_rows)).astype(np.int64)
            g_hist = {
                s: np.stack(
                    [np.bincount(inv, weights=h[:, v], minlength=len(g_rows)) for v in range(h.shape[1])], axis=1
                )
                for s, h in sens_hist.items()
            }
            g_first = np.full(len(g_rows), -1, dtype=np.int64)
            g_first[inv[::-1]] = first_row[::-1]
        if not len(used):  # nothing known about these people: the whole release matches
            g_sizes = np.array([sizes.sum()])
            g_hist = {s: h.sum(axis=0, keepdims=True) for s, h in sens_hist.items()}
            g_first = first_row[:1]
            pairs = [(np.repeat(group, 1), np.zeros(len(group), dtype=np.int64))]
        else:
            index = [_ColumnIndex(covers[j], g_rows[:, k]) for k, j in enumerate(used)]
            # start from the column that yields the fewest (person, class) candidates
            fans = [index[k].fan[pv[group, j]] for k, j in enumerate(used)]
            k0 = int(np.argmin([f.sum() for f in fans]))
            pairs = []
            for chunk in _chunks(group, fans[k0], _BLOCK_CELLS):
                person, cls = index[k0].candidates(chunk, pv[chunk, used[k0]])
                for k, j in enumerate(used.tolist()):
                    if k != k0:
                        keep = covers[j][g_rows[cls, k], pv[person, j]]
                        person, cls = person[keep], cls[keep]
                pairs.append((person, cls))
        for person, cls in pairs:
            n_classes[:] += np.bincount(person, minlength=n_p)
            n_records[:] += np.bincount(person, weights=g_sizes[cls], minlength=n_p).astype(np.int64)
            for s in sensitive:
                g_h = g_hist[s]
                for v in range(g_h.shape[1]):
                    counts[s][:, v] += np.rint(np.bincount(person, weights=g_h[cls, v], minlength=n_p)).astype(np.int64)
            last_row[person] = g_first[cls]
    single = np.where(n_records == 1, last_row, -1)
    return Linkage(
        n_classes=n_classes[person_of],
        n_records=n_records[person_of],
        sensitive_values=sens_vals,
        sensitive_counts={s: counts[s][person_of] for s in sensitive},
        single_record=single[person_of],
    )
