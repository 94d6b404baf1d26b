"""``ppdm tune``: choose k, l and t for a disclosure bound and a quality bound, and show the trade-off.

    ppdm tune IN.csv --qi COLS --sensitive COLS --pmax P [--quality-bound Q] [--quality-metric cdm|ncp]
        [--hierarchies DIR | --hierarchy COL=FILE ...] [--k-range LO:HI] [--algorithm NAME]
        [--max-suppression F] [--suppressed-rows star|drop|arx] [--json] [--plot OUT.png]

A thin layer over :func:`anonymize.publish.policy.tune.tune` (Y. Xu, H. Guo, "Privacy protection
model and parameter optimization method for data dissemination", Computer Engineering 47(5),
2021, §3): K_min = the smallest k ≥ ⌈1/P_max⌉ whose release has P = t/|E| ≤ P_max (eq. 1, t measured), K_max = the largest k whose release meets the quality bound,
the chosen k in the middle; Algorithm 1 for l; Algorithm 2 for t with EMD steps. Prints the chosen
parameters and the trade-off tables (parameter → information loss and disclosure probability),
or the same as JSON; ``--plot`` draws them. Progress goes to stderr on long runs.

``--suppressed-rows`` is ``ppdm anonymize``'s (default ``star``): every release the tune measures is
made that way, and the output records it. With ``arx`` (ARX's outliers) the ``*`` group of suppressed
rows is not judged: k, l, t and P are those of the classes outside it, as ``ppdm anonymize
--suppressed-rows arx`` reports ``achieved``, and each chosen release says which models the group breaks.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from anonymize.errors import AnonymizeError
from parties.cli.anonymize import Progress
from parties.cli.schema_args import add_release_args, add_table_args, check_output_path, read_table_args

__all__ = ["register", "run_tune", "format_tune", "format_suppressed_rows", "json_ready"]


def _probability(s: str) -> float:
    try:
        x = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability such as 0.25, got {s!r}") from None
    if not 0.0 < x <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {s!r}")
    return x


def _bound(s: str) -> float:
    try:
        x = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not (x >= 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got {s!r}")
    return x


def _k_range(s: str) -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in s.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO:HI such as 2:50, got {s!r}") from None
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError(f"need 1 <= LO <= HI, got {s!r}")
    return lo, hi


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``tune`` verb to the ``ppdm`` parser."""
    from anonymize.publish.anonymizer import ALGORITHMS

    p = subparsers.add_parser(
        "tune",
        help="choose k, l and t for a disclosure bound and a quality bound; show the trade-off",
        description="Parameter selection of Xu & Guo (Computer Engineering 47(5), 2021): the k range [Kmin, Kmax] "
        "from the disclosure bound PMAX (Kmin = the first k from ceil(1/PMAX) whose release has P <= PMAX) and the quality bound (Kmax), its middle as k; "
        "Algorithm 1 for l and Algorithm 2 (EMD steps) for t. Prints the chosen parameters and the trade-off "
        "of each parameter against information loss and disclosure probability (the largest share of one "
        "sensitive value in a class).",
    )
    add_table_args(p, "table to tune for")
    p.add_argument("--pmax", required=True, type=_probability, help="disclosure probability bound of the data owner")
    p.add_argument("--quality-bound", type=_bound, default=None, metavar="Q", help="the data user's bound on the loss")
    p.add_argument(
        "--quality-metric",
        choices=("cdm", "ncp"),
        default="cdm",
        help="what Q bounds: cdm = sum |E|^2 / classes (this project's reconstruction of the paper's CDM, the "
        "default) or ncp = information loss in [0, 1]",
    )
    p.add_argument(
        "--k-range", type=_k_range, default=None, metavar="LO:HI", help="k values of the table (default 2:50)"
    )
    p.add_argument(
        "--algorithm",
        choices=ALGORITHMS,
        default="flash",
        help="algorithm whose releases are measured (default flash: the optimal full-domain generalization)",
    )
    add_release_args(p, arx=True)
    p.add_argument(
        "--sweep-qi",
        action="store_true",
        help="also add the quasi-identifiers one at a time, in --qi order, and measure k-anonymity, l-diversity and "
        "t-closeness at the chosen parameters on each prefix: information loss and the share of classes that cannot "
        "resist a linkage, homogeneity or background-knowledge attack (the curse of dimensionality; with --plot, "
        "drawn to OUT.sweep-qi.png)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--plot", metavar="OUT.png", help="draw the trade-off curves and the class sizes at the chosen k")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=_main)
    return p


def run_tune(args, progress=None):
    """Read the inputs named by ``args`` and return the :class:`TuneResult` (nothing written)."""
    from anonymize.publish.policy.measure import PrivacyRequirement, QualityRequirement
    from anonymize.publish.policy.tune import default_k_values, tune
    from anonymize.publish.table import EncodedTable

    df, schema, hs = read_table_args(args, need_sensitive=True)
    table = EncodedTable.encode(df, schema, hs)
    quality = None if args.quality_bound is None else QualityRequirement(args.quality_metric, args.quality_bound)
    privacy = PrivacyRequirement(args.pmax)
    ks = default_k_values(args.pmax, table.n)
    if args.k_range is not None:
        lo, hi = args.k_range
        ks = list(range(lo, min(hi, table.n) + 1))
    return tune(
        table,
        privacy,
        quality,
        k_values=ks,
        algorithm=args.algorithm,
        max_suppression=args.max_suppression,
        suppressed_rows=args.suppressed_rows,
        t_distance=args.t_distance,
        t_ground=args.t_ground,
        progress=progress,
    )


def _f(x, nd=4) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if math.isnan(x):
            return "–"
        return f"{x:.{nd}g}" if abs(x) < 1e5 else f"{x:.3e}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _table(rows: list[dict], params: list[str]) -> list[str]:
    cols = params + ["NCP", "CDM", "P", "classes", "suppressed", "privacy", "quality"]
    keys = params + ["ncp", "cdm", "disclosure", "classes", "suppressed", "privacy_ok", "quality_ok"]
    out = ["  " + "".join(f"{c:>11}" for c in cols)]
    for r in rows:
        if not r.get("ok"):
            out.append("  " + "".join(f"{_f(r.get(k)):>11}" for k in params) + f"   no release: {r.get('error')}")
            continue
        out.append("  " + "".join(f"{_f(r.get(k)):>11}" for k in keys))
    return out


def format_suppressed_rows(mode: str | None, max_suppression: float | None, measured_on: str | None) -> str | None:
    """The line saying how suppressed rows were released and what the privacy figures describe (None
    when nothing may be suppressed and the mode is the default)."""
    if mode is None or (mode == "star" and not max_suppression):
        return None
    budget = f", up to {max_suppression:.4g} of the rows" if max_suppression else ", nothing may be suppressed"
    return f"suppressed rows: {mode}{budget} — figures describe {measured_on}"


def _group_line(what: str, rep_part: dict | None) -> str | None:
    """``--suppressed-rows arx``: what the ``*`` group of the release chosen for ``what`` breaks."""
    from anonymize.publish.policy.tune import suppressed_group_text

    if rep_part is None or "suppressed_group" not in rep_part:
        return None
    return f"  {what}: {suppressed_group_text(rep_part['suppressed_group'])} (ARX semantics)"


def format_tune(rep: dict) -> str:
    """Human-readable form of :meth:`TuneResult.as_dict`."""
    q = rep["quality"]
    qtext = "none" if q is None else f"{q['metric'].upper()} <= {q['bound']:g}"
    k = rep["k"]
    lines = [
        f"tune: {rep['rows']:,} rows, {len(rep['quasi_identifiers'])} QIs, sensitive {', '.join(rep['sensitive'])}; "
        f"algorithm {rep['algorithm']}; pmax {rep['pmax']:g}; quality {qtext}",
    ]
    sup_line = format_suppressed_rows(rep.get("suppressed_rows"), rep.get("max_suppression"), rep.get("measured_on"))
    if sup_line:
        lines.append(sup_line)
    if q is not None and q["metric"] == "cdm":
        lines.append(f"  CDM: {q['definition']}")
    for note in rep.get("pmax_notes") or []:
        lines.append(f"note: {note}")
    if k["chosen"] is None:
        lines.append(f"k: no k — {k['reason']}")
    else:
        top = "–" if k["kmax"] is None else (f"≥{k['kmax']}" if k["kmax_capped"] else str(k["kmax"]))
        note = "meets pmax" if k["meets_pmax"] else "misses pmax: k-anonymity alone does not bound P"
        lines.append(f"k: range [{k['kmin']}, {top}] → k = {k['chosen']} ({note})")
        if k.get("kmin_note"):
            lines.append(f"  K_min: {k['kmin_note']}")
        elif k.get("kmin_bound") is not None and k["kmin"] > k["kmin_bound"]:
            lines.append(
                f"  K_min = {k['kmin']}, not ceil(1/pmax) = {k['kmin_bound']}: below it some class repeats a sensitive "
                f"value too often (t = {k['repetitions']} repetitions at K_min; P = t/|E|, eq. 1)"
            )
        group = _group_line(f"* group at k = {k['chosen']}", k)
        if group:
            lines.append(group)
    if "l" in rep:
        lv = rep["l"]
        lines.append(
            f"l: Algorithm 1 → (k, l) = ({lv['k']}, {lv['chosen']})"
            if lv["chosen"] is not None
            else f"l: Algorithm 1 failed — {lv['reason']}"
        )
        group = _group_line(f"* group at (k, l) = ({lv['k']}, {lv['chosen']})", lv) if lv["chosen"] else None
        if group:
            lines.append(group)
    if "t" in rep:
        tv = rep["t"]
        if tv["chosen"] is None:
            lines.append(f"t: Algorithm 2 failed — {tv['reason']}")
        else:
            note = " — not below D_max: adds no constraint to k" if tv["no_constraint_beyond_k"] else ""
            lines.append(
                f"t: Algorithm 2 → t = {tv['chosen']:g} (EMD steps of {tv['step']:g}, D_max = {tv['d_max']:.3g}){note}"
            )
            group = _group_line(f"* group at (k, t) = ({tv['k']}, {tv['chosen']:g})", tv)
            if group:
                lines.append(group)
    lines.append("")
    lines.append("trade-off over k (NCP and CDM: information loss; P: disclosure probability)")
    lines += _table(k["table"], ["k"])
    if rep.get("l", {}).get("curve"):
        lines.append(f"trade-off over l at k = {rep['l']['curve_k']} (distinct l-diversity)")
        lines += _table(rep["l"]["curve"], ["l"])
    if rep.get("l", {}).get("table"):
        lines.append("Algorithm 1 steps")
        lines += _table(rep["l"]["table"], ["k", "l"])
    if rep.get("t", {}).get("table"):
        lines.append("Algorithm 2 steps")
        lines += _table(rep["t"]["table"], ["k", "t"])
    tm = rep["timings"]
    lines.append(
        f"in {tm['total']:.2f} s (k {tm.get('k', 0):.2f} s, l {tm.get('l', 0):.2f} s, t {tm.get('t', 0):.2f} s)"
    )
    return "\n".join(lines)


def sweep_plot_path(plot: Path) -> Path:
    """Where ``--sweep-qi --plot OUT.png`` draws the sweep: ``OUT.sweep-qi.png``."""
    return plot.with_name(f"{plot.stem}.sweep-qi{plot.suffix}")


def run_sweep(args, res, progress=None) -> list[dict]:
    """``--sweep-qi``: :func:`anonymize.publish.policy.tune.sweep_qi` with the methods the tune chose."""
    from anonymize.publish.policy.tune import sweep_methods, sweep_qi

    methods = sweep_methods(res)
    if not methods:
        raise AnonymizeError("--sweep-qi: the tune chose no parameters to sweep with (see the k line above)")
    df, schema, hs = read_table_args(args, need_sensitive=True)
    return sweep_qi(
        df,
        schema.qis,
        schema.sensitive,
        hs,
        methods,
        algorithm=args.algorithm,
        max_suppression=args.max_suppression,
        suppressed_rows=args.suppressed_rows,
        t_distance=args.t_distance,
        t_ground=args.t_ground,
        progress=progress,
    )


def format_sweep(rows: list[dict]) -> list[str]:
    """The ``--sweep-qi`` table: per QI prefix and method, loss and the share of classes each attack breaks."""
    out = [
        "",
        "adding quasi-identifiers one at a time (classes that cannot resist: linkage = one row, homogeneity = "
        "one sensitive value, background = at most 2 values)",
        f"  {'QIs':>4} {'model':<13}{'NCP':>9}{'classes':>9}{'vulnerable':>12}{'linkage':>9}{'homog.':>9}"
        f"{'backgr.':>9}  last QI",
    ]
    for r in rows:
        if not r["ok"]:
            out.append(f"  {r['n_qis']:>4} {r['model']:<13}  no release: {r.get('error')}")
            continue
        ar = r["attack_resistance"]
        by = ar["by_attack"]

        pct = {
            a: f"{100 * by[a]['share']:.1f}%" if a in by else "–"
            for a in ("linkage", "homogeneity", "background_knowledge")
        }
        out.append(
            f"  {r['n_qis']:>4} {r['model']:<13}{r['ncp']:>9.4f}{r['classes']:>9,}{100 * ar['share_vulnerable']:>11.1f}%"
            f"{pct['linkage']:>9}{pct['homogeneity']:>9}{pct['background_knowledge']:>9}  {r['qis'][-1]}"
        )
    return out


def _main(args) -> int:
    plot = check_output_path(args.plot, "plot") if args.plot else None
    if plot is not None and args.sweep_qi:
        check_output_path(str(sweep_plot_path(Path(plot))), "plot")
    progress = Progress(enabled=not args.quiet)
    res = run_tune(args, progress=progress)
    rep = res.as_dict()
    rep["input"] = str(args.input)
    sweep = run_sweep(args, res, progress) if args.sweep_qi else None
    if sweep is not None:
        rep["sweep_qi"] = sweep
    if plot is not None:
        from anonymize.publish.plots import plot_sweep_qi, plot_tune

        rel = res.k.release
        plot_tune(plot, rep, None if rel is None or not rel.ok else rel.sizes)
        if sweep is not None:
            plot_sweep_qi(sweep_plot_path(Path(plot)), sweep, title=f"ppdm tune --sweep-qi: {rep['rows']:,} rows")
    if args.json:
        json.dump(json_ready(rep), sys.stdout, indent=2, default=_json_default)
        sys.stdout.write("\n")
    else:
        print(format_tune(rep))
        if sweep is not None:
            print("\n".join(format_sweep(sweep)))
        if plot is not None:
            print(f"wrote {plot}")
            if sweep is not None:
                print(f"wrote {sweep_plot_path(Path(plot))}")
    return 0


def json_ready(x):
    """``x`` with NaN and infinities as null (strict JSON) and numpy scalars as numbers."""
    if isinstance(x, dict):
        return {str(k): json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        return json_ready(x.item())
    return x


def _json_default(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        raise AnonymizeError(f"cannot write {type(x).__name__} as JSON") from None
