"""``ppdm anonymize``: publish a table with k-anonymity, l-diversity and/or t-closeness.

    ppdm anonymize IN.csv -o OUT.csv --qi COLS --sensitive COLS [--id COLS]
        --hierarchies DIR | --hierarchy COL=FILE ...
        --algorithm samarati|incognito|flash|datafly|mondrian|gaa-cp|kaca|mdav|lca-fc|lca-rc|
                    msal|anatomy|condensation
        [--k K] [--l L --l-variant distinct|entropy|recursive --c C] [--t T --t-distance emd|variational|kl]
        [--beta B --beta-variant basic|enhanced] [--delta D] [--alpha A (with --k)]
        [--population FILE] [--population-size N] [--delta-presence DMIN,DMAX] [--k-map K]
        [--max-avg-risk R] [--max-sample-uniques S] [--max-population-uniques U --uniqueness-estimator E]
        [--max-suppression FRACTION] [--seed N] [--condensation static|dynamic] [--report REPORT.json|.html]
        [--metric ncp|dm|cdm|height|suppressed|avg-class-size|loss] [--ncp-categorical height|leaves|span]
        [--weights COL=W,...] [--suppressed-rows star|drop|arx]
        [--local-recoding [--local-iterations N] [--local-records FRACTION]]   (flash, incognito, samarati)
        [--metric loss --gs-factor G [--local-gs-factor G] [--local-gs-adaption A]]   (ARX's gs-factor)

A thin layer over :func:`anonymize.publish.anonymizer.anonymize_table`; the algorithm choices come
from the registry. What OUT holds depends on the algorithm's kind:

* generalization (full-domain, Mondrian, clustering): the generalized table;
* bucketization: OUT is the QI table (``group_id`` + the non-sensitive columns, exactly as in the
  input) and every sensitive table is written next to it as ``OUT.<name>.<ext>`` — Anatomy's
  ``OUT.sensitive.csv``, MSAL's ``OUT.<attribute>.csv`` (one per sensitive attribute; characters
  other than letters, digits, ``-``, ``_`` and ``.`` in the name become ``_``);
* synthetic (condensation): the synthetic table of the numeric QIs.

Every file is written atomically (temporary file + rename) only after everything succeeded, all
temporary files first and then renamed together: on any error no output is left behind and
existing files keep their content. Bad input — unknown column, value missing from a hierarchy, NaN in a QI,
k larger than the table, empty or unreadable file or hierarchy — raises
:class:`anonymize.errors.AnonymizeError`, printed by :func:`parties.cli.main` as one line
``ppdm: error: ...`` with exit status 2. Runs longer than a second report progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

from anonymize.errors import AnonymizeError
from parties.cli.anonymize_joint import add_joint_args, is_joint, main_joint
from parties.cli.common import comma_list
from parties.cli.engine_args import add_database_args, add_engine_args, engine_input, engine_kwargs
from parties.cli.model_args import models_from_args
from parties.cli.report_args import release_report_text, report_path
from parties.cli.schema_args import (
    add_release_args,
    add_table_args,
    add_utility_args,
    check_output_path,
    output_sep,
    positive_int,
    read_table_args,
    unroled_columns,
    warn_unroled,
)

__all__ = ["register", "run_anonymize", "Progress"]


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``anonymize`` verb to the ``ppdm`` parser."""
    from anonymize.publish.anonymizer import ALGORITHMS
    from anonymize.publish.fulldomain import METRICS

    p = subparsers.add_parser(
        "anonymize",
        help="publish a table with k-anonymity / l-diversity / t-closeness",
        description="Anonymize a table: full-domain generalization with tuple suppression (Samarati, Incognito, "
        "Flash, Datafly), multidimensional partitioning (Mondrian), clustering (GAA-CP, KACA, MDAV, LCA-FC, "
        "LCA-RC), bucketization (Anatomy, MSAL: OUT is the QI table, each sensitive table goes to "
        "OUT.<name>.<ext>) or synthetic records (condensation), under k-anonymity, l-diversity, "
        "t-closeness, beta-likeness, delta-disclosure privacy and (alpha,k)-anonymity where the algorithm "
        "honours them. Writes the release and, with --report, a JSON "
        "report (parameters, chosen levels, every metric, timings) or, for a .html name, a page a person reads.",
    )
    add_table_args(p, "table to anonymize", optional_input=True)
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="release to write (CSV, or Parquet by extension)"
    )
    p.add_argument(
        "--algorithm", required=True, choices=ALGORITHMS, help="flash finds the same minimal nodes as incognito, faster"
    )
    p.add_argument("--k", type=positive_int, default=None, help="k of k-anonymity (1 = none; give --k and/or --l)")
    p.add_argument("--l", type=float, default=None, help="l of l-diversity")
    p.add_argument("--l-variant", choices=("distinct", "entropy", "recursive"), default="distinct")
    p.add_argument("--c", type=float, default=None, help="c of recursive (c,l)-diversity")
    p.add_argument("--t", type=float, default=None, help="t of t-closeness")
    p.add_argument("--beta", type=float, default=None, metavar="B", help="beta of beta-likeness (> 0)")
    p.add_argument(
        "--beta-variant",
        choices=("basic", "enhanced"),
        default="enhanced",
        help="beta-likeness variant (default enhanced: the gain is also capped at -ln p)",
    )
    p.add_argument("--delta", type=float, default=None, metavar="D", help="delta of delta-disclosure privacy (> 0)")
    p.add_argument(
        "--alpha", type=float, default=None, metavar="A", help="alpha of (alpha,k)-anonymity, in (0, 1]; needs --k"
    )
    _add_population_args(p)
    add_release_args(p, arx=True)
    add_utility_args(p)
    p.add_argument(
        "--metric",
        choices=METRICS,
        default=None,
        help="how to choose among the satisfying nodes (default ncp; joint publishing: dm; loss: ARX's Loss, Iyengar's loss with a "
        "geometric mean over the attributes)",
    )
    p.add_argument("--mondrian-mode", choices=("strict", "relaxed"), default="strict")
    p.add_argument(
        "--numeric-output",
        choices=("range", "mean"),
        default="range",
        help="numeric QIs as generalized ranges or as class means",
    )
    p.add_argument(
        "--queries",
        type=int,
        default=None,
        metavar="N",
        help="random COUNT queries for the query-error metric (0 skips it; default 200)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="seed of the random choices of gaa-cp, kaca, lca-fc, lca-rc, anatomy, msal, condensation (default 0)",
    )
    p.add_argument(
        "--condensation",
        choices=("static", "dynamic"),
        default=None,
        help="condensation variant: static groups or the stream (dynamic) one (default static)",
    )
    p.add_argument(
        "--local-recoding",
        action="store_true",
        help="flash, incognito, samarati: after the global transformation, anonymize the suppressed rows again on "
        "their own (a new search over just those rows), so they are released generalized at another node "
        "(ARX's local transformation; each distinct released tuple is a class)",
    )
    p.add_argument(
        "--local-iterations",
        type=positive_int,
        default=None,
        metavar="N",
        help="with --local-recoding: at most N re-searches (default 100, ARX's default)",
    )
    p.add_argument(
        "--local-records",
        type=float,
        default=None,
        metavar="FRACTION",
        help="with --local-recoding: every re-search must release at least FRACTION (0 < FRACTION <= 1) of all "
        "rows (ARX's optimizeIterativeFast); default: each re-search may keep --max-suppression of its rows "
        "suppressed (ARX's optimizeIterative)",
    )
    p.add_argument(
        "--gs-factor",
        type=float,
        default=None,
        metavar="G",
        help="with --metric loss and a full-domain search: ARX's generalization/suppression factor in [0, 1] — "
        "0 favours suppression (a suppressed value costs only its generalization), 1 generalization (a kept "
        "value costs nothing); default 0.5, both the same. Every --local-recoding step uses it too",
    )
    p.add_argument(
        "--local-gs-factor",
        type=float,
        default=None,
        metavar="G",
        help="with --local-recoding and --metric loss: the gs-factor of the re-searches (default: --gs-factor's); "
        "ARX's GUI uses 0 for the search and 0.05 for its local transformation's steps",
    )
    p.add_argument(
        "--local-gs-adaption",
        type=float,
        default=None,
        metavar="A",
        help="with --local-recoding and --metric loss (not --local-records): after a re-search that releases no "
        "row, raise the steps' gs-factor by A and go on while it stays <= 1 (ARX's adaption factor, its GUI's "
        "fixpoint-adaptive mode; GUI default 0.05)",
    )
    p.add_argument(
        "--keep-order",
        action="store_true",
        help="write rows in the input's order (default: a fresh random order, so that two releases of the same "
        "table, or a release and a copy of the input, cannot be joined row by row)",
    )
    p.add_argument(
        "--report",
        metavar="REPORT",
        help="write the report here: for REPORT.html a self-contained page a person reads (what was computed, "
        "the achieved k/l/t, class sizes, information loss and risks as charts), else the JSON report",
    )
    p.add_argument(
        "--plot", metavar="OUT.png", help="draw the trade-off around the parameters and the release's class sizes"
    )
    p.add_argument("--out-sep", default=None, help="output CSV delimiter (default: the input's)")
    p.add_argument("--quiet", action="store_true", help="no progress or summary output")
    add_engine_args(p)
    add_database_args(p)
    add_joint_args(p)
    p.set_defaults(func=_main)
    return p


def _range_pair(s: str) -> tuple[float, float]:
    """argparse type: ``DMIN,DMAX``, two fractions with DMIN ≤ DMAX."""
    from parties.cli.schema_args import fraction

    parts = s.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected DMIN,DMAX such as 0.05,0.5, got {s!r}")
    lo, hi = fraction(parts[0].strip()), fraction(parts[1].strip())
    if lo > hi:
        raise argparse.ArgumentTypeError(f"DMIN must not exceed DMAX, got {s!r}")
    return lo, hi


def _add_population_args(p: argparse.ArgumentParser) -> None:
    """δ-presence, k-map and the risk-based models (:mod:`anonymize.publish.models_population`; the
    full-domain algorithms honour them)."""
    from anonymize.publish.metrics.population import UNIQUENESS_ESTIMATORS
    from anonymize.publish.models_population import KMAP_ESTIMATORS
    from parties.cli.schema_args import fraction

    p.add_argument(
        "--population",
        metavar="FILE",
        help="population table (the same QI columns; the input is a subset of it) for --delta-presence / --k-map",
    )
    p.add_argument(
        "--population-size",
        type=positive_int,
        default=None,
        metavar="N",
        help="population size for --max-population-uniques, and for --k-map without --population (estimated)",
    )
    p.add_argument(
        "--delta-presence",
        type=_range_pair,
        default=None,
        metavar="DMIN,DMAX",
        help="delta-presence: rows / population rows of every class in [DMIN, DMAX] (needs --population)",
    )
    p.add_argument(
        "--k-map",
        type=positive_int,
        default=None,
        metavar="K",
        help="k-map: every class matches at least K population rows (--population, or --population-size estimated)",
    )
    p.add_argument("--k-map-estimator", choices=KMAP_ESTIMATORS, default="poisson", help="estimated k-map: cell sizes")
    p.add_argument(
        "--k-map-significance", type=fraction, default=0.01, metavar="ALPHA", help="estimated k-map (default 0.01)"
    )
    p.add_argument(
        "--max-avg-risk", type=fraction, default=None, metavar="R", help="average re-identification risk at most R"
    )
    p.add_argument(
        "--max-sample-uniques", type=fraction, default=None, metavar="S", help="share of rows unique at most S"
    )
    p.add_argument(
        "--max-population-uniques",
        type=fraction,
        default=None,
        metavar="U",
        help="estimated share of the population unique on the QIs at most U (with --population-size)",
    )
    p.add_argument(
        "--uniqueness-estimator",
        choices=UNIQUENESS_ESTIMATORS,
        default="dankar",
        help="population uniqueness: Dankar's decision rule (default) or one model",
    )


class Progress:
    """Progress lines on stderr for long runs: silent during the first ``after`` seconds, then at
    most one line every ``every`` seconds."""

    def __init__(self, enabled: bool = True, after: float = 1.0, every: float = 0.5, stream=None):
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.after, self.every = after, every
        self.last = -1e9
        self.stream = stream or sys.stderr

    def __call__(self, msg: str) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.t0 < self.after or now - self.last < self.every:
            return
        self.last = now
        print(f"ppdm: [{now - self.t0:6.1f} s] {msg}", file=self.stream, flush=True)


def run_anonymize(args, progress=None, frame=None):
    """Read the inputs named by ``args`` (or take the table ``frame``), anonymize, and return
    ``(result, output_sep)`` without writing anything."""
    from anonymize.publish.anonymizer import anonymize_table

    if not comma_list(args.qi):
        raise AnonymizeError("--qi needs at least one column")
    models = models_from_args(args)
    df, schema, hs = read_table_args(args, frame=frame)
    unroled = unroled_columns(args, df.columns)
    out_sep = output_sep(args)
    options: dict = {}
    if getattr(args, "seed", None) is not None:
        options["seed"] = args.seed
    if getattr(args, "condensation", None) is not None:
        options["variant"] = args.condensation
    res = anonymize_table(
        df,
        schema,
        hs,
        algorithm=args.algorithm,
        models=models,
        max_suppression=args.max_suppression,
        metric=args.metric,
        mondrian_mode=args.mondrian_mode,
        numeric_output=args.numeric_output,
        suppressed_rows=args.suppressed_rows,
        ncp_categorical=getattr(args, "ncp_categorical", "height"),
        weights=getattr(args, "weights", None),
        n_queries=None if args.queries is None else max(0, args.queries),
        local_recoding=getattr(args, "local_recoding", False),
        local_iterations=getattr(args, "local_iterations", None),
        local_records=getattr(args, "local_records", None),
        gs_factor=getattr(args, "gs_factor", None),
        local_gs_factor=getattr(args, "local_gs_factor", None),
        local_gs_adaption=getattr(args, "local_gs_adaption", None),
        options=options,
        progress=progress,
    )
    res.report["input"] = str(args.input or args.duckdb or "PostgreSQL")
    res.report["output"] = str(args.output)
    res.report["unroled_columns"] = unroled
    warn_unroled(unroled)
    if res.kind == "bucketization" and res.metrics["suppressed_rows"]:  # MSAL: rows no l-diverse group could take
        m = res.metrics
        print(
            f"ppdm: warning: {res.report['algorithm']} placed no l-diverse group for {m['suppressed_rows']:,} of "
            f"{m['rows']:,} rows ({m['suppressed_fraction']:.1%}): they are not published",
            file=sys.stderr,
            flush=True,
        )
    return res, out_sep


def _summary(res) -> str:
    m = res.metrics
    if res.kind == "bucketization":
        ach = m["achieved"]
        post = max((a["max_posterior"] for a in ach["sensitive_attributes"].values()), default=0.0)
        qe = m.get("query_error")
        return (
            f"{res.report['algorithm']}: {m['published_rows']:,} of {m['rows']:,} rows in {ach['groups']:,} groups "
            f"(l = {ach['l_required']}, largest posterior {post:.3g}); suppressed {m['suppressed_rows']:,}"
            + (f"; query error {qe['mean_relative_error']:.3f}" if qe else "")
            + f"; {res.timings['total']:.2f} s"
        )
    if res.kind == "synthetic":
        cov = m["covariance"]["covariance_relative_frobenius_error"]
        return (
            f"{res.report['algorithm']}: {m['synthetic_rows']:,} synthetic rows from {m['achieved']['groups']:,} "
            f"groups of at least {m['achieved']['group_size_min']} records; as a table k = {m['achieved']['k']} "
            f"(synthetic values); covariance error {cov:.3%}; {res.timings['total']:.2f} s"
        )
    ach = m["achieved"]
    parts = [f"{res.report['algorithm']}: {m['rows']:,} rows → {ach['classes']:,} classes (k = {ach['k']})"]
    if res.levels is not None:
        parts.append("levels " + ", ".join(f"{k}={v}" for k, v in res.levels.items()))
    parts.append(f"suppressed {m['suppressed_rows']:,}")
    local = res.report.get("local_recoding")
    if local:
        parts.append(
            f"local recoding released {local['recovered_rows']:,} of them in {len(local['nodes']) - 1} step(s)"
        )
    group = m.get("suppressed_group")  # --suppressed-rows arx: the '*' group is not held to the models
    if group and group["breaks"]:
        parts.append(f"the * group of {group['rows']:,} rows breaks {', '.join(group['breaks'])} (ARX semantics)")
    flavour = m["ncp"].get("categorical", "height")
    parts.append(f"NCP{'' if flavour == 'height' else f' ({flavour})'} {m['ncp']['ncp']:.4f}")
    parts.append(f"{res.timings['total']:.2f} s")
    return "; ".join(parts)


_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def table_path(out: Path, name: str) -> Path:
    """Where a bucketization's table ``name`` goes: ``OUT.<name>.<ext>`` next to OUT (``rel.csv`` →
    ``rel.sensitive.csv``), unsafe characters of the name replaced by ``_``."""
    safe = _SAFE.sub("_", str(name)).strip(".") or "table"
    return out.with_name(f"{out.stem}.{safe}{out.suffix}")


def shuffled_rows(df):
    """``df``'s rows in a fresh uniformly random order (OS randomness), index reset: a written
    release must not keep the input's row order, which would let a reader join two releases of the
    same table — or a release and any copy of the input — row by row (Sweeney's complementary
    release attack, IJUFKS 10(5), 2002, §4)."""
    from anonymize.dp.randomness import RandomSource

    perm = RandomSource().permutation(len(df))  # the OS CSPRNG, never a seeded generator's state
    return df.iloc[perm].reset_index(drop=True)


def write_tables(pairs, sep: str = ",") -> None:
    """Write every ``(DataFrame, path)`` atomically as a set: each to a temporary file next to its
    target first, then all renamed into place; on any error every temporary file is removed (and a
    target already renamed in this call is removed again)."""
    from anonymize.publish.io import write_table

    tmps: list[tuple[Path, Path]] = []
    done: list[Path] = []
    try:
        for df, path in pairs:
            path = Path(path)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.part{path.suffix}")
            tmps.append((tmp, path))
            write_table(df, tmp, sep=sep)
        for tmp, path in tmps:
            os.replace(tmp, path)
            done.append(path)
    except BaseException:
        for tmp, _ in tmps:
            try:
                tmp.unlink()
            except OSError:
                pass
        if len(done) < len(tmps):
            for path in done:
                try:
                    path.unlink()
                except OSError:
                    pass
        raise


def _check_local_args(args) -> None:
    """``--local-recoding`` runs on the full-domain searches only; ``--local-iterations`` needs it."""
    from anonymize.publish.fulldomain.local_recoding import LOCAL_ALGORITHMS

    if args.local_recoding and args.algorithm not in LOCAL_ALGORITHMS:
        raise AnonymizeError(
            f"--local-recoding runs on the full-domain searches {', '.join(LOCAL_ALGORITHMS)}, not '{args.algorithm}'"
        )
    if getattr(args, "local_records", None) is not None:
        if not args.local_recoding:
            raise AnonymizeError("--local-records needs --local-recoding")
        if not 0.0 < args.local_records <= 1.0:
            raise AnonymizeError(f"--local-records must be a fraction in (0, 1], got {args.local_records:g}")
    if args.local_iterations is not None and not args.local_recoding:
        raise AnonymizeError("--local-iterations needs --local-recoding")


def _main(args) -> int:
    from anonymize.engines import choose_engine
    from anonymize.publish.on_engine import engine_supports

    # bad input raises AnonymizeError: one line and exit 2 (parties.cli.main), nothing written
    if is_joint(args):
        return main_joint(args)
    if args.metric is None:
        args.metric = "ncp"
    _check_local_args(args)
    prog = Progress(enabled=not args.quiet)
    with engine_input(args) as src:
        needs_rows = (
            not engine_supports(args.algorithm, args.mondrian_mode)
            or args.local_recoding
            or getattr(args, "gs_factor", None) is not None
        )
        name = choose_engine(args.engine, src, needs_rows=needs_rows)
        if name != "memory":
            return _main_engine(args, src, name, prog)
        frame = None
        if args.input is None:  # a database table, read into memory
            from anonymize.engines.duckdb_engine import DuckDBEngine

            with DuckDBEngine(memory_limit=args.memory_limit) as eng:
                frame = eng.frame(src)
        return _main_memory(args, prog, frame)


def _main_engine(args, src, name: str, prog) -> int:
    """``--engine duckdb|spark``: :func:`anonymize.publish.on_engine.anonymize_on_engine`."""
    from anonymize.engines import open_engine
    from anonymize.publish.io import atomic_write_text, read_hierarchies
    from anonymize.publish.table import Schema

    if args.local_recoding:
        raise AnonymizeError(f"--local-recoding needs the rows in memory: use --engine memory (engine: {name})")
    if getattr(args, "gs_factor", None) is not None:
        raise AnonymizeError(f"--gs-factor needs the rows in memory: use --engine memory (engine: {name})")
    for flag, given in (("--keep-order", args.keep_order), ("--plot", args.plot), ("--queries", args.queries)):
        if given and not (flag == "--queries" and args.queries == 0):
            raise AnonymizeError(f"{flag} needs the rows in memory: use --engine memory (engine: {name})")
    qis, sens, ids = comma_list(args.qi), comma_list(args.sensitive), comma_list(args.id)
    if not qis:
        raise AnonymizeError("--qi needs at least one column")
    models = models_from_args(args)
    started = time.time()
    out = check_output_path(args.output, "output", Path(args.input) if args.input else None)
    rep_path = report_path(args)
    if rep_path is not None and rep_path.resolve() == out.resolve():
        raise AnonymizeError(f"output files would collide: {out}; choose another -o name")
    hs = read_hierarchies(args.hierarchies, args.hierarchy, columns=set(qis) | set(sens))
    from anonymize.publish.on_engine import anonymize_on_engine

    with open_engine(name, **engine_kwargs(args)) as eng:
        unroled = unroled_columns(args, eng.columns(src))
        res = anonymize_on_engine(
            eng,
            src,
            Schema(qis, sens, ids),
            hs,
            out,
            algorithm=args.algorithm,
            models=models,
            max_suppression=args.max_suppression,
            metric=args.metric,
            mondrian_mode=args.mondrian_mode,
            numeric_output=args.numeric_output,
            suppressed_rows=args.suppressed_rows,
            ncp_categorical=args.ncp_categorical,
            weights=args.weights,
            sep=output_sep(args),
            progress=prog,
        )
    res.report["input"] = str(args.input or args.duckdb or "PostgreSQL")
    res.report["output"] = str(args.output)
    res.report["unroled_columns"] = unroled
    warn_unroled(unroled)
    if rep_path is not None:
        try:
            text = json.dumps(res.report, indent=2, default=float) + "\n"
            atomic_write_text(rep_path, release_report_text(args, res.report, text, started=started))
        except BaseException:
            out.unlink(missing_ok=True)
            raise
    if not args.quiet:
        print(f"wrote {args.output} ({name} engine): " + _summary(res))
    return 0


def _main_memory(args, prog, frame=None) -> int:
    from anonymize.publish.io import atomic_write_text

    started = time.time()
    out = check_output_path(args.output, "output", Path(args.input) if args.input else None)
    rep_path = report_path(args)
    plot_path = check_output_path(args.plot, "plot") if args.plot else None
    res, out_sep = run_anonymize(args, progress=prog, frame=frame)
    extra = {name: table_path(out, name) for name in res.tables}
    for name, path in extra.items():
        check_output_path(str(path), f"{name} table", Path(args.input) if args.input else None)
    paths = [out, *extra.values()] + ([rep_path] if rep_path is not None else [])
    if len({p.resolve() for p in paths}) < len(paths):
        raise AnonymizeError(f"output files would collide: {', '.join(map(str, paths))}; choose another -o name")
    if extra:
        res.report["outputs"] = {"qi": str(out)} | {name: str(path) for name, path in extra.items()}
    t = time.perf_counter()
    tables = [(res.df, out)] + [(res.tables[name], path) for name, path in extra.items()]
    if not args.keep_order:
        tables = [(shuffled_rows(df), path) for df, path in tables]
    res.report["row_order"] = "input" if args.keep_order else "random"
    write_tables(tables, sep=out_sep or ",")
    res.report["timings"]["write"] = time.perf_counter() - t
    if rep_path is not None:
        text = json.dumps(res.report, indent=2, default=float) + "\n"
        qis, sens = comma_list(args.qi), comma_list(args.sensitive)
        text = release_report_text(args, res.report, text, started=started, result=res, qis=qis, sensitive=sens)
        atomic_write_text(rep_path, text)
    if plot_path is not None:
        from parties.cli.plotting import plot_anonymize

        plot_anonymize(plot_path, args, res, progress=prog)
    if not args.quiet:
        print(f"wrote {args.output}: " + _summary(res))
    return 0
