"""The algorithm registry: every publishing algorithm says what it is and which models it honours.

An algorithm module registers itself when it is imported (the package ``anonymize.publish``
imports every built-in algorithm package, so the registry is complete whenever it is used)::

    @register("mondrian", kind=PARTITION, summary="multidimensional median cuts (LeFevre et al. 2006)",
              options=("mode",))
    def run(table, models, *, mode="strict", progress=None) -> PartitionResult: ...

Kinds (:data:`KINDS`) fix how :func:`anonymize.publish.anonymize_table` calls the algorithm and
publishes its result:

* ``full-domain`` — ``run(lattice, metric=..., progress=...) -> SearchResult`` over a
  :class:`.fulldomain.engine.Lattice`; released by hierarchy levels with tuple suppression;
* ``partition`` and ``clustering`` — ``run(table, models, **options) -> PartitionResult``: a
  class id per row (and optionally suppressed rows); released as each class's bounding cells,
  measured by the same code;
* ``bucketization`` and ``synthetic`` — publish something other than a generalized table
  (Anatomy's QI and sensitive tables; condensation's synthetic records): ``run(table, models,
  **options)`` returns the algorithm's own result object, which carries its release.

``accepts`` names the privacy models (``PrivacyModel.name``) an algorithm can honour (``None`` =
every model, i.e. any class predicate); ``requires`` those it cannot run without. A model an
algorithm cannot honour is one clear error (:func:`check_models`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import AnonymizeError

__all__ = [
    "KINDS",
    "FULL_DOMAIN",
    "PARTITION",
    "CLUSTERING",
    "BUCKETIZATION",
    "SYNTHETIC",
    "PARTITION_KINDS",
    "Algorithm",
    "PartitionResult",
    "register",
    "unregister",
    "get",
    "names",
    "algorithms",
    "check_models",
]

FULL_DOMAIN = "full-domain"
PARTITION = "partition"
CLUSTERING = "clustering"
BUCKETIZATION = "bucketization"
SYNTHETIC = "synthetic"
KINDS = (FULL_DOMAIN, PARTITION, CLUSTERING, BUCKETIZATION, SYNTHETIC)
PARTITION_KINDS = (PARTITION, CLUSTERING)
"""Kinds whose result is a class id per row, released and measured by the shared partition code."""


@dataclass
class PartitionResult:
    """What a partition-style algorithm returns: ``class_id`` per row (``0..n_classes-1``),
    optional ``suppressed`` rows (released as ``*``), class ``sizes`` and work counters ``stats``."""

    class_id: np.ndarray
    n_classes: int
    sizes: np.ndarray | None = None
    stats: dict = field(default_factory=dict)
    suppressed: np.ndarray | None = None

    def __post_init__(self):
        if self.sizes is None:
            self.sizes = np.bincount(np.asarray(self.class_id, dtype=np.int64), minlength=self.n_classes)


@dataclass(frozen=True)
class Algorithm:
    """A registered algorithm (see the module docstring)."""

    name: str
    kind: str
    run: Callable
    summary: str
    accepts: frozenset[str] | None = None
    requires: frozenset[str] = frozenset()
    options: tuple[str, ...] = ()

    def accepted_text(self) -> str:
        """The models it accepts, for messages."""
        return "every privacy model" if self.accepts is None else ", ".join(sorted(self.accepts))


_REGISTRY: dict[str, Algorithm] = {}


def register(
    name: str,
    *,
    kind: str,
    summary: str,
    accepts: Sequence[str] | None = None,
    requires: Sequence[str] = (),
    options: Sequence[str] = (),
) -> Callable[[Callable], Callable]:
    """Decorator registering ``run`` under ``name`` (names are unique; kinds from :data:`KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"unknown algorithm kind {kind!r} (use {', '.join(KINDS)})")

    def deco(run: Callable) -> Callable:
        if name in _REGISTRY and _REGISTRY[name].run is not run:
            raise ValueError(f"algorithm {name!r} is registered twice")
        _REGISTRY[name] = Algorithm(
            name,
            kind,
            run,
            summary,
            None if accepts is None else frozenset(accepts),
            frozenset(requires),
            tuple(options),
        )
        return run

    return deco


def unregister(name: str) -> None:
    """Remove an algorithm (for plug-ins and tests that register their own)."""
    _REGISTRY.pop(name, None)


def algorithms() -> list[Algorithm]:
    """Every registered algorithm, in registration order."""
    return list(_REGISTRY.values())


def names() -> tuple[str, ...]:
    """Names of every registered algorithm (the CLI's ``--algorithm`` choices), grouped by kind in
    the order of :data:`KINDS`, in registration order within a kind."""
    return tuple(a.name for a in sorted(algorithms(), key=lambda a: KINDS.index(a.kind)))


def get(name: str) -> Algorithm:
    """The algorithm registered as ``name``; one-line error listing the choices otherwise."""
    alg = _REGISTRY.get(name)
    if alg is None:
        raise AnonymizeError(f"unknown algorithm '{name}' (use {', '.join(names())})")
    return alg


def check_models(alg: Algorithm, models: Sequence) -> None:
    """One-line error when ``alg`` cannot honour one of ``models`` or lacks one it requires."""
    given = {m.name for m in models}
    if alg.accepts is not None:
        for m in models:
            if m.name not in alg.accepts:
                raise AnonymizeError(
                    f"algorithm '{alg.name}' cannot honour {m.name} (it accepts {alg.accepted_text()})"
                )
    missing = sorted(alg.requires - given)
    if missing:
        raise AnonymizeError(f"algorithm '{alg.name}' needs {' and '.join(missing)}")
