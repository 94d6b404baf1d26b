"""``ppdm dp``: one ε-differentially private answer, charged to a persisted budget.

``ppdm dp IN.csv --query '{"agg": "count", "where": …}' --epsilon E --budget BUDGET.json
[--total-epsilon T] [--json]`` — a thin layer over :mod:`anonymize.dp`: the query (JSON of
:mod:`anonymize.query`, with ``"lower"``/``"upper"`` bounds for sum and mean and a public domain
for histograms) is validated, the budget file is created if needed (``--total-epsilon`` required
then), and the answer is released only if the composed ε stays within the total.

``--json`` prints ``{"answer": …, "epsilon_spent": …, "epsilon_left": …, "mechanism": {…}}``
where ``epsilon_spent`` / ``epsilon_left`` are the budget's totals after this query.

Exit status: 0 answered; 2 bad input (one line, nothing spent, no budget file created);
3 refused because the budget would be exceeded (one line, nothing spent).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from parties.cli.common import CLIError

__all__ = ["register", "EXIT_BUDGET"]

EXIT_BUDGET = 3


def _cmd(args) -> int:
    from anonymize.dp import BudgetAccountant, BudgetExceeded, RandomSource, as_epsilon, prepare
    from anonymize.errors import AnonymizeError
    from anonymize.publish.io import read_table
    from anonymize.query import parse_query

    try:
        eps = as_epsilon(args.epsilon, "--epsilon")
        total = as_epsilon(args.total_epsilon, "--total-epsilon") if args.total_epsilon is not None else None
        q = parse_query(args.query)
        budget = Path(args.budget)
        if budget.is_dir():
            raise CLIError(f"--budget {budget} is a directory")
        if not budget.exists() and total is None:
            raise CLIError(f"budget file {budget} does not exist; give --total-epsilon to create it")
        if args.delta is not None and args.composition != "advanced":
            raise CLIError("--delta is only used with --composition advanced")
        df = read_table(args.input, sep=args.sep)
        eps, release = prepare(df, q, eps)  # every query/table error is raised here, before any spend
        if total is not None:
            acc = BudgetAccountant.create(budget, total, args.composition, args.delta, exist_ok=True)
        else:
            acc = BudgetAccountant(budget)
        try:
            ans, status = acc.spend(eps, lambda: release(RandomSource()), label=q.to_json())
        except BudgetExceeded as e:
            print(f"ppdm: error: {e}", file=sys.stderr)
            return EXIT_BUDGET
    except AnonymizeError as e:
        raise CLIError(str(e)) from None
    out = {
        "answer": ans.value,
        "epsilon_spent": status["epsilon_spent"],
        "epsilon_left": status["epsilon_left"],
        "epsilon": float(ans.epsilon),
        "mechanism": ans.mechanism,
    }
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    m = ans.mechanism
    noise = f"noise std {m['noise_std']:.4g}" if "noise_std" in m else "noisy sum / noisy count"
    if isinstance(ans.value, dict):
        print(f"{q.agg} of '{q.column}' (epsilon {float(eps):g} per query, {noise} per bin):")
        w = max(len(str(b)) for b in ans.value["bins"])
        for b, c in zip(ans.value["bins"], ans.value["counts"]):
            print(f"  {str(b):<{w}}  {c:>10,}")
    else:
        v = ans.value
        shown = f"{v:,}" if isinstance(v, int) else f"{v:.6g}"
        print(f"{q.agg}: {shown}  (epsilon {float(eps):g}, {noise})")
    print(
        f"budget {args.budget}: {status['epsilon_spent']:.6g} of {status['total_epsilon']:.6g} spent "
        f"({status['composition']} composition), {status['epsilon_left']:.6g} left"
    )
    return 0


def register(sub) -> None:
    """Add the ``dp`` verb."""
    p = sub.add_parser(
        "dp",
        help="answer one count/sum/mean/histogram query with differential privacy, charged to a budget file",
        description="Answer one aggregate query with epsilon-differential privacy: exact discrete Laplace "
        "noise (no floating-point side channel), explicit clamping bounds for sum and mean, a public domain "
        "for histograms; the budget file (created with --total-epsilon) refuses a query once epsilon would "
        f"be exceeded and then spends nothing (exit status {EXIT_BUDGET}).",
        epilog='Examples: --query \'{"agg": "count", "where": [["age", ">=", 40]]}\'  '
        '--query \'{"agg": "sum", "column": "hours", "lower": 0, "upper": 99}\'  '
        '--query \'{"agg": "histogram", "column": "age", "bins": 10, "lower": 0, "upper": 100}\'',
    )
    p.add_argument("input", metavar="IN", help="table: CSV (any of ; , TAB |) or Parquet")
    p.add_argument("--query", required=True, metavar="JSON", help="the query as JSON (see the examples)")
    p.add_argument("--epsilon", required=True, metavar="E", help="privacy cost of this query (e.g. 0.1)")
    p.add_argument("--budget", required=True, metavar="BUDGET.json", help="budget file (created if absent)")
    p.add_argument("--total-epsilon", metavar="T", help="total budget: required when the budget file is new")
    p.add_argument(
        "--composition", choices=["basic", "advanced"], default="basic", help="how a new budget composes queries"
    )
    p.add_argument("--delta", metavar="D", help="delta of advanced composition (new budgets only)")
    p.add_argument("--sep", default=None, help="input delimiter (default: sniffed)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd)
