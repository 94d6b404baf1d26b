"""Value generalization hierarchies (one per quasi-identifier), ARX CSV format.

Model (Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.3.1, Fig. 20.1):
a hierarchy is a tree whose leaves are the attribute's original values and
whose level ``h`` nodes are the generalized values of full-domain level
``A_h``; the root (``*``) is column suppression. ARX stores it as a CSV
(``;``-separated, no header, one row per leaf, column ``h`` = the leaf's
ancestor at level ``h``, last column ``*``) — :meth:`Hierarchy.read_arx` /
:meth:`Hierarchy.write_arx` read and write exactly that.

Encoding. Leaves get integer codes ``0..n_leaves-1`` and every level's nodes
get codes ``0..n_nodes(h)-1``; ``maps[h, leaf] = node code at level h``, so a
full-domain generalization is one fancy-indexing ``maps[h][codes]``.
Invariants (relied on by metrics and Mondrian):

* Numeric hierarchies keep their leaves sorted ascending.
* Leaves are ordered so that **every node covers a contiguous run of leaf
  codes**, and node codes increase with that run (``maps[h]`` is
  non-decreasing). A node is therefore the leaf-code interval
  ``node_span(h)``; any generalized cell (a hierarchy node or a Mondrian
  range) is a ``[lo, hi]`` interval of leaf codes.
* A label at level ``h`` has exactly one parent at level ``h+1`` (it is a
  tree); violations are reported as errors.

ARX's Adult age file labels its bands off by one (ages 16–20 are labelled
``15-19``); the grouping is right, only the text is shifted. Nothing here
parses labels: numeric ranges come from the leaf values
(:meth:`Hierarchy.node_range`), so ranges computed by ppdm are correct.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from .atomic import atomic_write_text

__all__ = ["Hierarchy", "SUPPRESSED", "canonical_strings", "value_str", "number_label", "number_labels", "nice_step"]

SUPPRESSED = "*"


def _parse_numbers(labels: Sequence[str]) -> np.ndarray | None:
    """Labels as numbers (int64 if all integral, else float64), or None."""
    try:
        vals = np.array([float(s) for s in labels], dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if len(vals) == 0 or not np.all(np.isfinite(vals)):
        return None
    if np.all(vals == np.round(vals)) and np.all(np.abs(vals) < 2**53):
        return vals.astype(np.int64)
    return vals


def number_label(v) -> str:
    """Shortest text of a number as hierarchy labels write it (39.0 → '39', 2.5 → '2.5')."""
    if isinstance(v, (np.integer, int)):
        return str(int(v))
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)


def number_labels(values: np.ndarray) -> list:
    """``[number_label(v) for v in values]``, vectorized for integer arrays."""
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        return values.astype(str).tolist()
    return [number_label(v) for v in values.tolist()]


def nice_step(x: float) -> float:
    """Smallest of {1, 2, 5}·10^k that is >= x."""
    if x <= 0:
        return 1.0
    e = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        s = m * 10.0**e
        if s >= x * (1 - 1e-12):
            return s
    return 10.0 ** (e + 1)


class Hierarchy:
    """Generalization hierarchy of one attribute.

    Attributes
    ----------
    name : str
        Attribute (column) name.
    leaves : np.ndarray
        Leaf values as in the data (``str`` objects for categorical, int64 /
        float64 for numeric); leaf code = index.
    maps : np.ndarray
        ``(height+1, n_leaves)`` int32; ``maps[h, leaf]`` = node code at level
        ``h``; ``maps[0] = arange(n_leaves)``.
    labels : list[np.ndarray]
        ``labels[h][node]`` = text label of the node at level ``h``.
    numeric : bool
        Leaves are numbers (ranges and means make sense).
    height : int
        Number of levels minus one.
    """

    __slots__ = ("name", "leaves", "maps", "labels", "numeric", "height", "_span", "_lookup", "_arrow_leaves")

    def __init__(self, name: str, leaves, maps, labels, numeric: bool):
        self.name = str(name)
        self.leaves = np.asarray(leaves)
        self.maps = np.ascontiguousarray(maps, dtype=np.int32)
        self.labels = [np.asarray(lab, dtype=object) for lab in labels]
        self.numeric = bool(numeric)
        self.height = self.maps.shape[0] - 1
        self._span: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._lookup = None
        self._arrow_leaves: object = None  # pyarrow array of the leaf labels, or False (see _encode_arrow)

    # ------------------------------------------------------------------ build
    @classmethod
    def from_rows(
        cls, name: str, rows: Sequence[Sequence[str]], numeric: bool | None = None, source: str | None = None
    ) -> Hierarchy:
        """Build from ARX-style rows ``[leaf, level1, ..., top]`` (all strings).

        Validates: at least one row, all rows the same length, unique leaves,
        tree shape (each label at level h has one parent at level h+1).
        ``numeric=None`` detects numbers from the leaf labels.
        """
        where = source or f"hierarchy '{name}'"
        if len(rows) == 0:
            raise AnonymizeError(f"{where}: no rows (empty hierarchy)")
        width = len(rows[0])
        for i, r in enumerate(rows):
            if len(r) != width:
                raise AnonymizeError(
                    f"{where}: row {i + 1} has {len(r)} columns, expected {width} like row 1 "
                    "(ARX hierarchies need one column per level on every row)"
                )
        if width < 1:
            raise AnonymizeError(f"{where}: rows have no columns")
        grid = np.array([[str(c).strip() for c in r] for r in rows], dtype=object)
        return cls._from_grid(name, grid, numeric, where)

    @classmethod
    def _from_grid(cls, name: str, grid: np.ndarray, numeric: bool | None, where: str) -> Hierarchy:
        """:meth:`from_rows` after the row checks: ``grid`` is the ``(n_rows, levels)`` object array
        of stripped label strings."""
        leaf_lab = grid[:, 0]
        dup = pd.Index(leaf_lab).duplicated()
        if dup.any():
            raise AnonymizeError(f"{where}: leaf value {leaf_lab[np.argmax(dup)]!r} appears on more than one row")
        nums = _parse_numbers(list(leaf_lab)) if numeric is not False else None
        if numeric is True and nums is None:
            raise AnonymizeError(f"{where}: numeric hierarchy but some leaves are not numbers")
        is_num = nums is not None
        # node codes per level by first appearance in file order
        n_lev = grid.shape[1]
        codes = np.empty((n_lev, len(grid)), dtype=np.int64)
        for h in range(n_lev):
            codes[h], _ = pd.factorize(grid[:, h])
        # tree check: label at h -> single parent at h+1
        for h in range(n_lev - 1):
            pairs = pd.DataFrame({"c": codes[h], "p": codes[h + 1]}).drop_duplicates()
            bad = pairs["c"].duplicated()
            if bad.any():
                c = pairs["c"][bad].iloc[0]
                lab = grid[codes[h] == c, h][0]
                parents = sorted(set(grid[codes[h] == c, h + 1]))
                raise AnonymizeError(
                    f"{where}: '{lab}' at level {h} has several parents at level {h + 1} "
                    f"({', '.join(map(repr, parents[:3]))}); a hierarchy must be a tree"
                )
        order = np.argsort(nums, kind="stable") if nums is not None and is_num else None
        if is_num and not cls._contiguous(codes[:, order]):
            is_num = False  # numeric leaves whose groups are not value intervals: treat as categorical
        if not is_num:
            # group leaves of each node together: sort by ancestor codes, top level first
            order = np.lexsort(tuple(codes[h] for h in range(n_lev)))  # last key = top level
        grid = grid[order]
        leaves = nums[order] if nums is not None and is_num else grid[:, 0].copy()
        maps = np.empty((n_lev, len(grid)), dtype=np.int32)
        labels = []
        for h in range(n_lev):
            c, uniq = pd.factorize(grid[:, h])
            maps[h] = c
            labels.append(np.asarray(uniq, dtype=object))
        return cls(name, leaves, maps, labels, is_num)

    @staticmethod
    def _contiguous(codes: np.ndarray) -> bool:
        """Every node's leaves form one run in the given leaf order (``codes``: per level, dense
        ``0..k-1`` node codes as ``pd.factorize`` gives, so a level has ``max + 1`` nodes)."""
        for row in codes:
            if len(row) == 0:
                continue
            starts = np.r_[True, row[1:] != row[:-1]]
            if int(row.max()) + 1 != int(starts.sum()):
                return False
        return True

    @classmethod
    def read_arx(cls, path, name: str | None = None, numeric: bool | None = None) -> Hierarchy:
        """Read an ARX CSV hierarchy (``;``, no header, one row per leaf, ``*`` last).

        ARX: ``Hierarchy.create(file, charset, ';')``. CRLF/LF and a missing
        final newline are accepted; blank lines are skipped. ``name`` defaults
        to the file stem without an ``..._hierarchy_`` prefix
        (``adult_hierarchy_age.csv`` → ``age``).
        """
        p = Path(path)
        if name is None:
            stem = p.stem
            name = stem.split("hierarchy_", 1)[1] if "hierarchy_" in stem else stem
        try:
            raw = p.read_bytes()
        except FileNotFoundError:
            raise AnonymizeError(f"hierarchy file not found: {p}") from None
        except OSError as e:
            raise AnonymizeError(f"cannot read hierarchy {p}: {e.strerror or e}") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            try:
                text = raw.decode("cp1252")
            except UnicodeDecodeError:
                raise AnonymizeError(f"cannot read hierarchy {p}: not UTF-8 text") from None
        if "\x00" in text:
            raise AnonymizeError(f"cannot read hierarchy {p}: binary file, expected ARX CSV text")
        rows = [line.split(";") for line in text.splitlines() if line.strip() != ""]
        if not rows:
            raise AnonymizeError(f"hierarchy {p} is empty")
        return cls.from_rows(name, rows, numeric=numeric, source=f"hierarchy {p}")

    def to_rows(self) -> list[list[str]]:
        """ARX rows ``[leaf, level1, ..., top]`` in leaf-code order."""
        cols = [self.labels[h][self.maps[h]] for h in range(self.height + 1)]
        return [[str(c[i]) for c in cols] for i in range(self.n_leaves)]

    def write_arx(self, path) -> None:
        """Write the ARX CSV form (``;``, LF, no header), atomically."""
        rows = self.to_rows()
        for r in rows:
            for c in r:
                if ";" in c or "\n" in c or "\r" in c:
                    raise AnonymizeError(
                        f"hierarchy '{self.name}': label {c!r} contains ';' or a newline; ARX CSV cannot store it"
                    )
        atomic_write_text(path, "".join(";".join(r) + "\n" for r in rows))

    @classmethod
    def intervals(cls, name: str, values, widths: Sequence[float] | None = (5, 10, 20)) -> Hierarchy:
        """Automatic numeric hierarchy: value → width-w bands for each w → ``*``.

        Leaves are the distinct values. Each width must be a multiple of the
        previous one so the bands nest; all bands start at a common base
        (a multiple of the largest width), so e.g. ages fall into
        ``20-24`` ⊂ ``20-29`` ⊂ ``20-39`` (ARX's interval builder does the
        same). ``widths=None`` picks ``w, 2w, 4w`` with ``w`` the smallest
        1/2/5·10^k giving at most ~20 bands. Integer data gets inclusive labels
        ``lo-hi``; real data gets half-open ``[lo, hi)``.
        """
        vals = pd.to_numeric(pd.Series(np.asarray(values).ravel()), errors="coerce")
        if vals.isna().any():
            raise AnonymizeError(f"column '{name}': interval hierarchies need numbers without missing values")
        leaves = np.unique(vals.to_numpy())
        if len(leaves) == 0:
            raise AnonymizeError(f"column '{name}': no values to build a hierarchy from")
        integral = bool(np.all(leaves == np.round(leaves)))
        if integral:
            leaves = leaves.astype(np.int64)
        lo_v, hi_v = float(leaves.min()), float(leaves.max())
        if widths is None:
            w0 = nice_step((hi_v - lo_v) / 20.0)
            if integral:
                w0 = max(1.0, w0)
            widths = (w0, 2 * w0, 4 * w0)
        widths = [float(w) for w in widths]
        for a, b in zip(widths, widths[1:]):
            if a <= 0 or b / a != round(b / a):
                raise AnonymizeError(
                    f"hierarchy '{name}': widths {widths} must be positive and each a multiple "
                    "of the previous one so the bands nest"
                )
        base = math.floor(lo_v / widths[-1]) * widths[-1]
        lv = leaves.astype(np.float64)
        grid = np.empty((len(leaves), len(widths) + 2), dtype=object)
        grid[:, 0] = number_labels(leaves)
        for b, w in enumerate(widths):
            start = base + np.floor((lv - base) / w) * w
            # one label per band, not per leaf: leaves are sorted, so each band is one run of them
            first = np.flatnonzero(np.r_[True, start[1:] != start[:-1]])
            band = np.cumsum(np.r_[False, start[1:] != start[:-1]])
            if integral:
                lab = [f"{number_label(s)}-{number_label(s + w - 1)}" for s in start[first]]
            else:
                lab = [f"[{s:g}, {s + w:g})" for s in start[first]]
            grid[:, b + 1] = np.asarray(lab, dtype=object)[band]
        grid[:, -1] = SUPPRESSED
        h = cls._from_grid(name, grid, True, f"hierarchy '{name}'")
        h.leaves = leaves
        return h

    @classmethod
    def masking(cls, name: str, values) -> Hierarchy:
        """Masking hierarchy for code-like strings (ZIP): mask one more trailing character per level.

        ``47677 → 4767* → 476** → 47*** → 4**** → *`` (one common ZIP hierarchy; leaves in sorted order;
        Aggarwal 2015, §20.3.1 and Figs. 20.1–20.2, discusses value and domain hierarchies
        for ZIP codes in general). Values of different lengths are masked from the right
        as well; the top level is ``*``.
        """
        vals = pd.Series(np.asarray(values).ravel())
        if vals.isna().any():
            raise AnonymizeError(f"column '{name}': masking hierarchies need values without missing entries")
        # sorted, not in order of appearance: the hierarchy (and every result that depends on its leaf
        # order, such as Mondrian's ties) must not depend on the row order — an engine's GROUP BY
        # returns the distinct values in any order
        strs = sorted({value_str(v) for v in pd.unique(vals)})
        if len(strs) == 0:
            raise AnonymizeError(f"column '{name}': no values to build a hierarchy from")
        L = max(len(s) for s in strs)
        rows = []
        for s in strs:
            r = [s]
            for h in range(1, L):
                keep = max(len(s) - h, 0)
                r.append(s[:keep] + "*" * (len(s) - keep))
            r.append(SUPPRESSED)
            rows.append(r)
        return cls.from_rows(name, rows, numeric=False)

    @classmethod
    def flat(cls, name: str, values) -> Hierarchy:
        """Two-level hierarchy: every value → ``*`` (numeric values stay numeric)."""
        vals = pd.Series(np.asarray(values).ravel())
        if vals.isna().any():
            raise AnonymizeError(f"column '{name}' has missing values; fill or drop them first")
        if len(vals) == 0:
            raise AnonymizeError(f"column '{name}': no values to build a hierarchy from")
        if pd.api.types.is_numeric_dtype(vals) and not pd.api.types.is_bool_dtype(vals):
            leaves = np.unique(vals.to_numpy())
            if np.all(leaves == np.round(leaves)):
                leaves = leaves.astype(np.int64)
            rows = [[number_label(v), SUPPRESSED] for v in leaves]
            h = cls.from_rows(name, rows, numeric=True)
            h.leaves = leaves
            return h
        strs = sorted({value_str(v) for v in pd.unique(vals)})
        return cls.from_rows(name, [[s, SUPPRESSED] for s in strs], numeric=False)

    # --------------------------------------------------------------- queries
    @property
    def n_leaves(self) -> int:
        return self.maps.shape[1]

    def n_nodes(self, h: int) -> int:
        """Number of nodes at level ``h``."""
        return len(self.labels[h])

    def node_span(self, h: int) -> tuple[np.ndarray, np.ndarray]:
        """``(first, last)`` leaf code of every node at level ``h`` (contiguous runs)."""
        if h not in self._span:
            m = self.maps[h]
            idx = np.arange(self.n_nodes(h))
            first = np.searchsorted(m, idx, side="left").astype(np.int64)
            last = np.searchsorted(m, idx, side="right").astype(np.int64) - 1
            self._span[h] = (first, last)
        return self._span[h]

    def leaves_under(self, h: int) -> np.ndarray:
        """Number of leaves under each node at level ``h``."""
        first, last = self.node_span(h)
        return last - first + 1

    def node_range(self, h: int) -> tuple[np.ndarray, np.ndarray]:
        """Per node at level ``h``: numeric → (min, max) leaf value under it;
        categorical → (first, last) leaf code, so ``hi - lo + 1`` = leaves under it.
        Used by NCP (Jiang, Zeng, Ma, "Greedy clustering-anonymity method for privacy
        preservation of table data-publishing", Journal of Software 28(2), 2017, §2.2.1;
        Xu et al., "Utility-based anonymization using local recoding", KDD 2006)."""
        first, last = self.node_span(h)
        if self.numeric:
            return self.leaves[first], self.leaves[last]
        return first, last

    def parents(self, h: int) -> np.ndarray:
        """Parent code at level ``h+1`` of every node at level ``h``."""
        first, _ = self.node_span(h)
        return self.maps[h + 1][first]

    def level_of_span(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Lowest level whose node contains leaf codes ``lo..hi`` (their lowest common ancestor)."""
        lo = np.asarray(lo)
        hi = np.asarray(hi)
        out = np.full(lo.shape, self.height, dtype=np.int64)
        for h in range(self.height - 1, -1, -1):
            same = self.maps[h][lo] == self.maps[h][hi]
            out[same] = h
        return out

    def encode(self, values, column: str | None = None) -> np.ndarray:
        """Leaf codes of ``values``; a value missing from the hierarchy is an :class:`AnonymizeError`
        naming the column and the value."""
        col = column or self.name
        s = pd.Series(np.asarray(values, dtype=object) if not isinstance(values, pd.Series) else values)
        if not has_plain_index(s):
            s = s.reset_index(drop=True)
        if has_missing(s):
            i = int(np.argmax(s.isna().to_numpy()))
            raise AnonymizeError(
                f"column '{col}' has {int(s.isna().sum())} missing value(s) (first at row {i + 1}); "
                "quasi-identifiers must be complete"
            )
        fast = self._encode_integers(s) if self.numeric else self._encode_arrow(s)
        if fast is not None:
            return fast
        if self.numeric:
            num = pd.to_numeric(s, errors="coerce")
            bad = num.isna().to_numpy()
            if bad.any():
                v = s[bad].iloc[0]
                raise AnonymizeError(
                    f"column '{col}': value {v!r} is not a number but hierarchy '{self.name}' is numeric"
                )
            x = num.to_numpy(dtype=np.float64)
            lv = self.leaves.astype(np.float64)
            pos = np.searchsorted(lv, x)
            pos_c = np.minimum(pos, len(lv) - 1)
            ok = lv[pos_c] == x
            codes = pos_c
        else:
            if self._lookup is None:
                self._lookup = pd.Index(self.leaves.astype(str))
            lookup: pd.Index = self._lookup
            fcodes, uniq = pd.factorize(s)
            ucodes = lookup.get_indexer(np.array([value_str(v) for v in uniq], dtype=object))
            codes = ucodes[fcodes]
            ok = codes >= 0
        if not np.all(ok):
            missing = pd.unique(np.asarray(s.to_numpy(), dtype=object)[~ok])
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            shown = ", ".join(repr(value_str(v)) for v in missing[:3])
            raise AnonymizeError(
                f"column '{col}': value {shown}{more} not in hierarchy '{self.name}' "
                f"({int((~ok).sum())} row(s)); add it to the hierarchy file"
            )
        return codes.astype(np.int32)

    def _encode_integers(self, s: pd.Series) -> np.ndarray | None:
        """Leaf codes of an integer column over a small range by one table lookup (what the
        ``searchsorted`` of :meth:`encode` finds, at a twentieth of its cost on Adult's ages), or
        None when the column is not integer, its range is large, or a value is not a leaf (then
        :meth:`encode` takes its general path and names the value)."""
        if s.dtype.kind not in "iu" or len(s) == 0:
            return None
        x = s.to_numpy()
        lo, hi = int(x.min()), int(x.max())
        if hi - lo > 4 * len(x) + 4096 or max(abs(lo), abs(hi)) > 2**52:  # float leaves are exact below 2^53
            return None
        lv = self.leaves.astype(np.float64)
        at = np.flatnonzero((lv >= lo) & (lv <= hi) & (lv == np.floor(lv)))
        table = np.full(hi - lo + 1, -1, dtype=np.int64)
        table[lv[at].astype(np.int64) - lo] = at
        codes = table[x.astype(np.int64) - lo]
        if (codes < 0).any():
            return None
        return codes.astype(np.int32)

    def _encode_arrow(self, s: pd.Series) -> np.ndarray | None:
        """Leaf codes of a pyarrow-backed string column by one hash lookup in Arrow
        (``pyarrow.compute.index_in``: about half :meth:`encode`'s factorize-then-match), or None when
        the column is not such a column or some value is not found as it is (then :meth:`encode`'s
        general path strips the values, matches them and names what is missing). Used only when every
        leaf label is its own canonical text, so both paths match the same values."""
        lookup = self.arrow_lookup(s)
        return None if lookup is None else lookup()

    def arrow_lookup(self, s: pd.Series):
        """For a pyarrow-backed string column ``s`` (plain index, no missing value): a function of no
        argument that returns its leaf codes by Arrow's hash lookup, or None when a value is not
        found as it is (see :meth:`_encode_arrow`); None when that path does not apply. The function
        holds the GIL only briefly (:func:`.table._encode_qis` runs several on threads)."""
        dtype = s.dtype
        if not (isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"):
            return None
        import pyarrow as pa
        import pyarrow.compute as pc

        if self._arrow_leaves is None:
            labels = [str(v) for v in self.leaves]
            ok = all(value_str(v) == v for v in labels) and len(set(labels)) == len(labels)
            self._arrow_leaves = pa.array(labels, type=pa.string()) if ok else False
        if self._arrow_leaves is False:
            return None
        values, leaves = pa.array(s.array), self._arrow_leaves

        def lookup() -> np.ndarray | None:
            try:
                found = pc.index_in(values, value_set=leaves)
            except (pa.ArrowException, TypeError):  # a string layout index_in has no kernel for
                return None
            if found.null_count:
                return None
            return found.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)

        return lookup

    def __repr__(self) -> str:
        kind = "numeric" if self.numeric else "categorical"
        return f"Hierarchy({self.name!r}, {kind}, leaves={self.n_leaves}, height={self.height})"

    def __eq__(self, other) -> bool:
        """Same name, kind, levels and the same leaf → ancestor-label rows."""
        if not isinstance(other, Hierarchy):
            return NotImplemented
        return (
            self.name == other.name
            and self.numeric == other.numeric
            and self.height == other.height
            and sorted(map(tuple, self.to_rows())) == sorted(map(tuple, other.to_rows()))
        )

    __hash__ = None  # type: ignore[assignment]


def has_plain_index(obj: pd.Series | pd.DataFrame) -> bool:
    """Whether ``obj``'s index is ``0 … n − 1`` (what ``reset_index(drop=True)`` would give)."""
    return isinstance(obj.index, pd.RangeIndex) and obj.index.equals(pd.RangeIndex(len(obj)))


def has_missing(s: pd.Series) -> bool:
    """Whether ``s`` holds a missing value (what ``s.isna().any()`` says): read off the dtype for
    numpy integers and booleans (none), off Arrow's null count for pyarrow-backed strings (their only
    missing values are nulls), else by ``isna`` — a pass over the values."""
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iub":  # not pandas' nullable Int64 / boolean
        return False
    if isinstance(s.dtype, pd.StringDtype) and s.dtype.storage == "pyarrow":
        pa_array = getattr(s.array, "_pa_array", None)
        if pa_array is not None:
            return bool(pa_array.null_count)
    return bool(s.isna().any())


def canonical_strings(values) -> pd.Series:
    """``values`` as canonical text (see :func:`value_str`), converting each distinct value once
    (``pd.factorize`` first), so it stays vectorized on millions of rows."""
    s = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object))
    codes, uniq = pd.factorize(s, use_na_sentinel=True)
    conv = np.array([value_str(v) for v in uniq] + [None], dtype=object)
    return pd.Series(conv[codes], index=s.index)


def value_str(v) -> str:
    """Canonical text of a data value for matching against hierarchy labels (39.0 → '39')."""
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, (bool, np.bool_)):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return number_label(v)
    return str(v).strip()
