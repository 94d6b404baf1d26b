"""A mining result an analyst uses from Python: the JSON of ``ppdm mine --json``, plus DataFrames.

:class:`MiningResult` *is* that JSON object (a ``dict``: ``res["itemsets"]``, ``json.dumps(res)`` and
every existing caller work unchanged) with views on top::

    res = mine_local_sources([...], HorizontalMining(min_support="0.1", min_confidence="0.6"))
    res.itemsets      # DataFrame: items (tuple of names), length, support (count), support_fraction
    res.rules         # DataFrame: antecedent, consequent (tuples), support, support_fraction, confidence, lift
    res.raw           # the plain dict, exactly what --json prints
    res.party_seconds # each party's own job time, seconds (joint runs; not part of the JSON)

The same views of any result dict — e.g. one read back from ``ppdm mine -o res.json`` — are
:func:`itemsets_frame` and :func:`rules_frame`; :func:`result_table` puts both into one table (a
``kind`` column, ``itemset`` or ``rule``) and :func:`write_result` writes a result as CSV, Parquet or
JSON by the file's extension, atomically.

Items are the job's item names: the text names of keyed tables and catalogs, and for integer items
the integers of the input file. Counts are None (``<NA>`` in the frames) when the job revealed none
(``--private-counts``); with ε they are the noisy counts the job released, and support fractions,
confidences and lifts are computed from them (post-processing: no further privacy cost).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "OUTPUT_FORMATS",
    "MiningResult",
    "itemsets_frame",
    "output_format",
    "result_bytes",
    "result_table",
    "rules_frame",
    "write_result",
]

#: file extension → format of :func:`write_result`
OUTPUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".json": "json"}

TABLE_COLUMNS = [
    "kind",
    "items",
    "antecedent",
    "consequent",
    "length",
    "support",
    "support_fraction",
    "confidence",
    "lift",
]


class MiningResult(dict[str, Any]):
    """The JSON object of a mining job (a plain ``dict`` to every existing caller) with DataFrame views.

    ``party_seconds``: each party's own time for the job (from its reply), ``analyst``: who ran it
    (the certificate's name for joint jobs). Neither is part of the JSON.
    """

    def __init__(
        self,
        data: Mapping[str, Any] = (),  # type: ignore[assignment]
        *,
        party_seconds: Mapping[str, float] | None = None,
        analyst: str | None = None,
    ):
        super().__init__(data)
        self.party_seconds: dict[str, float] = dict(party_seconds or {})
        self.analyst = analyst

    @property
    def raw(self) -> dict[str, Any]:
        """The result as a plain dict: exactly what ``ppdm mine --json`` prints."""
        return dict(self)

    @property
    def itemsets(self) -> pd.DataFrame:
        """The frequent itemsets as a DataFrame (:func:`itemsets_frame`)."""
        return itemsets_frame(self)

    @property
    def rules(self) -> pd.DataFrame:
        """The association rules as a DataFrame (:func:`rules_frame`)."""
        return rules_frame(self)

    @property
    def table(self) -> pd.DataFrame:
        """Itemsets and rules in one table with a ``kind`` column (:func:`result_table`)."""
        return result_table(self)

    def noise_warning(self) -> str | None:
        """The ε-DP noise warning of this result, or None (:func:`parties.analyst.noise.noise_warning`)."""
        from parties.analyst.noise import noise_warning

        return noise_warning(self)


def _counts(result: Mapping[str, Any]) -> dict[frozenset, int | None]:
    return {frozenset(_hashable(x) for x in i["items"]): i["count"] for i in result.get("itemsets", [])}


def _hashable(x: Any) -> Any:
    return tuple(x) if isinstance(x, list) else x


def itemsets_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """``result``'s itemsets: ``items`` (tuple of item names, as the job named them), ``length``,
    ``support`` (the count, nullable ``Int64``) and ``support_fraction`` (count / transactions), in the
    result's order."""
    import pandas as pd

    n = result.get("transactions") or 0
    its = result.get("itemsets", [])
    counts = [i["count"] for i in its]
    return pd.DataFrame(
        {
            "items": pd.Series([tuple(i["items"]) for i in its], dtype=object),
            "length": pd.Series([len(i["items"]) for i in its], dtype="int64"),
            "support": pd.array(counts, dtype="Int64"),
            "support_fraction": pd.array([None if c is None or not n else c / n for c in counts], dtype="Float64"),
        }
    )


def rules_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """``result``'s rules: ``antecedent``, ``consequent`` (tuples of item names), ``support`` (the count of
    their union), ``support_fraction``, ``confidence`` and ``lift`` = confidence / (count(consequent) / N),
    the consequent's count taken from the result's itemsets (every subset of a frequent itemset is one);
    ``<NA>`` where the job revealed no counts."""
    import pandas as pd

    n = result.get("transactions") or 0
    counts = _counts(result)
    rules = result.get("rules", [])
    lifts = []
    for r in rules:
        cc = counts.get(frozenset(_hashable(x) for x in r["consequent"]))
        conf = r.get("confidence")
        lifts.append(None if conf is None or not cc or not n else conf * n / cc)
    sup = [r.get("support") for r in rules]
    return pd.DataFrame(
        {
            "antecedent": pd.Series([tuple(r["antecedent"]) for r in rules], dtype=object),
            "consequent": pd.Series([tuple(r["consequent"]) for r in rules], dtype=object),
            "support": pd.array(sup, dtype="Int64"),
            "support_fraction": pd.array([None if c is None or not n else c / n for c in sup], dtype="Float64"),
            "confidence": pd.array([r.get("confidence") for r in rules], dtype="Float64"),
            "lift": pd.array(lifts, dtype="Float64"),
        }
    )


def result_table(result: Mapping[str, Any]) -> pd.DataFrame:
    """Itemsets and rules in one table (what ``ppdm mine -o FILE.csv|.parquet`` writes), columns
    :data:`TABLE_COLUMNS`: ``kind`` is ``itemset`` or ``rule``; itemset rows fill ``items`` and leave
    ``antecedent``/``consequent`` empty, rule rows the other way round; ``length`` is the number of items
    (of the rule: antecedent and consequent); ``confidence`` and ``lift`` are empty on itemset rows."""
    import pandas as pd

    its, rules = itemsets_frame(result), rules_frame(result)
    none = pd.Series([None] * len(its), dtype=object)
    a = pd.DataFrame(
        {
            "kind": "itemset",
            "items": its["items"],
            "antecedent": none,
            "consequent": none,
            "length": its["length"],
            "support": its["support"],
            "support_fraction": its["support_fraction"],
            "confidence": pd.array([None] * len(its), dtype="Float64"),
            "lift": pd.array([None] * len(its), dtype="Float64"),
        }
    )
    b = pd.DataFrame(
        {
            "kind": "rule",
            "items": pd.Series([None] * len(rules), dtype=object),
            "antecedent": rules["antecedent"],
            "consequent": rules["consequent"],
            "length": pd.Series(
                [len(x) + len(y) for x, y in zip(rules["antecedent"], rules["consequent"])], dtype="int64"
            ),
            "support": rules["support"],
            "support_fraction": rules["support_fraction"],
            "confidence": rules["confidence"],
            "lift": rules["lift"],
        }
    )
    frames = [f for f in (a, b) if len(f)]
    if not frames:
        return a[TABLE_COLUMNS]
    return pd.concat(frames, ignore_index=True)[TABLE_COLUMNS]


def output_format(path: str | os.PathLike) -> str:
    """``csv``, ``parquet`` or ``json`` by ``path``'s extension; ``ValueError`` (one line) for any other."""
    ext = Path(path).suffix.lower()
    if ext not in OUTPUT_FORMATS:
        raise ValueError(
            f"cannot write {path}: the extension says the format: .csv, .parquet or .json (got {ext or 'none'})"
        )
    return OUTPUT_FORMATS[ext]


def _item_kind(table: pd.DataFrame) -> str:
    """``int`` when every item of the table is an integer, else ``str`` (mixed names are written as text)."""
    for col in ("items", "antecedent", "consequent"):
        for t in table[col]:
            if t is not None and any(isinstance(x, bool) or not isinstance(x, int) for x in t):
                return "str"
    return "int"


def result_bytes(result: Mapping[str, Any], fmt: str) -> bytes:
    """``result`` encoded as ``fmt`` (:func:`write_result`)."""
    if fmt == "json":
        return json.dumps(dict(result)).encode()
    table = result_table(result)
    lists = ("items", "antecedent", "consequent")
    if fmt == "csv":
        out = table.copy()
        for col in lists:
            out[col] = [None if t is None else json.dumps(list(t), ensure_ascii=False) for t in out[col]]
        return out.to_csv(index=False, lineterminator="\n").encode()
    if fmt != "parquet":
        raise ValueError(f"unknown output format {fmt!r}")
    import pyarrow as pa
    import pyarrow.parquet as pq

    kind = _item_kind(table)
    item_type = pa.int64() if kind == "int" else pa.string()
    cols = {}
    for col in TABLE_COLUMNS:
        if col in lists:
            vals = [None if t is None else [x if kind == "int" else str(x) for x in t] for t in table[col]]
            cols[col] = pa.array(vals, type=pa.list_(item_type))
        elif col == "kind":
            cols[col] = pa.array(table[col].tolist(), type=pa.string())
        elif col in ("length", "support"):
            cols[col] = pa.array([None if v is None else int(v) for v in _values(table[col])], pa.int64())
        else:
            cols[col] = pa.array([None if v is None else float(v) for v in _values(table[col])], pa.float64())
    meta = {k: v for k, v in result.items() if k not in ("itemsets", "rules")}
    tab = pa.table(cols).replace_schema_metadata({"ppdm.result": json.dumps(meta)})
    buf = io.BytesIO()
    pq.write_table(tab, buf)
    return buf.getvalue()


def _values(col) -> list:
    """A nullable numeric column's values, pandas' ``<NA>`` as None."""
    import pandas as pd

    return [None if pd.isna(v) else v for v in col.tolist()]


def write_result(result: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write ``result`` to ``path`` by its extension, atomically (a temporary file in the same directory,
    renamed at the end: never a half-written file):

    * ``.json`` — the result object, exactly what ``ppdm mine --json`` prints;
    * ``.csv`` — :func:`result_table` (a ``kind`` column: ``itemset`` or ``rule``), each list of items as a
      JSON array (``["beer", "chips"]``), empty cells for what a row does not have;
    * ``.parquet`` — the same table with native list columns (integers when every item is one, else
      text), and the rest of the result (transactions, protocol, dp) as JSON in the schema metadata
      ``ppdm.result``.

    ``ValueError`` for another extension (before anything is written).
    """
    from anonymize.publish.io import atomic_write

    data = result_bytes(result, output_format(path))
    atomic_write(path, lambda fh: fh.write(data))
