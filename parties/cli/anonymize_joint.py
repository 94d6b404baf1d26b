"""``ppdm anonymize`` across organizations: ``--parties ANALYST.toml --data KEY --split horizontal|vertical``
runs the joint search on the party daemons (each reads its own ``[data] KEY`` table); ``--local N --split
horizontal IN.csv`` splits IN's rows in turn over N local daemons first, ``--split vertical`` its
quasi-identifiers in turn, the sensitive column with the last party (for trying it on one machine).
Vertical publishing needs a compute-only helper (``--compute-only NAME``; ``--local`` starts one) and
aligns the parties' rows by position, or privately by ``--key COLUMN`` (``--align private-id|psi``).

Same model and algorithm flags as a local ``ppdm anonymize`` where the joint search honours them:
k-anonymity, distinct l-diversity, ``--max-suppression``, ``--suppressed-rows``, a full-domain
algorithm (flash, incognito and samarati find the same satisfying nodes; the joint search evaluates
the lattice level by level) or, with ``--split horizontal``, ``--algorithm mondrian`` (strict Mondrian
by secure medians: :mod:`parties.joint.publishing_mondrian`), ``--metric ncp`` (the default, as locally, with ``--ncp-categorical``) or
``--metric dm``. The release and its report are written on the
analyst's side; the report names what each party learned (``protocol.revealed``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from anonymize.errors import AnonymizeError

__all__ = ["add_joint_args", "is_joint", "main_joint"]

JOINT_ALGORITHMS = ("flash", "incognito", "samarati", "mondrian")


def add_joint_args(p: argparse.ArgumentParser) -> None:
    """``--parties``, ``--data``, ``--split``, ``--local``, ``--rtt-ms``, ``--mbit``."""
    g = p.add_argument_group("joint publishing (data held by several organizations)")
    g.add_argument(
        "--parties", metavar="ANALYST.toml", help="run on these party daemons; each reads its own [data] KEY table"
    )
    g.add_argument("--data", default="table", metavar="KEY", help="the parties' data key (default: table)")
    g.add_argument(
        "--split",
        choices=("horizontal", "vertical"),
        default=None,
        help="how the table is partitioned: horizontal (same columns, different rows) or vertical (different "
        "columns of the same records)",
    )
    g.add_argument(
        "--key",
        metavar="COLUMN",
        default=None,
        help="with --split vertical: align the parties' rows privately by this column (default: by position)",
    )
    g.add_argument(
        "--align",
        choices=("private-id", "psi"),
        default=None,
        help="with --key: private-id (the rows all parties hold, nobody learns which; default) or psi "
        "(the parties learn their common keys)",
    )
    g.add_argument(
        "--owner",
        metavar="COLUMN=PARTY",
        action="append",
        default=None,
        help="with --split vertical --parties: the party whose copy of COLUMN counts (when several hold it)",
    )
    g.add_argument(
        "--local",
        type=int,
        default=None,
        metavar="N",
        help="split IN over N local party daemons (mTLS on loopback) and publish jointly: rows in turn "
        "(horizontal), or the QIs in turn with the sensitive column at the last party (vertical)",
    )
    g.add_argument(
        "--compute-only",
        metavar="NAME",
        action="append",
        default=None,
        help="with --parties: a party that holds no rows and only computes (two data parties need a third)",
    )
    g.add_argument("--rtt-ms", type=float, default=None, help="with --local: emulate this round-trip time")
    g.add_argument("--mbit", type=float, default=None, help="with --local: emulate this bandwidth (Mbit/s)")


def is_joint(args) -> bool:
    return bool(
        getattr(args, "parties", None) or getattr(args, "local", None) is not None or getattr(args, "split", None)
    )


def _refuse_unsupported(args) -> None:
    """One line for every flag of a local run the joint search does not take."""
    if args.parties and args.local is not None:
        raise AnonymizeError("give either --parties or --local, not both")
    if not args.parties and args.local is None:
        raise AnonymizeError("--split needs --parties ANALYST.toml or --local N")
    if args.split is None:
        raise AnonymizeError("joint publishing needs --split horizontal or --split vertical")
    if args.split != "vertical":
        for flag, value in (("--key", args.key), ("--align", args.align), ("--owner", args.owner)):
            if value:
                raise AnonymizeError(f"{flag} belongs to --split vertical")
    if args.align is not None and args.key is None:
        raise AnonymizeError("--align needs --key COLUMN (without a key the rows are aligned by position)")
    if args.owner and args.local is not None:
        raise AnonymizeError("--owner names daemons of --parties; --local N gives each column one owner")
    if args.split == "vertical" and args.parties and len(args.compute_only or []) != 1:
        raise AnonymizeError("--split vertical needs exactly one --compute-only NAME: the helper that holds no data")
    if args.algorithm not in JOINT_ALGORITHMS:
        raise AnonymizeError(
            f"joint publishing runs the optimal full-domain search (flash, incognito, samarati) or strict "
            f"Mondrian (--split horizontal), not '{args.algorithm}'"
        )
    if args.algorithm == "mondrian" and args.split != "horizontal":
        raise AnonymizeError("joint Mondrian runs on --split horizontal; --split vertical runs the full-domain search")
    if args.algorithm == "mondrian" and args.mondrian_mode != "strict":
        raise AnonymizeError("joint Mondrian cuts strictly: a relaxed cut would split rows of equal values")
    if args.metric not in (None, "dm", "ncp"):
        raise AnonymizeError("joint publishing chooses the node of least NCP or discernibility: use --metric ncp or dm")
    if args.local is not None and args.input is None:
        raise AnonymizeError("--local N needs the table to split (IN.csv)")
    if args.parties and args.input is not None:
        raise AnonymizeError("with --parties each party reads its own data: give no input table")
    if args.compute_only and args.local is not None:
        raise AnonymizeError(
            "--compute-only names daemons of --parties; --local adds its own compute-only party when one is needed"
        )
    if (args.rtt_ms is not None or args.mbit is not None) and args.local is None:
        raise AnonymizeError("--rtt-ms/--mbit emulate a WAN between local daemons: use them with --local")
    if args.l is not None and (args.l_variant != "distinct" or args.l != int(args.l)):
        raise AnonymizeError("joint publishing checks distinct l-diversity with an integer l")
    given = {
        "--t": args.t,
        "--beta": args.beta,
        "--delta": args.delta,
        "--alpha": args.alpha,
        "--c": args.c,
        "--population": getattr(args, "population", None),
        "--delta-presence": getattr(args, "delta_presence", None),
        "--k-map": getattr(args, "k_map", None),
        "--max-avg-risk": getattr(args, "max_avg_risk", None),
        "--max-sample-uniques": getattr(args, "max_sample_uniques", None),
        "--max-population-uniques": getattr(args, "max_population_uniques", None),
    }
    for flag, value in given.items():
        if value is not None:
            raise AnonymizeError(
                f"joint publishing checks k-anonymity and distinct l-diversity; {flag} is not supported"
            )
    for flag, on in (
        ("--local-recoding", args.local_recoding),
        ("--local-records", getattr(args, "local_records", None) is not None),
        ("--gs-factor", getattr(args, "gs_factor", None) is not None),
        ("--local-gs-factor", getattr(args, "local_gs_factor", None) is not None),
        ("--local-gs-adaption", getattr(args, "local_gs_adaption", None) is not None),
        ("--keep-order", args.keep_order),
        ("--plot", args.plot),
        ("--queries", args.queries),
    ):
        if on:
            raise AnonymizeError(f"{flag} is not supported by joint publishing")
    if args.numeric_output != "range":
        raise AnonymizeError("joint publishing writes hierarchy labels (--numeric-output range)")
    if args.k is None and args.l is None:
        raise AnonymizeError("give --k and/or --l")
    sens = [c for c in (args.sensitive or "").split(",") if c.strip()]
    if len(sens) > 1:
        raise AnonymizeError("joint publishing takes one sensitive column")


def _params(args):
    from anonymize.publish.io import read_hierarchies
    from parties.analyst.publishing import JointPublishing

    qis = [c.strip() for c in (args.qi or "").split(",") if c.strip()]
    if not qis:
        raise AnonymizeError("--qi needs at least one column")
    sens = [c.strip() for c in (args.sensitive or "").split(",") if c.strip()]
    sensitive = sens[0] if sens else None
    hs = read_hierarchies(args.hierarchies, args.hierarchy, columns=set(qis) | set(sens))
    missing = [c for c in qis if c not in hs]
    if missing:
        raise AnonymizeError(
            f"joint publishing needs a hierarchy for every quasi-identifier (none for '{missing[0]}'): "
            "give --hierarchies DIR or --hierarchy COL=FILE"
        )
    domain = None
    if sensitive is not None and sensitive in hs:  # a hierarchy of the sensitive column: its leaves are public
        domain = tuple(str(v) for v in hs[sensitive].leaves)
    return JointPublishing(
        qi=tuple(qis),
        hierarchies={c: hs[c] for c in qis},
        sensitive=sensitive,
        k=int(args.k or 1),
        l=None if args.l is None else int(args.l),
        max_suppression=float(args.max_suppression),
        suppressed_rows=args.suppressed_rows,
        metric=args.metric or "ncp",
        ncp_categorical=getattr(args, "ncp_categorical", "height"),
        weights=getattr(args, "weights", None),
        sensitive_values=domain,
        data=args.data,
        split=args.split,
        compute_only=tuple(args.compute_only or ()),
        key=args.key,
        align=args.align or "private-id",
        owners=_owners(args.owner),
        algorithm="mondrian" if args.algorithm == "mondrian" else "flash",
    )


def _owners(raw) -> dict[str, str] | None:
    """``--owner COLUMN=PARTY`` (repeatable) as a mapping; one line for a malformed one."""
    if not raw:
        return None
    out: dict[str, str] = {}
    for item in raw:
        col, sep, party = item.partition("=")
        if not sep or not col.strip() or not party.strip():
            raise AnonymizeError(f"--owner takes COLUMN=PARTY, got {item!r}")
        out[col.strip()] = party.strip()
    return out


def main_joint(args) -> int:
    """``ppdm anonymize --parties … | --local N …``: run, then write the release (and report) atomically."""
    from anonymize.publish.io import atomic_write_text, write_table
    from parties.analyst.publishing import publish, publish_local
    from parties.cli.schema_args import check_output_path, output_sep

    _refuse_unsupported(args)
    params = _params(args)
    try:
        params.check()
    except ValueError as e:
        raise AnonymizeError(str(e)) from None
    out = check_output_path(args.output, "output", Path(args.input) if args.input else None)
    rep = Path(args.report) if args.report else None
    if rep is not None and rep.resolve() == out.resolve():
        raise AnonymizeError(f"output files would collide: {out}; choose another -o name")
    if args.local is not None:
        if args.local < 2:
            raise AnonymizeError("joint publishing needs at least 2 parties (--local 2 or more)")
        shape = None if args.rtt_ms is None and args.mbit is None else (float(args.rtt_ms or 0.0), args.mbit)
        try:
            res = publish_local(args.input, params, args.local, link_shape=shape, progress=not args.quiet)
        except ValueError as e:
            raise AnonymizeError(str(e)) from None
    else:
        res = publish(params, args.parties)
    res.report["input"] = (
        str(args.input) if args.input else f"[data] {args.data} of {', '.join(res.report['protocol']['parties'])}"
    )
    res.report["output"] = str(out)
    res.report["row_order"] = "random"
    sep = output_sep(args)
    write_table(res.release, out, sep=sep)
    if rep is not None:
        try:
            atomic_write_text(rep, json.dumps(res.report, indent=2, default=float) + "\n")
        except BaseException:
            out.unlink(missing_ok=True)
            raise
    if not args.quiet:
        m = res.report["metrics"]
        lv = ", ".join(f"{c}={v}" for c, v in res.levels.items())
        proto = res.report["protocol"]
        helpers = proto.get("compute_only") or ([proto["helper"]] if proto.get("helper") else [])
        who = f"{len(proto['parties']) - len(helpers)} parties" + (
            f" and {len(helpers)} compute-only" if helpers else ""
        )
        where = f"node {lv}" if res.levels else "strict Mondrian partition"
        print(
            f"wrote {out}: joint {params.split} release of {m['rows']:,} rows held by {who}, {where}; "
            f"{m['classes']:,} classes, "
            f"{m['suppressed_rows']:,} rows suppressed, DM {m['dm']:,.0f} "
            f"({res.report['protocol']['wall_seconds']:.1f} s)",
            file=sys.stdout,
        )
    return 0
