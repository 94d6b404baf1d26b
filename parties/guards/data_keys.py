"""Which ``[data]`` keys name the same data: the guards keep one state per file, not per key."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["canonical_data_keys"]

log = logging.getLogger("ppdm.audit")


def canonical_data_keys(data: Mapping[str, Any]) -> dict[str, str]:
    """``[data]`` key → the key its state is kept under: keys naming the same file share the smallest name."""
    by_file: dict[str, list[str]] = {}
    out: dict[str, str] = {}
    for k, v in data.items():
        if isinstance(v, (str, os.PathLike)):
            by_file.setdefault(os.path.realpath(v), []).append(k)
        elif callable(getattr(v, "identity", None)):  # a [data.KEY] table (parties.sources.spec.TableSource)
            by_file.setdefault(v.identity(), []).append(k)
        else:
            out[k] = k
    for keys in by_file.values():
        canon = min(keys)
        if len(keys) > 1:
            log.warning("[data] keys %s name the same file: audited as one (%r)", ", ".join(sorted(keys)), canon)
        for k in keys:
            out[k] = canon
    return out
