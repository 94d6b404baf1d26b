"""``ppdm publish``: release a table to a data user for a purpose, as a security-level policy says.

    ppdm publish IN.csv -o OUT.csv --policy POLICY.toml --user U --purpose P [--report R.json|R.html]
        --qi COLS --sensitive COLS [--id COLS] [--hierarchies DIR | --hierarchy COL=FILE ...]
        [--suppressed-rows star|drop|arx]

A thin layer over :func:`anonymize.publish.policy.engine.publish_with_policy` (Y. Xu, H. Guo,
"Privacy protection model and parameter optimization method for data dissemination", Computer
Engineering 47(5), 2021): the policy maps (user, purpose) to a security level, the level to a
method and initial parameters; the engine adjusts the parameters, then the method, until the
owner's privacy requirement and the user's quality requirement both hold. The release (and the
JSON report: the decision, every release evaluated, the release's own report) is written
atomically and only when both hold; otherwise one line says which requirement conflicts with
which and by how much (exit 2). The policy file format: ``docs/policy.md``.

``--suppressed-rows`` is ``ppdm anonymize``'s: how every release evaluated writes and is judged on its
suppressed rows. Without it the policy's ``release.suppressed_rows`` applies, whose default is
``star`` as in ``ppdm anonymize``. With ``arx`` (ARX's outliers) the ``*`` group is written but not
judged: P, k, l, t and the level's minimums hold on the classes outside it, and the summary line and the
report (``measured.suppressed_group``) say which models the group breaks.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from parties.cli.anonymize import Progress
from parties.cli.common import comma_list
from parties.cli.report_args import release_report_text, report_path
from parties.cli.schema_args import (
    add_table_args,
    check_output_path,
    output_sep,
    read_table_args,
    unroled_columns,
    warn_unroled,
)
from parties.cli.tune import json_ready

__all__ = ["register", "SUPPRESSED_ROWS_CHOICES"]

SUPPRESSED_ROWS_CHOICES = ("star", "drop", "arx")
"""``--suppressed-rows`` values, as ``ppdm anonymize`` takes them."""


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``publish`` verb to the ``ppdm`` parser."""
    p = subparsers.add_parser(
        "publish",
        help="release a table to a user for a purpose under a security-level policy",
        description="Look up the security level of USER asking for PURPOSE in the policy file, then anonymize "
        "with the level's method, adjusting its parameters and then the method until the data owner's "
        "privacy requirement (disclosure probability <= pmax) and the user's quality requirement both hold "
        "(Xu & Guo, Computer Engineering 47(5), 2021). Nothing is written when they conflict.",
    )
    add_table_args(p, "table to publish")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="release to write (CSV, or Parquet by extension)"
    )
    p.add_argument("--policy", required=True, metavar="POLICY.toml", help="security-level policy (docs/policy.md)")
    p.add_argument("--user", required=True, help="the data user, as named in the policy")
    p.add_argument("--purpose", required=True, help="the purpose of use, as named in the policy")
    p.add_argument(
        "--report",
        metavar="R",
        help="write the decision and the release report here: for R.html a self-contained page a person reads "
        "(who the release is for, every release evaluated, the achieved k/l/t, class sizes, information loss and "
        "risks as charts), else JSON",
    )
    p.add_argument(
        "--suppressed-rows",
        choices=SUPPRESSED_ROWS_CHOICES,
        default=None,
        help="suppressed rows: * in every QI, the * group judged like any class (star), left out (drop), or * in "
        "every QI with every requirement checked on the other classes only, as ARX does (arx); default: the "
        "policy's release.suppressed_rows, itself star by default as in ppdm anonymize",
    )
    p.add_argument("--out-sep", default=None, help="output CSV delimiter (default: the input's)")
    p.add_argument(
        "--queries",
        type=int,
        default=None,
        metavar="N",
        help="random COUNT queries for the release's query-error metric (0 skips it; default 200)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress or summary output")
    p.set_defaults(func=_main)
    return p


def _summary(out: Path, rel) -> str:
    d = rel.decision
    c = d.chosen
    m = rel.report["measured"]
    arx = m.get("suppressed_rows") == "arx"
    parts = [
        f"wrote {out}: user '{d.user}', purpose '{d.purpose}' → level '{d.level.name}'",
        f"{c.label()}" + (" (adjusted from the level's " + _initial(d) + ")" if d.adjusted_parameters else ""),
        f"P = {m['disclosure']:.3g} <= {d.privacy.pmax:g}" + (" outside the * group" if arx else ""),
    ]
    if d.quality is not None:
        parts.append(f"{d.quality.metric.upper()} = {m[d.quality.metric]:.4g} <= {d.quality.bound:g}")
    if arx:
        from anonymize.publish.policy.tune import suppressed_group_text

        parts.append(f"suppressed rows arx: {suppressed_group_text(m.get('suppressed_group'))} (ARX semantics)")
    parts.append(f"{len(d.steps)} release(s) evaluated")
    return "; ".join(parts)


def _initial(d) -> str:
    ps = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in d.level.params.items())
    return f"{d.level.model} {ps} ({d.level.algorithm})"


def _main(args) -> int:
    from anonymize.publish.io import atomic_write_text, write_table
    from anonymize.publish.policy.engine import publish_with_policy
    from anonymize.publish.policy.policyfile import load_policy

    started = time.time()
    out = check_output_path(args.output, "output", Path(args.input))
    rep_path = report_path(args)
    policy = load_policy(args.policy)  # validated before the data are read: a bad policy costs nothing
    prog = Progress(enabled=not args.quiet)
    df, schema, hs = read_table_args(args, need_sensitive=True)
    unroled = unroled_columns(args, df.columns)
    rel = publish_with_policy(
        df,
        schema,
        hs,
        policy,
        args.user,
        args.purpose,
        n_queries=None if args.queries is None else max(0, args.queries),
        suppressed_rows=args.suppressed_rows,
        progress=prog,
    )
    rel.report["suppressed_rows_from"] = "--suppressed-rows" if args.suppressed_rows else "policy"
    rel.report["input"] = str(args.input)
    rel.report["output"] = str(args.output)
    rel.report["unroled_columns"] = unroled
    warn_unroled(unroled)
    t = time.perf_counter()
    write_table(rel.result.df, out, sep=output_sep(args))
    rel.report["release"]["timings"]["write"] = time.perf_counter() - t
    if rep_path is not None:
        report = json_ready(rel.report)
        text = json.dumps(report, indent=2) + "\n"
        qis, sens = comma_list(args.qi), comma_list(args.sensitive)
        text = release_report_text(args, report, text, started=started, result=rel.result, qis=qis, sensitive=sens)
        atomic_write_text(rep_path, text)
    if not args.quiet:
        print(_summary(out, rel))
    return 0
