"""``ppdm sdc``: sdcMicro's classic microdata methods (thin layer over :mod:`anonymize.sdc`).

    ppdm sdc IN.csv -o OUT.csv [--qi COLS --k K [--importance COL=RANK,...]]
        [--top-code COL=VALUE[:REPLACEMENT] ...] [--bottom-code COL=VALUE[:REPLACEMENT] ...]
        [--pram COLS [--pd 0.8] [--alpha 0.5]] [--seed N] [--report FILE.json] [--json]

The steps run in this order: bottom and top coding (thresholds given as ``qP`` are quantiles of
the input column, all computed before any coding), local suppression to k-anonymity with missing
values as wildcards (``--qi``/``--k``), then PRAM of the ``--pram`` columns. PRAM comes last so
that suppressed cells stay missing (PRAM leaves missing values alone) and coding first so that the
k count sees the released values. A column both in ``--qi`` and ``--pram`` is allowed but loses
the k guarantee (PRAM changes the keys the count was made on): the command warns, and the report's
``min_wildcard_frequency_released`` is the count on the released file.

OUT (and ``--report``) are written atomically once everything has succeeded. Bad input (unknown
column, non-numeric column to code, k < 1 or larger than the table, ``--pd`` outside (0, 1], a
malformed spec) prints one line ``ppdm: error: ...`` and exits 2 without writing anything.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from anonymize.errors import AnonymizeError
from parties.cli.common import CLIError, comma_list
from parties.cli.schema_args import check_output_path, output_sep, positive_int

__all__ = ["register"]


def _number(text: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise CLIError(f"{what}: expected a number, got {text!r}") from None
    if not math.isfinite(x):
        raise CLIError(f"{what}: expected a finite number, got {text!r}")
    return x


def _coding_specs(specs: list[str], kind: str) -> list[tuple[str, float | None, float | None, float | None]]:
    """``COL=VALUE[:REPLACEMENT]`` (VALUE a number or ``qP``) → (column, value, quantile, replacement)."""
    out = []
    seen: set[str] = set()
    for spec in specs:
        col, eq, rest = spec.rpartition("=")
        col = col.strip()
        if not eq or not col or not rest.strip():
            raise CLIError(f"--{kind}-code expects COL=VALUE[:REPLACEMENT] (VALUE a number or qP), got {spec!r}")
        if col in seen:
            raise CLIError(f"--{kind}-code given twice for column {col!r}")
        seen.add(col)
        val, colon, rep = rest.strip().partition(":")
        val = val.strip()
        quantile: float | None = None
        value: float | None = None
        if val.lower().startswith("q"):
            quantile = _number(val[1:], f"--{kind}-code {col}: quantile")
            if not 0 <= quantile <= 1:
                raise CLIError(f"--{kind}-code {col}: a quantile qP needs 0 <= P <= 1, got {val!r}")
        else:
            value = _number(val, f"--{kind}-code {col}: threshold")
        replacement = _number(rep.strip(), f"--{kind}-code {col}: replacement") if colon else None
        out.append((col, value, quantile, replacement))
    return out


def _importance(text: str | None) -> dict[str, int] | None:
    if text is None:
        return None
    ranks: dict[str, int] = {}
    for item in comma_list(text):
        col, eq, r = item.rpartition("=")
        if not eq or not col.strip():
            raise CLIError(f"--importance expects COL=RANK,... (rank 1 = suppressed last), got {item!r}")
        try:
            rank = int(r)
        except ValueError:
            raise CLIError(f"--importance {col.strip()}: the rank must be a positive integer, got {r!r}") from None
        if rank < 1:
            raise CLIError(f"--importance {col.strip()}: the rank must be a positive integer, got {r!r}")
        ranks[col.strip()] = rank
    if not ranks:
        raise CLIError("--importance needs at least one COL=RANK")
    return ranks


def _check_args(args) -> None:
    if args.k is not None and not args.qi:
        raise CLIError("--k needs --qi (the quasi-identifiers of the k-anonymity check)")
    if args.qi and args.k is None:
        raise CLIError("--qi needs --k (local suppression to k-anonymity)")
    if args.importance is not None and not args.qi:
        raise CLIError("--importance needs --qi and --k")
    if not args.pram and (args.pd is not None or args.alpha is not None):
        raise CLIError("--pd and --alpha need --pram COLS")
    pd_ = 0.8 if args.pd is None else args.pd
    alpha = 0.5 if args.alpha is None else args.alpha
    if not (math.isfinite(pd_) and 0 < pd_ <= 1):
        raise CLIError(f"--pd (minimum probability of keeping a value) must be in (0, 1], got {pd_:g}")
    if not (math.isfinite(alpha) and 0 <= alpha <= 1):
        raise CLIError(f"--alpha must be in [0, 1], got {alpha:g}")
    args.pd, args.alpha = pd_, alpha
    if args.seed is not None and args.seed < 0:
        raise CLIError(f"--seed must be a non-negative integer, got {args.seed}")
    if not (args.qi or args.top_code or args.bottom_code or args.pram):
        raise CLIError("nothing to do: give --qi/--k, --top-code, --bottom-code and/or --pram")


def run_sdc(args) -> dict[str, Any]:
    """Validate, read, apply the steps; returns ``{"table": DataFrame, "report": dict}`` (nothing written)."""
    import pandas as pd

    from anonymize.dp import RandomSource
    from anonymize.publish.io import read_table
    from anonymize.sdc import (
        column_quantile,
        local_suppression,
        missing_as_value_class_sizes,
        pram,
        top_bottom_coding,
        wildcard_frequencies,
    )

    _check_args(args)
    bottoms = _coding_specs(args.bottom_code, "bottom")
    tops = _coding_specs(args.top_code, "top")
    ranks = _importance(args.importance)
    qi = comma_list(args.qi)
    pram_cols = comma_list(args.pram)
    if args.qi and not qi:
        raise CLIError("--qi needs at least one column")
    if args.pram is not None and not pram_cols:
        raise CLIError("--pram needs at least one column")
    inp = Path(args.input)
    out = check_output_path(args.output, "output", inp)
    if args.report and check_output_path(args.report, "report", inp).resolve() == out.resolve():
        raise CLIError("--report and -o name the same file")

    df = read_table(inp, sep=args.sep)
    if len(df) == 0:
        raise AnonymizeError(f"input {inp} has no data rows")
    for name, cols in (("--qi", qi), ("--pram", pram_cols)):
        unknown = [c for c in cols if c not in df.columns]
        if unknown:
            raise AnonymizeError(
                f"{name}: unknown column(s) {', '.join(repr(c) for c in unknown)} "
                f"(the table has: {', '.join(map(str, df.columns))})"
            )
    if args.k is not None and args.k > len(df):
        raise AnonymizeError(f"--k {args.k} is larger than the number of records ({len(df)})")

    report: dict[str, Any] = {
        "input": str(inp),
        "output": str(out),
        "rows": len(df),
        "steps": [],
        "bottom_coded": {},
        "top_coded": {},
        "suppressed_cells": 0,
        "suppressed_by_column": {},
        "local_suppression": None,
        "pram": {},
        "seeded": args.seed is not None,
        "warnings": [],
    }
    # thresholds (quantiles too) from the input column, before any coding
    plans = []
    for kind, specs in (("bottom", bottoms), ("top", tops)):
        for col, value, q, rep in specs:
            thr = column_quantile(df, col, q) if q is not None else value
            assert thr is not None
            plans.append((kind, col, thr, q, rep))
    for kind, col, thr, q, rep in plans:
        res = top_bottom_coding(df, col, thr, rep, kind=kind, quantile=q)
        df = res.table
        report[f"{kind}_coded"][col] = res.to_json()
    if plans:
        report["steps"].append("top/bottom coding")

    if qi:
        overlap = [c for c in pram_cols if c in qi]
        if overlap:
            msg = (
                f"PRAM on quasi-identifier(s) {', '.join(overlap)}: PRAM runs after local suppression and changes "
                "the keys it counted, so the released file is not guaranteed k-anonymous (sdcMicro warns the same)"
            )
            report["warnings"].append(msg)
        ls = local_suppression(df, qi, args.k, importance=ranks)
        df = ls.table
        report["steps"].append("local suppression")
        report["suppressed_cells"] = ls.suppressed_cells
        report["suppressed_by_column"] = ls.suppressed_by_column
        report["local_suppression"] = ls.to_json()

    if pram_cols:
        pr = pram(df, pram_cols, pd=args.pd, alpha=args.alpha, rng=RandomSource(args.seed))
        df = pr.table
        report["steps"].append("PRAM")
        report["pram"] = pr.to_json()
        report["pram_parameters"] = {"pd": args.pd, "alpha": args.alpha}

    if qi:
        report["local_suppression"]["min_wildcard_frequency_released"] = int(wildcard_frequencies(df, qi).min())
        sizes = missing_as_value_class_sizes(df, qi)
        report["local_suppression"]["k_missing_as_value"] = int(sizes.min())
        complete = df[qi].notna().all(axis=1).to_numpy()
        if complete.any():
            exact = df.loc[complete].groupby(qi, dropna=False).size()
            report["local_suppression"]["k_complete_records_only"] = int(exact.min())
        else:
            report["local_suppression"]["k_complete_records_only"] = None
    assert isinstance(df, pd.DataFrame)
    return {"table": df, "report": report, "out": out}


def _summary(rep: dict[str, Any]) -> list[str]:
    lines = [f"{rep['input']}: {rep['rows']:,} rows; steps: {', '.join(rep['steps'])} -> {rep['output']}"]
    for kind in ("bottom", "top"):
        for col, d in rep[f"{kind}_coded"].items():
            q = f" (quantile {d['quantile']:g})" if "quantile" in d else ""
            op = ">" if kind == "top" else "<"
            lines.append(
                f"{kind}-coded {col}: {d['recoded']:,} value(s) {op} {d['threshold']:g}{q} replaced by {d['replacement']:g}"
            )
    ls = rep["local_suppression"]
    if ls is not None:
        per = ", ".join(f"{c} {n:,}" for c, n in rep["suppressed_by_column"].items())
        lines.append(
            f"local suppression (k = {ls['k']}, missing matches anything): {rep['suppressed_cells']:,} cell(s) "
            f"suppressed in {ls['records_with_suppressions']:,} record(s) ({per}); "
            f"{ls['records_below_k_before']:,} record(s) were below k; smallest count now "
            f"{ls['min_wildcard_frequency_released']}"
        )
        kc = ls["k_complete_records_only"]
        lines.append(
            f"  counted without wildcards: k = {ls['k_missing_as_value']} with missing as its own value, "
            f"k = {kc if kc is not None else 'n/a'} over complete records only (what pyCANON reports)"
        )
    for col, d in rep["pram"].items():
        lines.append(
            f"PRAM {col}: {d['changed']:,} value(s) changed; pd {d['pd']:g}, alpha {d['alpha']:g} "
            f"(effective {d['alpha_effective']:.4g}); transition matrix P[i][j] = P(release j | true i):"
        )
        cats = [str(c) for c in d["categories"]]
        w = max([len(c) for c in cats] + [6])
        lines.append("  " + " " * w + " " + " ".join(f"{c[:7]:>7}" for c in cats))
        for c, row in zip(cats, d["transition_matrix"]):
            lines.append(f"  {c:>{w}} " + " ".join(f"{x:7.4f}" for x in row))
        est = d["estimated_original_counts"]
        if est is not None:
            lines.append(
                "  released counts -> unbiased estimate of the original (± s.e.): "
                + "; ".join(
                    f"{c} {r:,} -> {e:,.1f} ± {s:.1f}"
                    for c, r, e, s in zip(cats, d["released_counts"], est, d["standard_errors"])
                )
            )
    if rep["seeded"]:
        lines.append("(seeded randomness: reproducible by anyone who knows the seed; for tests only)")
    return lines


def _cmd_sdc(args) -> int:
    from anonymize.publish.io import atomic_write_text, write_table

    res = run_sdc(args)
    rep, out = res["report"], res["out"]
    text = json.dumps(rep, indent=2) + "\n"
    try:
        write_table(res["table"], out, sep=output_sep(args))
        if args.report:
            atomic_write_text(Path(args.report), text)
    except OSError as e:
        raise CLIError(f"cannot write {e.filename or out}: {e.strerror or e}") from None
    for w in rep["warnings"]:
        print(f"ppdm: warning: {w}", file=sys.stderr)
    if args.json:
        sys.stdout.write(text)
    else:
        print("\n".join(_summary(rep)))
    return 0


def register(sub) -> argparse.ArgumentParser:
    """Add the ``sdc`` verb."""
    p = sub.add_parser(
        "sdc",
        help="sdcMicro's methods: top/bottom coding, local suppression to k-anonymity, invariant PRAM",
        description="Statistical disclosure control as in the R package sdcMicro: top and bottom coding of "
        "numeric columns, local suppression of quasi-identifier cells until every record's key is shared by at "
        "least k records (a missing value matches any value), and invariant PRAM of categorical columns. Steps "
        "run in that order; the output is written atomically. See docs/sdc.md.",
    )
    p.add_argument("input", metavar="IN", help="CSV (any of ; , TAB |) or Parquet")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the protected table (written atomically)")
    p.add_argument("--qi", metavar="COLS", help="quasi-identifiers for local suppression, comma-separated")
    p.add_argument("--k", type=positive_int, default=None, help="k of the k-anonymity local suppression reaches")
    p.add_argument(
        "--importance",
        metavar="COL=RANK,...",
        help="suppression priority (sdcMicro's importance): rank 1 is suppressed last; unranked QIs first",
    )
    p.add_argument(
        "--top-code",
        metavar="COL=VALUE[:REPLACEMENT]",
        action="append",
        default=[],
        help="values > VALUE become REPLACEMENT (default VALUE); VALUE may be a quantile qP, e.g. age=q0.95 "
        "(repeatable)",
    )
    p.add_argument(
        "--bottom-code",
        metavar="COL=VALUE[:REPLACEMENT]",
        action="append",
        default=[],
        help="values < VALUE become REPLACEMENT (default VALUE); VALUE may be a quantile qP (repeatable)",
    )
    p.add_argument("--pram", metavar="COLS", help="categorical columns to post-randomize (invariant PRAM)")
    p.add_argument(
        "--pd", type=float, default=None, help="PRAM: minimum probability of keeping a value, in (0, 1] (0.8)"
    )
    p.add_argument("--alpha", type=float, default=None, help="PRAM: amount of perturbation, in [0, 1] (0.5)")
    p.add_argument("--seed", type=int, default=None, help="reproducible PRAM randomness (tests only)")
    p.add_argument("--report", metavar="FILE.json", help="write the JSON report here (atomically)")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the summary")
    p.add_argument("--sep", default=None, help="input delimiter (default: sniffed)")
    p.add_argument("--out-sep", default=None, help="output delimiter (default: the input's)")
    p.set_defaults(func=_cmd_sdc)
    return p
