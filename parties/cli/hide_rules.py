"""``ppdm hide-rules``: sanitize a FIMI transaction file so sensitive itemsets and rules are not mined.

::

    ppdm hide-rules FILE.dat --sensitive "1 2; 3 4 => 5" --min-support S [--min-confidence C]
                    --algorithm heuristic|swa|border|exact -o SANITIZED.dat [--json]

Itemsets are separated by ``;``, a rule is ``X => Y``. The input file is never
modified; the output is written atomically (temporary file + rename) and never
over the input. ``--json`` prints the report of :func:`anonymize.hiding.hide`
(hiding failure, misses cost, ghosts, dissimilarity, items removed, seconds …).
An empty line of the input is an empty transaction (it counts in N) and is written
back as an empty line. A sensitive pattern not mined from the input is left alone and
listed as already hidden. ``--max-itemsets N`` (default 1,000,000) caps the frequent itemsets
of the input that are mined: past it, mining stops within seconds and the run fails. Bad input —
unknown item, empty sensitive list, a threshold outside (0, 1], ``--max-variables``/
``--max-constraints``/``--max-itemsets`` below 1, a time limit that is not a positive number,
an unreadable file, an output directory that does not exist, more frequent itemsets than
``--max-itemsets`` — is one line ``ppdm: error: ...`` and exit status 2, with no output file.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from parties.cli.common import CLIError

__all__ = ["register", "format_report"]


def _fraction_arg(x: str, flag: str) -> str:
    from decimal import Decimal, InvalidOperation

    try:
        d = Decimal(x.strip())
    except (InvalidOperation, ValueError):
        raise CLIError(f"{flag} must be a number in (0, 1], got {x!r}") from None
    if not d.is_finite() or not (0 < d <= 1):
        raise CLIError(f"{flag} must be in (0, 1], got {x}")
    return x.strip()


def _check_paths(src: str, out: str) -> None:
    p = Path(src)
    if not p.exists():
        raise CLIError(f"cannot read {src}: no such file")
    if p.is_dir():
        raise CLIError(f"cannot read {src}: it is a directory")
    if not os.access(p, os.R_OK):
        raise CLIError(f"cannot read {src}: permission denied")
    o = Path(out)
    parent = o.parent if str(o.parent) else Path(".")
    if not parent.is_dir():
        raise CLIError(f"cannot write {out}: directory {parent} does not exist")
    if o.is_dir():
        raise CLIError(f"cannot write {out}: it is a directory")
    if o.exists() and o.resolve() == p.resolve():
        raise CLIError(f"-o {out} is the input file; the input is never overwritten, choose another path")


def _progress_fn(args):
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    if not show:
        return None
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.2f}s] {msg}", file=sys.stderr, flush=True)

    return say


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def format_report(rep: dict) -> str:
    """Human-readable summary of a hiding report (``HidingReport.to_dict()`` plus input/output)."""
    par = rep["parameters"]
    how = rep["algorithm"]
    if how == "heuristic":
        how += f" {par.get('strategy')}" + (f" (victim {par['victim']})" if par.get("victim") else "")
    elif how == "swa":
        how += f" (psi {par.get('psi')}, window {par.get('window'):,})"
    lines = [
        f"{rep['input']}: {rep['transactions']:,} transactions, min count {rep['min_count']:,}"
        + (f", min confidence {rep['min_confidence']}" if rep["min_confidence"] else "")
        + f"; {how} in {rep['seconds']:.2f} s",
        f"  {'sensitive pattern':<28}{'support before -> after':>26}{'mined after':>13}",
    ]
    for s in rep["sensitive"]:
        conf = ""
        if s["kind"] == "rule" and s["confidence_before"] is not None:
            ca = s["confidence_after"]
            conf = f"  conf {s['confidence_before']:.3f} -> {'n/a' if ca is None else f'{ca:.3f}'}"
        flag = "not mined" if not s["mined_before"] else ("YES" if s["mined_after"] else "no")
        lines.append(f"  {s['pattern']:<28}{s['support_before']:>12,} -> {s['support_after']:<11,}{flag:>13}{conf}")
    if rep.get("already_hidden"):
        lines.append(
            f"  {'already hidden':<22}{'; '.join(rep['already_hidden'])} (not mined from the input: data left alone)"
        )
    lines += [
        f"  {'hiding failure':<22}{rep['hiding_failure']:.4g} ({rep['sensitive_mined_after']} of "
        f"{rep['sensitive_mined_before']} still mined)",
        f"  {'misses cost':<22}{_pct(rep['misses_cost'])} ({rep['lost_itemsets']:,} of "
        f"{rep['nonsensitive_itemsets']:,} non-sensitive frequent itemsets lost)",
        f"  {'ghost itemsets':<22}{rep['ghost_itemsets']:,}",
    ]
    if rep.get("rules_before") is not None:
        lines.append(
            f"  {'rules':<22}{rep['lost_rules']:,} of {rep['nonsensitive_rules']:,} non-sensitive rules lost "
            f"({_pct(rep['misses_cost_rules'])}), {rep['ghost_rules']:,} ghost rule(s)"
        )
    lines += [
        f"  {'dissimilarity':<22}{rep['dissimilarity']:.6f}",
        f"  {'items removed':<22}{rep['items_removed']:,}"
        + (f", added {rep['items_added']:,}" if rep["items_added"] else "")
        + f" in {rep['transactions_modified']:,} transaction(s)",
    ]
    det = rep.get("details", {})
    if rep["algorithm"] == "exact" and "optimal" in det:
        lines.append(
            f"  {'integer program':<22}{det.get('variables', 0):,} variables, {det.get('constraints', 0):,} "
            f"constraints; {'optimal' if det['optimal'] else 'not proven optimal'} "
            f"(lower bound {det.get('lower_bound')} lost), solution from {det.get('source')}"
        )
    lines.append(f"  wrote {rep['output']}")
    return "\n".join(lines)


def _cmd(args) -> int:
    from anonymize.hiding import HidingError, hide, parse_sensitive, read_fimi, write_fimi

    ms = _fraction_arg(args.min_support, "--min-support")
    mc = _fraction_arg(args.min_confidence, "--min-confidence") if args.min_confidence is not None else None
    if args.algorithm != "heuristic" and (args.strategy or args.victim):
        raise CLIError("--strategy and --victim apply to --algorithm heuristic")
    if args.algorithm != "swa" and (args.psi is not None or args.window is not None):
        raise CLIError("--psi and --window apply to --algorithm swa")
    if args.algorithm != "exact" and (
        args.time_limit is not None or args.max_variables is not None or args.max_constraints is not None
    ):
        raise CLIError("--time-limit, --max-variables and --max-constraints apply to --algorithm exact")
    try:
        patterns = parse_sensitive(args.sensitive)
    except HidingError as e:
        raise CLIError(str(e)) from None
    kw: dict = {}
    if args.algorithm == "heuristic":
        kw.update(strategy=args.strategy, victim=args.victim)
    elif args.algorithm == "swa":
        kw.update(psi=_psi(args.psi) if args.psi is not None else "auto")
        if args.window is not None:
            kw.update(window=args.window)
    elif args.algorithm == "exact":
        if args.time_limit is not None:
            if not 0 < args.time_limit < float("inf"):
                raise CLIError(f"--time-limit must be a positive number of seconds, got {args.time_limit:g}")
            kw.update(time_limit=args.time_limit)
        for flag, v in (("--max-variables", args.max_variables), ("--max-constraints", args.max_constraints)):
            if v is not None and v < 1:
                raise CLIError(f"{flag} must be a positive integer, got {v}")
        if args.max_variables is not None:
            kw.update(max_variables=args.max_variables)
        if args.max_constraints is not None:
            kw.update(max_constraints=args.max_constraints)
    if args.max_itemsets is not None:
        if args.max_itemsets < 1:
            raise CLIError(f"--max-itemsets must be a positive integer, got {args.max_itemsets}")
        kw.update(max_itemsets=args.max_itemsets)
    _check_paths(args.file, args.output)
    try:
        db = read_fimi(args.file)
    except (OSError, UnicodeError) as e:
        raise CLIError(f"cannot read {args.file}: {getattr(e, 'strerror', None) or e}") from None
    except ValueError as e:
        raise CLIError(str(e)) from None
    try:
        sanitized, report = hide(
            db,
            patterns,
            ms,
            min_confidence=mc,
            algorithm=args.algorithm,
            seed=args.seed,
            progress=_progress_fn(args),
            **kw,
        )
        write_fimi(sanitized, args.output)
    except HidingError as e:  # includes InstanceTooLarge and a missing output directory
        raise CLIError(str(e)) from None
    except OSError as e:  # e.g. a directory we may not write into: nothing was written
        raise CLIError(f"cannot write {args.output}: {e.strerror or e}") from None
    rep = report.to_dict()
    rep["input"] = args.file
    rep["output"] = args.output
    if args.json:
        print(json.dumps(rep))
    else:
        print(format_report(rep))
    return 0


def _psi(x: str):
    if x == "auto":
        return x
    try:
        v = float(x)
        if v != v:
            raise ValueError
    except ValueError:
        raise CLIError(f"--psi must be 'auto' or a number in [0, 1], got {x!r}") from None
    if not (0 <= v <= 1):
        raise CLIError(f"--psi must be in [0, 1], got {x}")
    return x


def register(sub) -> None:
    """Add the ``hide-rules`` verb."""
    p = sub.add_parser(
        "hide-rules",
        help="sanitize a transaction file so sensitive itemsets/rules are no longer mined",
        description="Association-rule hiding: delete items so that the sensitive itemsets and rules are "
        "not mined at --min-support (and --min-confidence) while other patterns survive. Algorithms: "
        "heuristic (Verykios et al. 2004), swa (Oliveira & Zaiane 2003), border (Sun & Yu 2005), exact "
        "(integer program, Gkoulalas-Divanis & Verykios 2006, solved by HiGHS).",
    )
    p.add_argument("file", metavar="FILE.dat", help="transactions, FIMI format (never modified)")
    p.add_argument(
        "--sensitive", required=True, metavar="PATTERNS", help="itemsets separated by ';', a rule as 'X => Y'"
    )
    p.add_argument("--min-support", required=True, metavar="S", help="minimum support in (0, 1]")
    p.add_argument("--min-confidence", metavar="C", help="minimum confidence in (0, 1]: rules judged by it")
    p.add_argument("--algorithm", choices=["heuristic", "swa", "border", "exact"], default="heuristic")
    p.add_argument("-o", "--output", required=True, metavar="SANITIZED.dat", help="sanitized FIMI file (atomic)")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.add_argument("--strategy", choices=["1a", "1b", "2a", "2b", "2c"], help="heuristic: Verykios et al. strategy")
    p.add_argument(
        "--victim",
        choices=["min-side-effect", "max-support", "round-robin"],
        help="heuristic: which item of the pattern is deleted",
    )
    p.add_argument("--psi", help="swa: disclosure threshold in [0, 1], or 'auto' (largest that hides)")
    p.add_argument("--window", type=int, metavar="K", help="swa: transactions per window (default 10000)")
    p.add_argument("--time-limit", type=float, metavar="SECONDS", help="exact: solver time limit (default 60)")
    p.add_argument("--max-variables", type=int, metavar="N", help="exact: size guard on variables")
    p.add_argument("--max-constraints", type=int, metavar="N", help="exact: size guard on constraints")
    p.add_argument(
        "--max-itemsets",
        type=int,
        metavar="N",
        help="stop (error) when the input has more than N frequent itemsets (default 1000000)",
    )
    p.add_argument("--seed", type=int, help="seed of the tie-break among equal transactions (default: random)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None, help="progress on stderr")
    g.add_argument("--quiet", dest="progress", action="store_false", help="no progress")
    p.set_defaults(func=_cmd)
