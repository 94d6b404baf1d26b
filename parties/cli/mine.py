"""``ppdm mine``: frequent itemsets and association rules — centralized, or jointly between daemons.

* ``ppdm mine FILE`` — mine one table locally (centralized): FIMI ``.dat``, CSR ``.npz``, or
  CSV/Parquet with ``--transaction COL --item COL``; or ``--duckdb DB`` / ``--postgresql URL``
  (``--password-file``) with ``--query SQL`` (docs/data-sources.md).
* ``ppdm mine --local N --split horizontal|vertical FILE.dat`` — partition the
  file, start N local daemons with fresh certificates, mine jointly, compare
  nothing, shut them down. For trying the protocols on one machine.
* ``ppdm mine --local --split horizontal|vertical A.csv B.csv ... --transaction COL --item COL`` —
  one local daemon per keyed table (vertical: aligned by ``--align private-id`` (default) or ``psi``).
* ``ppdm mine --parties ANALYST.toml --split horizontal|vertical [--data KEY]`` — run the
  joint job on real daemons; each reads its own ``[data] KEY`` (default ``transactions``).

``--json`` prints ``{"transactions", "itemsets": [{"items", "count"}], "rules":
[{"antecedent", "consequent", "support", "confidence"}], "protocol": {...}}``.
``-o FILE`` also writes the result, by extension: ``.json`` (that object), ``.csv`` or ``.parquet``
(one table, a ``kind`` column ``itemset``/``rule``: :func:`parties.analyst.result.write_result`);
``--report FILE.html`` a page a person reads (:mod:`parties.analyst.report`). Both paths are checked
before any work, both files are made in memory and written atomically at the end.

With ``--epsilon E`` (joint horizontal jobs) the whole job is ε-differentially private
(:mod:`parties.joint.dp_mining`): counts and decisions are noisy, the JSON gains a ``"dp"`` block
(ε, its split over N and the levels, the sensitivities, the expected errors), and each daemon
charges ε to the analyst's budget (:mod:`parties.guards.dp_budget`). When the noise of a count
exceeds the support threshold, one line on stderr says so before the results: ``most itemsets
below are noise at this ε: try ε ≥ X`` (:mod:`parties.analyst.noise`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from parties.cli.common import CLIError

__all__ = ["register", "format_human"]


# the flag behind each field of the typed job parameters (parties.analyst.params), for error lines
FLAGS = {
    "min_support": "--min-support",
    "min_confidence": "--min-confidence",
    "max_len": "--max-len",
    "n_items": "--n-items",
    "candidates": "--candidates",
    "counting": "--counting",
    "epsilon": "--epsilon",
    "max_contributions": "--max-contributions",
    "colluders": "--colluders",
    "catalog": "--catalog",
    "align": "--align",
    "data": "--data",
}


def _catalog(path: str | None) -> tuple | None:
    """The item names of a catalog file: one per line (blank lines skipped); all-integer lines are integers."""
    if path is None:
        return None
    try:
        lines = [ln.strip() for ln in Path(path).read_text(encoding="utf-8").splitlines()]
    except FileNotFoundError:
        raise CLIError(f"cannot read catalog {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CLIError(f"cannot read catalog {path}: {getattr(e, 'strerror', None) or e}") from None
    names = [ln for ln in lines if ln]
    if not names:
        raise CLIError(f"catalog {path} names no item")
    try:
        return tuple(int(x) for x in names)
    except ValueError:
        return tuple(names)


def _check_support(x: str, what: str, allow_zero: bool = False) -> str:
    """Check a threshold the user gave (``0.3`` or ``1/3``: an exact rational, see :mod:`parties.ratio`).

    Returns it unchanged: every mode (centralized, ``--local``, ``--parties``)
    reads the same string exactly, so the threshold is ceil(minsup·N) everywhere.
    """
    from parties.analyst.params import JobParamError, check_threshold

    try:
        return check_threshold(x, what, allow_zero=allow_zero)
    except JobParamError as e:
        raise CLIError(str(e)) from None


def _job_params(args, ms: str, mc: str | None, dp: dict | None):
    """The typed parameters of the joint job (:mod:`parties.analyst.params`) from the flags."""
    from parties.analyst.params import DPOptions, HorizontalMining, JobParamError, VerticalMining

    try:
        if args.split == "horizontal":
            return HorizontalMining(
                min_support=ms,
                min_confidence=mc,
                max_len=args.max_len,
                n_items=args.n_items,
                catalog=_catalog(args.catalog),
                reveal_counts=not args.private_counts,
                candidates=args.candidates,
                dp=None if dp is None else DPOptions(**dp),
                data=args.data,
            )
        return VerticalMining(
            min_support=ms,
            min_confidence=mc,
            max_len=args.max_len,
            counting=args.counting,
            align=args.align,
            data=args.data,
        )
    except JobParamError as e:
        raise CLIError(f"{FLAGS.get(e.field, e.field)} {e.detail}") from None


def format_human(res: dict, top: int = 15) -> str:
    its, rules, proto = res["itemsets"], res["rules"], res["protocol"]
    by_len: dict[int, int] = {}
    for i in its:
        by_len[len(i["items"])] = by_len.get(len(i["items"]), 0) + 1
    lines = [
        f"transactions: {res['transactions']:,}   frequent itemsets: {len(its):,}   rules: {len(rules):,}",
        "by length: " + ", ".join(f"{k}: {v}" for k, v in sorted(by_len.items())),
    ]
    if its:
        lines.append(f"\ntop {min(top, len(its))} itemsets by count")
        for i in sorted(its, key=lambda x: (-(x["count"] or 0), len(x["items"]), x["items"]))[:top]:
            cnt = "hidden" if i["count"] is None else f"{i['count']:,}"
            lines.append(f"  {cnt:>8}  {{{', '.join(map(str, i['items']))}}}")
    if rules:
        lines.append(f"\ntop {min(top, len(rules))} rules by confidence")
        for r in sorted(rules, key=lambda x: (-(x["confidence"] or 0), -(x["support"] or 0)))[:top]:
            conf = "  >= min" if r["confidence"] is None else f"{r['confidence']:.3f}"
            sup = "hidden" if r["support"] is None else f"{r['support']:,}"
            lines.append(
                f"  {conf}  {sup:>8}  {{{', '.join(map(str, r['antecedent']))}}}"
                f" -> {{{', '.join(map(str, r['consequent']))}}}"
            )
    ph = proto.get("phases_seconds", {})
    lines.append(
        f"\nprotocol: {proto.get('mode')}" + (f", parties {', '.join(proto['parties'])}" if "parties" in proto else "")
    )
    if ph:
        lines.append("  seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in ph.items()))
    if "bytes_total" in proto:
        lines.append(f"  rounds {proto['rounds']}, {proto['bytes_total'] / 2**20:.2f} MiB on the wire")
    for r in proto.get("revealed", []):
        lines.append(f"  revealed: {r}")
    dp = res.get("dp")
    if dp:
        lines.append(
            f"\ndifferential privacy: epsilon {dp['epsilon_exact']} ({dp['epsilon_spent']:.4g} spent), "
            f"N with epsilon {dp['n_transactions']['epsilon']:.4g}, threshold {dp['threshold']} on noisy counts"
        )
        ap = dp.get("against_parties", {})
        more = ap.get("one_more_party_epsilon_at_most")
        lines.append(
            f"  epsilon-DP against the analyst and coalitions of up to {dp['colluders']} parties"
            + (f"; against one party more only {more:.4g}-DP (use --colluders)" if more is not None else "")
        )
        for lv in dp["levels"]:
            err = lv.get("expected_abs_error", lv.get("expected_abs_error_at_most"))
            lines.append(
                f"  level {lv['k']}: {lv['candidates']} candidates, sensitivity {lv['sensitivity']}, "
                f"epsilon {lv['epsilon']:.4g}, expected |error| of a count {err:,.1f}"
            )
    return "\n".join(lines)


def _dp_args(args) -> dict | None:
    """The DP parameters of the job from ``--epsilon`` and friends (checked: one line on bad input)."""
    if args.epsilon is None:
        for flag, v in (("--max-contributions", args.max_contributions), ("--colluders", args.colluders)):
            if v is not None:
                raise CLIError(f"{flag} applies with --epsilon")
        return None
    from anonymize.dp import as_epsilon

    try:
        as_epsilon(args.epsilon, "--epsilon")
    except ValueError as e:
        raise CLIError(str(e)) from None
    if not (args.parties or args.local is not None):
        raise CLIError("--epsilon applies to joint jobs (--local or --parties); for one table use ppdm dp")
    if args.split == "vertical":
        raise CLIError(
            "--epsilon cannot be used with --split vertical: no party sees a whole transaction, so what one "
            "transaction adds to the counts cannot be bounded (see docs/differential-privacy.md)"
        )
    if args.candidates not in (None, "all"):
        raise CLIError(
            f"--candidates {args.candidates} cannot be used with --epsilon: the secure union of locally large "
            "itemsets is not differentially private (--epsilon tests every public candidate)"
        )
    if args.max_len is None:
        raise CLIError("--epsilon needs --max-len: the privacy budget is split over at most that many levels")
    if args.max_contributions is not None and args.max_contributions < 1:
        raise CLIError("--max-contributions must be at least 1")
    if args.colluders is not None and args.colluders < 0:
        raise CLIError("--colluders must be >= 0")
    if args.private_counts and args.min_confidence:
        raise CLIError("with --epsilon, rules need the noisy counts: drop --private-counts or --min-confidence")
    return {
        "epsilon": args.epsilon.strip(),
        "max_contributions": args.max_contributions,
        "colluders": args.colluders or 0,
    }


def _sources(args) -> list:
    """The data sources of a local run (centralized or ``--local``), one per FILE or one database query."""
    from parties.sources import SourceError, source_from_flags

    files = list(args.files or [])
    try:
        if args.duckdb or args.postgresql:
            if files:
                raise CLIError("give either FILEs or --duckdb/--postgresql, not both")
            return [
                source_from_flags(
                    None,
                    duckdb=args.duckdb,
                    postgresql=args.postgresql,
                    password_file=args.password_file,
                    query=args.query,
                    transaction=args.transaction,
                    item=args.item,
                )
            ]
        if args.query or args.password_file:
            raise CLIError("--query and --password-file go with --duckdb or --postgresql")
        return [source_from_flags(f, transaction=args.transaction, item=args.item, key=Path(f).name) for f in files]
    except SourceError as e:
        raise CLIError(str(e)) from None


def _check_flags(args, dp) -> None:
    if args.max_len is not None and args.max_len < 1:
        raise CLIError("--max-len must be at least 1")
    if args.output:
        from parties.analyst.result import output_format

        try:
            output_format(args.output)
        except ValueError as e:
            raise CLIError(str(e)) from None
        if not Path(args.output).resolve().parent.is_dir():
            raise CLIError(f"cannot write {args.output}: its directory does not exist")
    if args.report:
        from anonymize.reporting import check_report_path

        check_report_path(args.report)  # AnonymizeError: one line, exit 2
    if args.candidates != "union" and args.split != "horizontal":
        raise CLIError("--candidates applies to joint horizontal jobs (--split horizontal)")
    if args.private_counts and args.split != "horizontal":
        raise CLIError("--private-counts applies to joint horizontal jobs (--split horizontal)")
    if args.parties and args.local is not None:
        raise CLIError("give either --parties or --local, not both")
    if args.counting != "auto" and args.split != "vertical":
        raise CLIError("--counting applies to joint vertical jobs (--split vertical)")
    if args.align and args.split != "vertical":
        raise CLIError("--align applies to joint vertical jobs (--split vertical)")
    if (args.catalog or args.n_items) and args.split == "vertical":
        raise CLIError("--catalog/--n-items number a horizontal job's items; a vertical job's items are its schema")
    if args.catalog and args.n_items:
        raise CLIError("give either --catalog or --n-items, not both")
    if args.data != "transactions" and not args.parties:
        raise CLIError("--data names a [data] key of the parties' configs: use it with --parties")
    if dp and args.parties and not (args.catalog or args.n_items):
        raise CLIError(
            "--epsilon needs the items named publicly: --catalog FILE or --n-items N (the secure union of "
            "locally frequent items is not differentially private)"
        )


def _local_count(args) -> None:
    """``--local [N]``: a count, or (``--local a.csv b.csv``) the first FILE taken by the optional N."""
    if args.local is None or isinstance(args.local, int):
        return
    if args.local.strip().isdigit():
        args.local = int(args.local)
    else:
        args.files = [args.local, *(args.files or [])]
        args.local = 0


def _cmd(args) -> int:
    started = time.time()
    _local_count(args)
    dp = _dp_args(args)
    if args.candidates is None:
        args.candidates = "all" if dp else "union"
    ms = _check_support(args.min_support, "--min-support")
    mc = _check_support(args.min_confidence, "--min-confidence", allow_zero=True) if args.min_confidence else None
    _check_flags(args, dp)
    shape = None
    if args.rtt_ms is not None or args.mbit is not None:
        if args.local is None:
            raise CLIError("--rtt-ms/--mbit emulate a WAN between local daemons: use them with --local")
        if (args.rtt_ms or 0) < 0 or (args.mbit is not None and args.mbit <= 0):
            raise CLIError("--rtt-ms must be >= 0 and --mbit > 0")
        shape = (args.rtt_ms or 0.0, args.mbit)
    if args.parties:
        if not args.split:
            raise CLIError("--split horizontal|vertical is required with --parties")
        if args.files or args.duckdb or args.postgresql:
            raise CLIError("with --parties each party reads its own data ([data] in its party.toml); give no FILE")
        from parties.analyst.api import AnalystConfig, AnalystError, mine

        try:
            cfg = AnalystConfig.load(args.parties)
        except AnalystError as e:
            raise CLIError(str(e)) from None
        res: dict = mine(_job_params(args, ms, mc, dp), cfg)
    else:
        if not (args.files or args.duckdb or args.postgresql):
            raise CLIError(
                "give the data: a FILE (.dat, .npz, .csv, .parquet), --duckdb DB or --postgresql URL with --query; "
                "or --parties ANALYST.toml"
            )
        for f in args.files or []:
            if not any(c in f for c in "*?[") and not Path(f).is_file():
                raise CLIError(f"cannot read {f}: no such file")
        sources = _sources(args)
        if args.local is not None and args.engine not in ("auto", "memory"):
            raise CLIError(
                "--engine applies to a local run on this machine; --local daemons take theirs from party.toml"
            )
        res = (
            _run_local(args, sources, ms, mc, dp, shape)
            if args.local is not None
            else _centralized(sources, ms, mc, args)
        )
    text = json.dumps(res) if args.json else format_human(res)
    from parties.analyst.noise import noise_warning

    warning = noise_warning(res)
    if warning:
        print(f"ppdm: warning: {warning}", file=sys.stderr, flush=True)
    _write_files(args, res, ms, mc, started)
    print(text)
    return 0


def _write_files(args, res: dict, ms: str, mc: str | None, started: float) -> None:
    """``-o`` and ``--report``: both made in memory first, then each written atomically (a temporary file
    renamed into place); if the second cannot be written, the first is removed again."""
    from anonymize.publish.io import atomic_write
    from parties.analyst.result import output_format, result_bytes

    files: list[tuple[Path, bytes]] = []
    if args.output:
        files.append((Path(args.output), result_bytes(res, output_format(args.output))))
    if args.report:
        files.append((Path(args.report), _report_html(args, res, ms, mc, started).encode()))
    written: list[Path] = []
    try:
        for path, data in files:
            atomic_write(path, lambda fh, data=data: fh.write(data))
            written.append(path)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    for path in written:
        print(f"ppdm: wrote {path}", file=sys.stderr, flush=True)


def _report_html(args, res: dict, ms: str, mc: str | None, started: float) -> str:
    """The ``--report`` page of this run (:func:`parties.analyst.report.mining_page`)."""
    from parties.analyst.report import mining_page
    from parties.cli.report_args import command_text, redact

    params = {
        "minimum support": ms,
        "minimum confidence": mc,
        "longest itemset (--max-len)": args.max_len,
        "split": args.split,
        "parties started locally (--local)": args.local or None,
        "candidates": args.candidates if args.split == "horizontal" else None,
        "counts kept private (--private-counts)": True if args.private_counts else None,
        "item universe (--n-items)": args.n_items,
        "item catalog (--catalog)": args.catalog,
        "counting": args.counting if args.split == "vertical" else None,
        "alignment (--align)": args.align,
        "epsilon": args.epsilon,
        "max contributions per transaction": args.max_contributions,
        "colluders tolerated": args.colluders,
        "engine": None if args.engine in ("auto", None) else args.engine,
    }
    if args.parties:
        data = [f"each party's [data] {args.data} (its own party.toml)", f"parties from {args.parties}"]
    elif args.duckdb or args.postgresql:
        data = [redact(args.duckdb or args.postgresql), f"query: {args.query}"]
    else:
        data = list(args.files or [])
        if args.local and len(data) == 1:
            data = [f"{data[0]}, split among {args.local} parties"]
        elif args.local is not None and len(data) > 1:  # one local daemon per file, in protocol order
            data = [f"p{i}: {f}" for i, f in enumerate(data)]
    return mining_page(res, command=command_text(args), parameters=params, data=data, started=started)


def _centralized(sources: list, ms: str, mc: str | None, args=None) -> dict:
    if len(sources) != 1:
        raise CLIError("one data source to mine locally (several FILEs go with --local, one per party)")
    from parties.analyst.api import mine_centralized
    from parties.sources import SourceError, load_source

    engine = getattr(args, "engine", "auto") if args is not None else "auto"
    if engine not in ("auto", "memory"):
        return _centralized_on_engine(sources[0], ms, mc, args)

    try:
        kt = load_source(sources[0], progress=lambda line: print(line, file=sys.stderr, flush=True))
    except SourceError as e:
        raise CLIError(e.full()) from None
    return mine_centralized(kt.db, ms, mc, names=kt.names)


def _run_local(args, sources: list, ms: str, mc: str | None, dp, shape) -> dict:
    if not args.split:
        raise CLIError("--split horizontal|vertical is required with --local")
    params = _job_params(args, ms, mc, dp)
    from parties.analyst.api import AnalystError, mine_local, mine_local_sources

    try:
        if len(sources) == 1:
            src = sources[0]
            if src.kind != "legacy":
                raise CLIError(
                    "--local with one keyed table: give one table per party (e.g. bank.csv insurer.csv); "
                    "a single FIMI .dat or CSR .npz file is split among --local N parties"
                )
            n = args.local or 0
            if n < 2:
                raise CLIError("--local N needs N >= 2 to split one file among N parties")
            return mine_local(src.location, params, n, progress=not args.json, link_shape=shape)
        if dp and not (args.catalog or args.n_items):
            raise CLIError(
                "--epsilon on keyed tables needs the items named publicly: --catalog FILE or --n-items N (the "
                "secure union of locally frequent items is not differentially private)"
            )
        if args.local not in (0, len(sources)):
            raise CLIError(f"--local {args.local} but {len(sources)} data sources: give one source per party")
        return mine_local_sources(sources, params, progress=not args.json, link_shape=shape)
    except AnalystError as e:
        raise CLIError(str(e)) from None


def register(sub) -> None:
    p = sub.add_parser(
        "mine",
        help="frequent itemsets and rules: centralized, or jointly between party daemons",
        description="Mine frequent itemsets and association rules. Without --parties/--local the "
        "file is mined locally; --local N starts N daemons on loopback and mines a "
        "horizontal or vertical split of the file jointly; --parties runs the joint "
        "job on real daemons.",
    )
    p.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="the data: FIMI .dat, CSR .npz, or CSV/Parquet with --transaction/--item (one row per key and "
        "item); with --local, one FILE per party (or one .dat/.npz split among --local N parties)",
    )
    p.add_argument("--transaction", metavar="COL", help="keyed tables: the key column (basket id, customer id)")
    p.add_argument("--item", metavar="COL", help="keyed tables: the item column (text or integers)")
    p.add_argument("--duckdb", metavar="DB", help="read from this DuckDB database file with --query")
    p.add_argument("--postgresql", metavar="URL", help="read from PostgreSQL (postgresql://user@host/db) with --query")
    p.add_argument("--password-file", metavar="FILE", help="with --postgresql: a file holding the password (mode 600)")
    p.add_argument("--query", metavar="SQL", help="with --duckdb/--postgresql: the rows (key and item columns)")
    from parties.cli.engine_args import add_engine_args

    add_engine_args(p)
    p.add_argument(
        "--data",
        default="transactions",
        metavar="KEY",
        help="with --parties: the [data] key each party reads (a path or a [data.KEY] table; default transactions)",
    )
    p.add_argument(
        "--align",
        choices=["private-id", "psi"],
        help="keyed vertical jobs: 'private-id' (default: rows are the union of the parties' records; no party "
        "learns which of its records the others hold; reveals the union and intersection sizes) or 'psi' "
        "(a private set intersection that reveals the common keys to the parties)",
    )
    p.add_argument(
        "--catalog",
        metavar="FILE",
        help="horizontal jobs: a public list of item names (one per line) the parties count; default: the "
        "names locally frequent at some party, agreed by secure union",
    )
    p.add_argument(
        "--min-support",
        default="0.1",
        help="minimum support in (0, 1], a decimal or a fraction like 1/3 (default 0.1); "
        "frequent iff count >= ceil(min_support * N), computed exactly",
    )
    p.add_argument("--min-confidence", help="also derive rules with at least this confidence")
    p.add_argument(
        "--local",
        nargs="?",
        const="0",
        metavar="N",
        help="start local party daemons and mine jointly: one per FILE, or N sharing one .dat/.npz file",
    )
    p.add_argument("--split", choices=["horizontal", "vertical"], help="how the data is partitioned")
    p.add_argument(
        "--parties",
        metavar="ANALYST.toml",
        help="analyst config: [analyst] cert/key/ca and [parties.NAME] address, in protocol order",
    )
    p.add_argument(
        "--n-items", type=int, help="horizontal jobs: an agreed integer item universe 0..N-1 (instead of names)"
    )
    p.add_argument("--max-len", type=int, help="longest itemset to look for")
    p.add_argument(
        "--private-counts",
        action="store_true",
        help="horizontal: never compute global counts; itemsets and rules are decided by secure "
        "sums with threshold only (counts and confidences come out as null)",
    )
    p.add_argument(
        "--candidates",
        choices=["union", "all", "auto"],
        default=None,
        help="horizontal: 'union' (Kantarcioglu-Clifton, default) tests only candidates locally large "
        "somewhere, found by secure set union; 'all' skips the union and tests every public "
        "candidate (reveals less, faster on dense data; the only mode with --epsilon); 'auto' picks per "
        "level by the number of candidates",
    )
    p.add_argument(
        "--epsilon",
        metavar="E",
        help="joint horizontal jobs: make the whole job E-differentially private (noise shares inside the secure "
        "sums; decisions on noisy counts; needs --max-len); each daemon charges E to the analyst's budget",
    )
    p.add_argument(
        "--max-contributions",
        type=int,
        metavar="M",
        help="with --epsilon: each transaction counts towards at most M candidates per level (random choice), "
        "so a level's sensitivity is min(M, candidates); default: no truncation (sensitivity = candidates)",
    )
    p.add_argument(
        "--colluders",
        type=int,
        metavar="C",
        help="with --epsilon: size the noise shares so that the release stays epsilon-DP against any C "
        "colluding parties (more noise for the analyst); default 0",
    )
    p.add_argument(
        "--counting",
        choices=["auto", "product", "encrypted"],
        default="auto",
        help="vertical: how two-owner candidates are counted: 'product' (OT-batched Gilboa products), "
        "'encrypted' (LWE-encrypted columns, traffic per column not per candidate) or 'auto' (per level, "
        "by estimated cost; default). Neither reveals an infrequent count",
    )
    p.add_argument("--rtt-ms", type=float, help="with --local: emulated round-trip time per link (ms)")
    p.add_argument("--mbit", type=float, help="with --local: emulated bandwidth per link (Mbit/s)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="also write the result to FILE, atomically, in the format its extension names: .json (the object "
        "--json prints), .csv or .parquet (one table, a row per itemset and per rule: kind = itemset|rule, items "
        "(itemset rows), antecedent and consequent (rule rows), length, support (the count), support_fraction, "
        "confidence and lift (rule rows); CSV cells hold item lists as JSON arrays, Parquet as list columns)",
    )
    p.add_argument(
        "--report",
        metavar="FILE.html",
        help="also write a self-contained HTML page a person reads: what was computed and by whom, what each "
        "party learned, timings and bytes per party, the levels and the top itemsets and rules",
    )
    p.set_defaults(func=_cmd)


def _centralized_on_engine(src, ms: str, mc: str | None, args) -> dict:
    """``ppdm mine --engine duckdb|spark``: the baskets partitioned on the engine, mined by SON."""
    from anonymize.engines import EngineError, open_engine
    from parties.analyst.api import mine_centralized
    from parties.cli.engine_args import engine_kwargs
    from parties.sources import SourceError
    from parties.sources.engine_input import table_input

    if src.kind == "legacy":
        raise CLIError(f"--engine {args.engine} reads CSV, Parquet or a database; {src.location} is a FIMI/CSR file")

    def say(line: str) -> None:
        print(f"ppdm: {line}", file=sys.stderr, flush=True)

    try:
        with (
            table_input(src, memory_limit=args.memory_limit) as inp,
            open_engine(args.engine, **engine_kwargs(args)) as eng,
        ):
            baskets = eng.baskets(inp, src.transaction, src.item, progress=say)
            try:
                res = mine_centralized(baskets, ms, mc)
            finally:
                baskets.close()
    except SourceError as e:
        raise CLIError(e.full()) from None
    except EngineError as e:
        raise CLIError(str(e)) from None
    res["protocol"]["engine"] = args.engine
    return res
