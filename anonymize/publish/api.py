"""One function per clustering, bucketization and synthetic algorithm, each taking what
:func:`.anonymizer.anonymize_table` takes (a DataFrame with a :class:`.table.Schema` and optional
hierarchies, or an :class:`.table.EncodedTable`; privacy ``models``; ``options`` of the algorithm
such as ``{"seed": 3}``) and returning its :class:`.anonymizer.AnonymizationResult` — the release,
its further tables (``result.tables``), every metric and the report ``ppdm anonymize`` writes::

    from anonymize.publish import Schema, KAnonymity, api
    res = api.gaa_cp(df, Schema(qis, ["salary-class"]), models=[KAnonymity(10)])
    res.df, res.metrics["achieved"]

The algorithms themselves (on an encoded table, returning their own result objects) are
:mod:`.clustering`, :mod:`.bucketize` and :mod:`.condensation`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .anonymizer import AnonymizationResult, anonymize_table
from .hierarchy import Hierarchy
from .models import PrivacyModel
from .table import Schema

__all__ = ["gaa_cp", "kaca", "mdav", "lca_fc", "lca_rc", "anatomy", "msal", "condensation"]


def _run(name, table_or_df, schema, hierarchies, models, options, **kw) -> AnonymizationResult:
    return anonymize_table(table_or_df, schema, hierarchies, algorithm=name, models=models, options=options, **kw)


def gaa_cp(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    models: Sequence[PrivacyModel] | None = None,
    options: Mapping | None = None,
    **kw,
) -> AnonymizationResult:
    """GAA-CP greedy clustering (Jiang, Zeng, Ma, Journal of Software 2017): k-anonymity.
    Options: ``seed``. See :mod:`.clustering.gaacp`."""
    return _run("gaa-cp", table_or_df, schema, hierarchies, models, options, **kw)


def kaca(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    models: Sequence[PrivacyModel] | None = None,
    options: Mapping | None = None,
    **kw,
) -> AnonymizationResult:
    """KACA (Li, Wong, Fu, Pei, DaWaK 2006): k-anonymity. Options: ``seed``. See :mod:`.clustering.kaca`."""
    return _run("kaca", table_or_df, schema, hierarchies, models, options, **kw)


def mdav(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    models: Sequence[PrivacyModel] | None = None,
    options: Mapping | None = None,
    **kw,
) -> AnonymizationResult:
    """MDAV microaggregation as in sdcMicro (Domingo-Ferrer & Mateo-Sanz, IEEE TKDE 2002):
    k-anonymity. See :mod:`.clustering.mdav`."""
    return _run("mdav", table_or_df, schema, hierarchies, models, options, **kw)


def lca_fc(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    models: Sequence[PrivacyModel] | None = None,
    options: Mapping | None = None,
    **kw,
) -> AnonymizationResult:
    """LCA-FC l-diverse clustering, furthest-first seeds: k-anonymity and distinct l-diversity.
    Options: ``seed``. See :mod:`.clustering.lca`."""
    return _run("lca-fc", table_or_df, schema, hierarchies, models, options, **kw)


def lca_rc(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    models: Sequence[PrivacyModel] | None = None,
    options: Mapping | None = None,
    **kw,
) -> AnonymizationResult:
    """LCA-RC l-diverse clustering, random seeds: k-anonymity and distinct l-diversity.
    Options: ``seed``. See :mod:`.clustering.lca`."""
    return _run("lca-rc", table_or_df, schema, hierarchies, models, options, **kw)


def anatomy(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    models: Sequence[PrivacyModel] | None = None,
    options: Mapping | None = None,
    **kw,
) -> AnonymizationResult:
    """Anatomy (Xiao & Tao, VLDB 2006): distinct or entropy l-diversity; ``result.df`` is the QI
    table, ``result.tables['sensitive']`` the sensitive table. Options: ``seed``. See
    :mod:`.bucketize.anatomy`."""
    return _run("anatomy", table_or_df, schema, hierarchies, models, options, **kw)


def msal(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    models: Sequence[PrivacyModel] | None = None,
    options: Mapping | None = None,
    **kw,
) -> AnonymizationResult:
    """MSAL (several sensitive attributes, l-diversity on each): ``result.df`` is the QI table,
    ``result.tables[attribute]`` one table per sensitive attribute. Options: ``seed``. See
    :mod:`.bucketize.msal`."""
    return _run("msal", table_or_df, schema, hierarchies, models, options, **kw)


def condensation(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    models: Sequence[PrivacyModel] | None = None,
    options: Mapping | None = None,
    **kw,
) -> AnonymizationResult:
    """Condensation (Aggarwal & Yu, EDBT 2004): k-anonymity (groups of ≥ k); ``result.df`` is the
    synthetic table of the numeric QIs. Options: ``variant`` static | dynamic, ``seed``,
    ``initial``. See :mod:`.condensation.condensation`."""
    return _run("condensation", table_or_df, schema, hierarchies, models, options, **kw)
