"""``ppdm attack``: attack a release with an external table and print each attack's success rate.

``ppdm attack RELEASE.csv --external EXTERNAL.csv --qi COLS [--sensitive COLS] [--json]``, plus
``--hierarchies DIR`` / ``--hierarchy COL=FILE`` (to read hierarchy labels in the release),
``--known B`` (re-identification from B random known values), ``--rule-out B`` (background
knowledge: values the adversary can exclude, default 1), ``--min-query-size K`` (the differencing
attack's interface refuses query sets below K rows, default 2), ``--seed``.

A bucketized release (``ppdm anonymize --algorithm anatomy|msal``) holds ``group_id`` and no
sensitive column; each ``--sensitive`` column it lacks is read from ``--sensitive-table COL=FILE`` or,
without it, from the table ``ppdm anonymize`` wrote beside it (``REL.sensitive.csv`` or
``REL.<COL>.csv``): every released row then carries its group's values (:mod:`anonymize.attacks.bucketized`).

A thin layer over :func:`anonymize.attacks.run_attacks`. ``--json`` prints
``{"attacks": [{"name", "success_rate", "victims", "targets", …}], …}``.
"""

from __future__ import annotations

import json
import sys

from parties.cli.common import CLIError, comma_list

__all__ = ["register"]


def _cmd(args) -> int:
    from anonymize.attacks import run_attacks
    from anonymize.errors import AnonymizeError
    from anonymize.publish.io import read_hierarchies, read_table

    qis, sens = comma_list(args.qi), comma_list(args.sensitive)
    if not qis:
        raise CLIError("--qi needs at least one column")
    if args.known is not None and args.known < 1:
        raise CLIError(f"--known must be at least 1, got {args.known}")
    try:
        rel = read_table(args.input, sep=args.sep)
        ext = read_table(args.external, sep=args.sep)
        hs = read_hierarchies(args.hierarchies, args.hierarchy, columns=set(qis) | set(sens))
        tables = _sensitive_tables(args, rel, sens, read_table)
        results = run_attacks(
            rel,
            ext,
            qis,
            sens,
            hs,
            known=args.known,
            rule_out=args.rule_out,
            min_query_size=args.min_query_size,
            seed=args.seed,
            sensitive_tables={c: t for c, (_, t) in tables.items()},
        )
        from anonymize.attacks.bucketized import row_histograms
        from anonymize.publish.metrics.attack_resistance import frame_attack_resistance

        resistance = frame_attack_resistance(
            rel,
            qis,
            sens,
            rule_out=args.rule_out,
            row_hists={c: row_histograms(rel, t, c) for c, (_, t) in tables.items()},
        )
    except AnonymizeError as e:
        raise CLIError(str(e)) from None
    rep = {
        "release": str(args.input),
        "external": str(args.external),
        "release_rows": len(rel),
        "external_rows": len(ext),
        "quasi_identifiers": qis,
        "sensitive": sens,
        "attacks": [r.to_json() for r in results],
        "attack_resistance": resistance,
    }
    if tables:
        rep["sensitive_tables"] = {c: str(p) for c, (p, _) in tables.items()}
    if args.json:
        json.dump(rep, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    print(
        f"{args.input} ({len(rel):,} rows) attacked with {args.external} ({len(ext):,} people) "
        f"on {len(qis)} quasi-identifier(s)"
    )
    for c, (path, _) in tables.items():
        print(f"  bucketized release: '{c}' read from {path} (each row carries its group's values)")
    print(f"  {'attack':<22}{'success':>9}  {'victims':>15}  {'correct':>8}  what")
    for r in results:
        label = r.name + (f"[{r.extra['sensitive']}]" if "sensitive" in r.extra and len(sens) > 1 else "")
        corr = "" if r.correct is None else f"{r.correct:,}"
        print(
            f"  {label:<22}{100 * r.success_rate:>8.1f}%  {r.victims:>6,} / {r.targets:<6,}  {corr:>8}  {r.description}"
        )
    print(format_resistance(resistance))
    return 0


def format_resistance(ar: dict) -> str:
    """One line: the share of the release's classes that cannot resist an attack, and by which attack."""
    by = ", ".join(f"{a.replace('_', ' ')} {v['classes']:,}" for a, v in ar["by_attack"].items())
    return (
        f"  attack resistance: {ar['vulnerable']:,} of {ar['classes']:,} classes ({100 * ar['share_vulnerable']:.1f}%) "
        f"cannot resist an attack ({by}; rule out {ar['rule_out']})"
    )


def _sensitive_tables(args, rel, sens: list[str], read_table) -> dict:
    """``{column: (path, table)}`` for the sensitive columns a bucketized release keeps in tables of their own:
    named by ``--sensitive-table COL=FILE``, else found beside the release (``REL.sensitive.ext`` or
    ``REL.<COL>.ext``, as ``ppdm anonymize`` writes them)."""
    from pathlib import Path

    from anonymize.attacks.bucketized import GROUP_ID
    from parties.cli.anonymize import table_path

    given: dict[str, Path] = {}
    for item in args.sensitive_table:
        col, eq, path = item.partition("=")
        if not eq or not col or not path:
            raise CLIError(f"--sensitive-table needs COL=FILE, got {item!r}")
        if col not in sens:
            raise CLIError(f"--sensitive-table names '{col}', which --sensitive does not")
        given[col] = Path(path)
    out = {}
    for col in sens:
        if col in rel.columns and col not in given:
            continue
        path = given.get(col)
        if path is None:
            if GROUP_ID not in rel.columns:
                continue  # run_attacks names the missing column
            rel_path = Path(args.input)
            found = [p for p in (table_path(rel_path, col), table_path(rel_path, "sensitive")) if p.is_file()]
            if not found:
                raise CLIError(
                    f"the release has '{GROUP_ID}' and no column '{col}': a bucketized release; its table of '{col}' "
                    f"is not beside it ({table_path(rel_path, col).name} or {table_path(rel_path, 'sensitive').name}): "
                    f"give --sensitive-table {col}=FILE"
                )
            path = found[0]
        if not path.is_file():
            raise CLIError(f"--sensitive-table {col}: no file {path}")
        out[col] = (path, read_table(path, sep=args.sep))
    return out


def register(sub) -> None:
    """Add the ``attack`` verb."""
    p = sub.add_parser(
        "attack",
        help="linkage, homogeneity, background-knowledge, known-values and differencing attacks on a release",
        description="Join a release to an external table (e.g. a voter list) on quasi-identifiers and report, "
        "per attack, the share of external people it harms: re-identification (one matching record), "
        "homogeneity and background knowledge (sensitive value disclosed), re-identification from B known "
        "values, and a differencing attack on an unaudited aggregate interface. If the external table also "
        "holds a sensitive column, 'correct' counts the conclusions that are right.",
    )
    p.add_argument("input", metavar="RELEASE", help="released table: CSV (any of ; , TAB |) or Parquet")
    p.add_argument("--external", required=True, metavar="EXTERNAL", help="the adversary's table with raw QI values")
    p.add_argument("--qi", required=True, metavar="COLS", help="quasi-identifier columns, comma-separated")
    p.add_argument("--sensitive", metavar="COLS", default="", help="sensitive columns, comma-separated")
    p.add_argument(
        "--sensitive-table",
        metavar="COL=FILE",
        action="append",
        default=[],
        help="a bucketized release's (Anatomy, MSAL) table of COL: group_id, COL, count (default: the one "
        "ppdm anonymize wrote beside the release); repeatable",
    )
    p.add_argument("--hierarchies", metavar="DIR", help="ARX hierarchy files to read generalized labels")
    p.add_argument("--hierarchy", metavar="COL=FILE", action="append", default=[], help="one hierarchy (repeatable)")
    p.add_argument("--known", type=int, metavar="B", help="also re-identify from B random known values per person")
    p.add_argument("--rule-out", type=int, default=1, metavar="B", help="values the adversary can exclude (1)")
    p.add_argument(
        "--min-query-size", type=int, default=2, metavar="K", help="differencing: refused query-set size (2)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed for the random known values (0)")
    p.add_argument("--sep", default=None, help="input delimiter (default: sniffed)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd)
