"""``--plot OUT.png`` of ``ppdm anonymize`` and ``ppdm check``: what to draw for each verb.

The drawing is :mod:`anonymize.publish.plots`; the trade-off curve of an anonymization run is
:func:`anonymize.publish.policy.tune.parameter_curve`. Both verbs check the plot path before any
work and write the picture atomically after their main output.
"""

from __future__ import annotations

import numpy as np

from parties.cli.common import comma_list

__all__ = ["plot_anonymize", "plot_check"]


def plot_anonymize(path, args, res, progress=None) -> None:
    """The algorithm's trade-off around the run's parameters (t if given, else l, else k: the other
    models fixed, every value's release measured) beside the class sizes of the release written."""
    from anonymize.publish import registry
    from anonymize.publish.plots import plot_release
    from anonymize.publish.policy.measure import PrivacyRequirement
    from anonymize.publish.policy.tune import parameter_curve, tradeoff_row
    from parties.cli.model_args import models_from_args

    models = models_from_args(args)  # every model of the run (beta, delta, alpha held fixed on the curve)
    metric = args.metric if args.metric in ("ncp", "dm", "cdm") else "ncp"
    param, cands = parameter_curve(
        res.table,
        args.algorithm,
        models,
        max_suppression=args.max_suppression,
        suppressed_rows=args.suppressed_rows,
        metric=metric,
        options={"mode": args.mondrian_mode} if "mode" in registry.get(args.algorithm).options else None,
        progress=progress,
    )
    rows = [tradeoff_row(c, PrivacyRequirement(1.0), None) for c in cands]
    chosen = {"k": args.k, "l": args.l, "t": args.t}[param]
    cid = np.asarray(res.class_id, dtype=np.int64)
    sup = np.asarray(res.suppressed_mask, dtype=bool)
    sizes = np.bincount(cid[~sup]) if (~sup).any() else np.zeros(0, dtype=np.int64)
    if sup.any() and args.suppressed_rows == "star":
        sizes = np.append(sizes, int(sup.sum()))
    plot_release(
        path,
        rows,
        param,
        sizes,
        chosen=chosen,
        k=args.k,
        loss="cdm" if metric == "cdm" else "ncp",
        title=f"ppdm anonymize: {args.algorithm}, {res.metrics['rows']:,} rows",
    )


def plot_check(path, args, rep: dict) -> None:
    """Class sizes and the disclosure profile of the table as released (a single release has no
    parameter to vary: the picture shows how records spread over class sizes and risks)."""
    from anonymize.publish.io import read_table
    from anonymize.publish.plots import plot_profile
    from anonymize.publish.policy.measure import frame_classes

    df = read_table(args.input, sep=args.sep)
    sizes, disclosure = frame_classes(df, comma_list(args.qi), comma_list(args.sensitive))
    plot_profile(path, sizes, disclosure, title=f"ppdm check: {args.input} (k = {rep['k']})")
