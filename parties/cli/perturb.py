"""``ppdm perturb`` and ``ppdm reconstruct``: randomization at collection time (thin layer over
:mod:`anonymize.randomize`).

* ``ppdm perturb IN.csv --column C --noise uniform|gaussian --scale S -o OUT.csv [--seed N]`` —
  replace column C by C + Y, Y uniform on [−S, S] or Gaussian with standard deviation S; the
  noise comes from the OS CSPRNG (``--seed``: a reproducible AES-CTR stream, for tests only).
* ``ppdm reconstruct PERTURBED.csv --column C --noise … --scale S [--bins B] [--method as|em]
  [--json] [--plot OUT.png] [--original ORIG.csv]`` — reconstruct the distribution of the
  original column; ``--json`` prints ``{"bins": [[lo, hi], …], "densities": […], …}`` and, with
  ``--original``, ``"information_loss"`` = ½∫|f − f̂| (f̂ the reconstruction's step density, f the
  original column's density estimated on a grid of its own: ``"information_loss_reference"``) and
  ``"bin_mass_loss"`` (½ Σ |P − P̂| over the reconstruction's bins, a grid-dependent lower bound).
  ``"privacy"."interval"``: the Agrawal–Srikant width at ``--confidence`` and ``"relative"`` = width
  / the attribute's range (``--domain``, else the original column's, else estimated from z for
  uniform noise; ``"range_source"`` says which).

Bad input (missing column, non-numeric column, scale ≤ 0, missing file …) prints one line
``ppdm: error: …`` and exits 2 without writing any output file; outputs are written atomically.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

from parties.cli.common import CLIError

__all__ = ["register"]


def _output_path(path: str, inp: str | None, what: str) -> Path:
    p = Path(path)
    if p.is_dir():
        raise CLIError(f"{what} {p} is a directory")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise CLIError(f"{what} directory does not exist: {parent}")
    if inp is not None and p.exists() and Path(inp).exists() and os.path.samefile(p, inp):
        raise CLIError(f"{what} {p} is the input file; choose another name")
    return p


def _numeric_column(df, column: str, path):
    import numpy as np
    import pandas as pd

    if column not in df.columns:
        raise CLIError(f"{path} has no column '{column}' (it has: {', '.join(map(str, df.columns))})")
    s = df[column]
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        raise CLIError(f"column '{column}' of {path} is not numeric; numeric noise needs numbers")
    x = s.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        raise CLIError(
            f"column '{column}' of {path} has {int(bad.sum())} missing or infinite value(s) "
            f"(first at data row {int(np.argmax(bad)) + 1}); drop or impute them first"
        )
    if x.size == 0:
        raise CLIError(f"{path} has no data rows")
    return x


def _noise(args):
    from anonymize.errors import AnonymizeError
    from anonymize.randomize import Noise

    if not math.isfinite(args.scale) or args.scale <= 0:
        raise CLIError(f"--scale must be a positive number, got {args.scale:g}")
    try:
        return Noise(args.noise, args.scale)
    except AnonymizeError as e:
        raise CLIError(str(e)) from None


def _read(path, sep):
    from anonymize.errors import AnonymizeError
    from anonymize.publish.io import read_table

    try:
        return read_table(path, sep=sep)
    except AnonymizeError as e:
        raise CLIError(str(e)) from None


def _input_sep(path: str, sep: str | None) -> str:
    from anonymize.publish.io import sniff_delimiter

    if sep:
        return sep
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return sniff_delimiter(fh.read(65536))
    except OSError:
        return ","


def _cmd_perturb(args) -> int:
    from anonymize.dp import RandomSource
    from anonymize.errors import AnonymizeError
    from anonymize.publish.io import write_table
    from anonymize.randomize import perturb

    noise = _noise(args)
    if args.seed is not None and args.seed < 0:
        raise CLIError(f"--seed must be a non-negative integer, got {args.seed}")
    out = _output_path(args.output, args.input, "output")
    df = _read(args.input, args.sep)
    x = _numeric_column(df, args.column, args.input)
    z = perturb(x, noise, RandomSource(args.seed))
    df = df.copy()
    df[args.column] = z
    try:
        write_table(df, out, sep=args.out_sep or _input_sep(args.input, args.sep))
    except AnonymizeError as e:
        raise CLIError(str(e)) from None
    except OSError as e:
        raise CLIError(f"cannot write {out}: {e.strerror or e}") from None
    w = noise.interval_width(0.95)
    rng = float(x.max() - x.min())
    rel = f" = {100 * w / rng:.0f}% of the column's range" if rng > 0 else ""
    print(
        f"perturbed {len(z):,} values of '{args.column}' with {noise.kind} noise (scale {noise.scale:g}); "
        f"95% privacy interval {w:.4g}{rel} -> {out}"
        + (
            " (seeded noise: reproducible by anyone who knows the seed; for tests only)"
            if args.seed is not None
            else ""
        ),
        file=sys.stderr,
    )
    return 0


def _domain(text: str | None):
    if text is None:
        return None
    parts = text.split(":")
    try:
        lo, hi = float(parts[0]), float(parts[1])
        if len(parts) != 2:
            raise ValueError
    except (ValueError, IndexError):
        raise CLIError(f"--domain must be LO:HI, got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise CLIError(f"--domain needs finite LO < HI, got {text!r}")
    return lo, hi


def _plot(path: Path, rec, z, original, column: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from anonymize.publish.io import atomic_write

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    if original is not None:
        ax.hist(original, bins=list(rec.edges), density=True, alpha=0.35, color="tab:green", label="original")
    zb = np.histogram_bin_edges(z, bins=min(100, max(10, len(rec.edges) * 3)))
    ax.hist(z, bins=list(zb), density=True, histtype="step", color="tab:gray", label="perturbed")
    ax.stairs(rec.densities, rec.edges, color="tab:blue", linewidth=2, label=f"reconstructed ({rec.method.upper()})")
    ax.set_xlabel(column)
    ax.set_ylabel("density")
    ax.set_title(f"{rec.noise.kind} noise, scale {rec.noise.scale:g}: {rec.iterations} iterations")
    ax.legend()
    fig.tight_layout()
    try:
        atomic_write(path, lambda fh: fig.savefig(fh, format="png"))
    finally:
        plt.close(fig)


def _cmd_reconstruct(args) -> int:
    from anonymize.errors import AnonymizeError
    from anonymize.randomize import (
        bin_mass_loss,
        conditional_privacy,
        estimate_range,
        information_loss,
        interval_privacy,
        reconstruct,
        sample_density,
    )

    noise = _noise(args)
    if not 0 < args.confidence <= 1:
        raise CLIError(f"--confidence must be in (0, 1], got {args.confidence}")
    if args.confidence == 1 and noise.kind == "gaussian":
        raise CLIError("--confidence 1 needs uniform noise (a Gaussian interval at 100% confidence is unbounded)")
    plot = _output_path(args.plot, args.input, "plot") if args.plot else None
    dom = _domain(args.domain)
    z = _numeric_column(_read(args.input, args.sep), args.column, args.input)
    original = None
    if args.original:
        col = args.original_column or args.column
        original = _numeric_column(_read(args.original, args.sep), col, args.original)
    try:
        rec = reconstruct(z, noise, bins=args.bins, method=args.method, domain=dom, max_iter=args.max_iter)
    except AnonymizeError as e:
        raise CLIError(str(e)) from None
    rep = {"column": args.column, "input": str(args.input), **rec.to_json()}
    # AS privacy is relative to the attribute's range — never to the reconstruction grid
    if dom is not None:
        data_range, source = dom[1] - dom[0], "--domain"
    elif original is not None:
        data_range, source = float(original.max() - original.min()), "original column (max - min)"
    else:
        data_range, source = estimate_range(z, noise), "estimated from the perturbed values (max z - min z - 2a)"
    rep["privacy"] = {
        "interval": interval_privacy(noise, args.confidence, data_range, source),
        "conditional_entropy": conditional_privacy(rec.edges, rec.probabilities, noise),
    }
    if original is not None:
        rep["information_loss"] = information_loss(original, rec)
        rep["information_loss_reference"] = sample_density(original)[2]
        rep["bin_mass_loss"] = bin_mass_loss(original, rec)
    if plot is not None:
        _plot(plot, rec, z, original, args.column)
        rep["plot"] = str(plot)
    if args.json:
        json.dump(rep, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    ip, cp = rep["privacy"]["interval"], rep["privacy"]["conditional_entropy"]
    print(
        f"{args.input}: '{args.column}', {rec.n:,} values, {noise.kind} noise scale {noise.scale:g}; "
        f"{rec.method.upper()} reconstruction, {len(rec.probabilities)} bins, {rec.iterations} iterations "
        f"({'stopped by rule' if rec.converged else 'hit --max-iter'}: {rec.stopping_rule})"
    )
    rel = (
        f" ({100 * ip['relative']:.0f}% of the attribute's range {ip['data_range']:.4g}, {ip['range_source']})"
        if "relative" in ip
        else " (attribute's range unknown: pass --domain or --original)"
    )
    print(
        f"privacy: {100 * args.confidence:g}% interval width {ip['interval_width']:.4g}{rel}; "
        f"2^h(X|Z) = {cp['conditional_privacy']:.4g} (2^h(X) = {cp['inherent_privacy']:.4g}, "
        f"loss {cp['privacy_loss']:.3f})"
    )
    if "information_loss" in rep:
        ref = rep["information_loss_reference"]
        print(
            f"information loss 1/2 int |f - f^| = {rep['information_loss']:.4f} against {args.original} "
            f"(its density on {ref['bins']} bins of width {ref['bin_width']:.4g}; "
            f"bin-mass lower bound {rep['bin_mass_loss']:.4f})"
        )
    print(f"  {'interval':>24}  {'density':>10}  {'probability':>11}")
    for (a, b), d, p in zip(rep["bins"], rep["densities"], rep["probabilities"]):
        print(f"  [{a:>10.4g}, {b:>10.4g})  {d:>10.4g}  {p:>11.4f}")
    if plot is not None:
        print(f"plot -> {plot}")
    return 0


def _wrap(fn):
    def run(args) -> int:
        from anonymize.errors import AnonymizeError

        try:
            return fn(args)
        except AnonymizeError as e:
            raise CLIError(str(e)) from None

    return run


def register(sub) -> None:
    """Add the ``perturb`` and ``reconstruct`` verbs."""
    p = sub.add_parser(
        "perturb",
        help="add public uniform/Gaussian noise to a numeric column (privacy at collection time)",
        description="Replace a numeric column by value + noise (Agrawal-Srikant randomization). "
        "Uniform noise is on [-S, S]; Gaussian noise has standard deviation S. The noise comes from the "
        "operating system's CSPRNG unless --seed is given (reproducible; never for real collection).",
    )
    p.add_argument("input", metavar="IN", help="CSV (any of ; , TAB |) or Parquet")
    p.add_argument("--column", required=True, help="numeric column to perturb")
    p.add_argument("--noise", required=True, choices=["uniform", "gaussian"])
    p.add_argument("--scale", required=True, type=float, metavar="S", help="half-width (uniform) or std (gaussian)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="perturbed table (written atomically)")
    p.add_argument("--seed", type=int, default=None, help="reproducible noise stream (tests only)")
    p.add_argument("--sep", default=None, help="input delimiter (default: sniffed)")
    p.add_argument("--out-sep", default=None, help="output delimiter (default: the input's)")
    p.set_defaults(func=_wrap(_cmd_perturb))

    r = sub.add_parser(
        "reconstruct",
        help="reconstruct the distribution of a perturbed column (AS iterative Bayes or EM)",
        description="Reconstruct the original distribution of a perturbed numeric column from the public "
        "noise: Agrawal-Srikant iterative Bayes (as) or Agrawal-Aggarwal EM (em), and report the privacy "
        "of the noise (interval width at a confidence level; conditional entropy 2^h(X|Z)).",
    )
    r.add_argument("input", metavar="PERTURBED", help="perturbed table")
    r.add_argument("--column", required=True)
    r.add_argument("--noise", required=True, choices=["uniform", "gaussian"])
    r.add_argument("--scale", required=True, type=float, metavar="S")
    r.add_argument("--bins", type=int, default=20, help="intervals of the reconstructed histogram (default 20)")
    r.add_argument("--method", choices=["as", "em"], default="em", help="as (Agrawal-Srikant) or em (default)")
    r.add_argument("--domain", metavar="LO:HI", help="public range of the original values (default: estimated)")
    r.add_argument("--max-iter", type=int, default=2000, help="iteration cap (default 2000)")
    r.add_argument(
        "--confidence", type=float, default=0.95, help="confidence of the interval privacy, in (0, 1] (0.95)"
    )
    r.add_argument("--original", metavar="ORIG", help="original table: report information loss, plot it")
    r.add_argument("--original-column", metavar="C", help="column in ORIG (default: --column)")
    r.add_argument("--plot", metavar="OUT.png", help="original, perturbed and reconstructed histograms (PNG)")
    r.add_argument("--sep", default=None, help="input delimiter (default: sniffed)")
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.set_defaults(func=_wrap(_cmd_reconstruct))
