"""The privacy models a command line asks for: ``--k``, ``--l``, ``--t``, ``--beta``, ``--delta``, ``--alpha``
and the population models, turned into :mod:`anonymize.publish` model objects.

Shared by ``ppdm anonymize`` and its plots (:mod:`parties.cli.plotting`), which is why it is a module of
its own: the two import it, not each other.
"""

from __future__ import annotations

__all__ = ["models_from_args"]


def models_from_args(args) -> list:
    """The privacy models of ``--k``, ``--l`` (``--l-variant``, ``--c``), ``--t`` (``--t-distance``,
    ``--t-ground``), ``--beta`` (``--beta-variant``), ``--delta`` and ``--alpha``:
    :func:`anonymize.publish.anonymizer.build_models` (a parser without the last four gets none)."""
    from anonymize.publish.anonymizer import build_models

    return build_models(
        k=args.k,
        l=args.l,
        l_variant=args.l_variant,
        c=args.c,
        t=args.t,
        t_distance=args.t_distance,
        t_ground=args.t_ground,
        beta=getattr(args, "beta", None),
        beta_variant=getattr(args, "beta_variant", "enhanced"),
        delta=getattr(args, "delta", None),
        alpha=getattr(args, "alpha", None),
        **_population_kwargs(args),
    )


def _population_kwargs(args) -> dict:
    """The population options of ``args`` for :func:`build_models` (a parser without them gets none);
    the population table is read here (one-line errors for a bad file)."""
    from anonymize.publish.io import read_table

    path = getattr(args, "population", None)
    return {
        "population": read_table(path, sep=getattr(args, "sep", None)) if path else None,
        "population_size": getattr(args, "population_size", None),
        "delta_presence": getattr(args, "delta_presence", None),
        "k_map": getattr(args, "k_map", None),
        "k_map_estimator": getattr(args, "k_map_estimator", "poisson"),
        "k_map_significance": getattr(args, "k_map_significance", 0.01),
        "max_avg_risk": getattr(args, "max_avg_risk", None),
        "max_sample_uniques": getattr(args, "max_sample_uniques", None),
        "max_population_uniques": getattr(args, "max_population_uniques", None),
        "uniqueness_estimator": getattr(args, "uniqueness_estimator", "dankar"),
    }
