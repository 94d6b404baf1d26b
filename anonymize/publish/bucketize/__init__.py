"""Bucketization: publish the quasi-identifiers as they are and the sensitive values per group
(Xiao & Tao, "Anatomy: simple and effective privacy preservation", VLDB 2006).

* :mod:`.anatomy` — Anatomy: l-diverse groups, a QI table and a sensitive table;
* :mod:`.msal` — MSAL: several sensitive attributes, l-diversity on each, one table per attribute;
* :mod:`.result` — :class:`BucketizationResult`, the published tables and their measurement.

Both register themselves (:mod:`..registry`, kind ``bucketization``).
"""

from . import anatomy, msal, result
from .anatomy import anatomy as anatomize
from .msal import msal as msal_bucketize
from .result import GROUP_ID, BucketizationResult, bucket_metrics, bucket_tables

__all__ = [
    "anatomy",
    "msal",
    "result",
    "anatomize",
    "msal_bucketize",
    "BucketizationResult",
    "bucket_metrics",
    "bucket_tables",
    "GROUP_ID",
]
