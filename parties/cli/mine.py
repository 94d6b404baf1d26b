"""``ppdm mine``: frequent itemsets and association rules — centralized, or jointly between daemons.

* ``ppdm mine FILE.dat`` — mine the file locally (centralized).
* ``ppdm mine --local N --split horizontal|vertical FILE.dat`` — partition the
  file, start N local daemons with fresh certificates, mine jointly, compare
  nothing, shut them down. For trying the protocols on one machine.
* ``ppdm mine --parties ANALYST.toml --split horizontal|vertical`` — run the
  joint job on real daemons; each reads its own ``[data] transactions``.

``--json`` prints ``{"transactions", "itemsets": [{"items", "count"}], "rules":
[{"antecedent", "consequent", "support", "confidence"}], "protocol": {...}}``.

With ``--epsilon E`` (joint horizontal jobs) the whole job is ε-differentially private
(:mod:`parties.joint.dp_mining`): counts and decisions are noisy, the JSON gains a ``"dp"`` block
(ε, its split over N and the levels, the sensitivities, the expected errors), and each daemon
charges ε to the analyst's budget (:mod:`parties.dp_budget`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

from .common import CLIError

__all__ = ["register", "centralized_json", "load_analyst_config"]


def _check_support(x: str, what: str, allow_zero: bool = False) -> str:
    """Check a threshold the user gave (``0.3`` or ``1/3``: an exact rational, see :mod:`parties.ratio`).

    Returns it unchanged: every mode (centralized, ``--local``, ``--parties``)
    reads the same string exactly, so the threshold is ceil(minsup·N) everywhere.
    """
    from ..ratio import exact_ratio

    try:
        f = exact_ratio(x, what)
    except ValueError:
        raise CLIError(
            f"{what} must be a number in {'[0, 1]' if allow_zero else '(0, 1]'} (0.25 or 1/4), got {x!r}"
        ) from None
    if not ((0 <= f if allow_zero else 0 < f) and f <= 1):
        raise CLIError(f"{what} must be in {'[0, 1]' if allow_zero else '(0, 1]'}, got {x}")
    return x.strip()


def centralized_json(db, min_support: str, min_confidence: str | None) -> dict:
    """Mine ``db`` locally; the same JSON shape as the joint jobs. Thresholds as :func:`parties.ratio.exact_ratio`."""
    from anonymize.itemsets import association_rules, frequent_itemsets

    from ..ratio import exact_ratio

    t0 = time.perf_counter()
    fi = frequent_itemsets(db, exact_ratio(min_support, "min support"))
    t1 = time.perf_counter()
    rules = association_rules(fi, exact_ratio(min_confidence, "min confidence")) if min_confidence is not None else None
    t2 = time.perf_counter()
    return {
        "transactions": fi.n_transactions,
        "itemsets": [{"items": list(i), "count": int(c)} for i, c in fi],
        "rules": []
        if rules is None
        else [
            {
                "antecedent": list(r.antecedent),
                "consequent": list(r.consequent),
                "support": r.count,  # int and float already (AssociationRules columns .tolist())
                "confidence": r.confidence,
            }
            for r in rules
        ],
        "protocol": {
            "mode": "centralized",
            "phases_seconds": {"mine": round(t1 - t0, 6), "rules": round(t2 - t1, 6)},
            "rounds": 0,
            "bytes_sent": 0,
            "revealed": ["nothing leaves this process"],
        },
    }


def load_analyst_config(path: str | os.PathLike):
    """Read ``[analyst] cert, key, ca`` and ``[parties.NAME] address`` (order = protocol order)."""
    from ..config import PeerInfo
    from ..tls import load_credentials

    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except OSError as e:
        raise CLIError(f"cannot read {p}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise CLIError(f"{p} is not valid TOML: {e}") from None
    a = doc.get("analyst")
    parties = doc.get("parties")
    if not isinstance(a, dict) or not all(isinstance(a.get(k), str) for k in ("cert", "key", "ca")):
        raise CLIError(f"{p}: [analyst] needs cert, key and ca paths")
    if not isinstance(parties, dict) or len(parties) < 2:
        raise CLIError(f"{p}: list at least two [parties.NAME] tables with an address")
    peers = []
    for name, t in parties.items():
        if not isinstance(t, dict) or not isinstance(t.get("address"), str):
            raise CLIError(f'{p}: [parties.{name}] needs address = "HOST:PORT"')
        peers.append(PeerInfo(name=name, address=t["address"]))
    base = p.parent
    creds = load_credentials(base / a["cert"], base / a["key"], base / a["ca"])
    return peers, creds


class _LogFollower(threading.Thread):
    """Print a local daemon's progress lines ("level k: ...") while a job runs."""

    def __init__(self, cluster, name: str):
        super().__init__(daemon=True)
        self.cluster, self.name_, self.stop = cluster, name, threading.Event()
        self.seen = len(cluster.log(name))

    def run(self) -> None:
        while not self.stop.wait(0.25):
            self.flush()

    def flush(self) -> None:
        text = self.cluster.log(self.name_)
        new, self.seen = text[self.seen :], len(text)
        for line in new.splitlines():
            if " level " in line:
                print("  " + line.split(" level ", 1)[1].join(["level ", ""]), file=sys.stderr, flush=True)


def run_local(
    path: str,
    n: int,
    split: str,
    min_support: str,
    min_confidence: str | None,
    max_len: int | None = None,
    progress: bool = True,
    timeout: float = 3600,
    reveal_counts: bool = True,
    candidates: str = "union",
    counting: str = "auto",
    link_shape: tuple[float, float | None] | None = None,
    dp: dict | None = None,
) -> dict:
    """Partition ``path`` into ``n`` shares, start ``n`` local daemons, mine jointly; the analyst's JSON."""
    from ..joint.partition import load_transactions, save_npz, split_horizontal, split_vertical, write_fimi
    from ..local_cluster import LocalCluster

    db = load_transactions(path)
    if split == "vertical" and db.items.size < n:
        raise CLIError(f"cannot split {db.items.size} items over {n} parties vertically")
    with tempfile.TemporaryDirectory(prefix="ppdm-mine-") as d:
        data = {}
        shares = split_horizontal(db, n) if split == "horizontal" else split_vertical(db, n)
        for i, share in enumerate(shares):
            if split == "horizontal" and (share.indptr[1:] > share.indptr[:-1]).all() and share.n_transactions:
                f = Path(d) / f"p{i}.dat"
                write_fimi(share, f)
            else:
                f = Path(d) / f"p{i}.npz"
                save_npz(share, f)
            data[f"p{i}"] = {"transactions": str(f)}
        params = {"min_support": min_support, "min_confidence": min_confidence, "max_len": max_len}
        if split == "horizontal":
            params["n_items"] = int(db.items.max()) + 1 if db.items.size else 1
            params["reveal_counts"] = reveal_counts
            params["candidates"] = candidates
        else:
            params["counting"] = counting
        params.update(dp or {})
        if progress:
            print(
                f"starting {n} party daemons on loopback (mTLS, fresh certificates); "
                f"{split} split of {db.n_transactions} transactions",
                file=sys.stderr,
                flush=True,
            )
        # the analyst holds the whole file here, so the parties' default minimum of 3 for
        # sum-style jobs (parties.policy) protects nobody: allow --local 2
        # with --epsilon each daemon gets a budget of exactly that ε for the analyst
        budget = {"total_epsilon": str(dp["epsilon"])} if dp else None
        with LocalCluster(
            n, workdir=Path(d) / "cluster", data=data, link_shape=link_shape, policy={"min_parties": 2}, dp=budget
        ) as cluster:
            follower = _LogFollower(cluster, "p0") if progress else None
            if follower:
                follower.start()
            try:
                t0 = time.perf_counter()
                out = cluster.run_job(f"mine.{split}", params, timeout=timeout)
                wall = time.perf_counter() - t0
            finally:
                if follower:
                    follower.stop.set()
                    follower.join()
                    follower.flush()
    return _merge(out, split, wall)


def _merge(out: dict, split: str, wall: float) -> dict:
    """One result from the parties' replies: the reporting party's result, everyone's protocol stats."""
    reporter = next(v for v in out.values() if "itemsets" in v)
    proto = dict(reporter["protocol"])
    proto["mode"] = split
    proto["parties"] = list(out)
    proto["bytes_sent"] = {p: v["protocol"]["bytes_sent"] for p, v in out.items()}
    proto["bytes_total"] = sum(proto["bytes_sent"].values())
    proto["network_waits"] = {p: v.get("network", {}).get("waits", 0) for p, v in out.items()}
    proto["peak_rss_bytes"] = {p: v.get("peak_rss_bytes") for p, v in out.items()}  # each daemon, since its start
    proto["wall_seconds"] = round(wall, 6)
    out = {
        "transactions": reporter["transactions"],
        "itemsets": reporter["itemsets"],
        "rules": reporter["rules"],
        "protocol": proto,
    }
    if "dp" in reporter:
        out["dp"] = reporter["dp"]
    return out


def run_remote(
    config: str,
    split: str,
    min_support: str,
    min_confidence: str | None,
    n_items: int | None,
    max_len: int | None = None,
    timeout: float = 3600,
    reveal_counts: bool = True,
    candidates: str = "union",
    counting: str = "auto",
    dp: dict | None = None,
) -> dict:
    """Run the joint job on the daemons listed in an analyst config."""
    from ..client import run_job, run_sync

    peers, creds = load_analyst_config(config)
    params = {"min_support": min_support, "min_confidence": min_confidence, "max_len": max_len}
    if split == "horizontal":
        if n_items is None:
            raise CLIError("--n-items (the agreed item universe 0..N-1) is required for a horizontal job")
        params["n_items"] = n_items
        params["reveal_counts"] = reveal_counts
        params["candidates"] = candidates
    else:
        params["counting"] = counting
    params.update(dp or {})
    t0 = time.perf_counter()
    out = run_sync(run_job(peers, f"mine.{split}", params, creds=creds, timeout=timeout))
    return _merge(out, split, time.perf_counter() - t0)


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
    if not (args.parties or args.local):
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
    out: dict = {"epsilon": args.epsilon.strip(), "max_contributions": args.max_contributions}
    if args.colluders:
        out["colluders"] = args.colluders
    return out


def _cmd(args) -> int:
    dp = _dp_args(args)
    if args.candidates is None:
        args.candidates = "all" if dp else "union"
    ms = _check_support(args.min_support, "--min-support")
    mc = _check_support(args.min_confidence, "--min-confidence", allow_zero=True) if args.min_confidence else None
    if args.max_len is not None and args.max_len < 1:
        raise CLIError("--max-len must be at least 1")
    if args.output and not Path(args.output).resolve().parent.is_dir():
        raise CLIError(f"cannot write {args.output}: its directory does not exist")
    if args.candidates != "union" and args.split != "horizontal":
        raise CLIError("--candidates applies to joint horizontal jobs (--split horizontal)")
    if args.private_counts and args.split != "horizontal":
        raise CLIError("--private-counts applies to joint horizontal jobs (--split horizontal)")
    if args.parties and args.local:
        raise CLIError("give either --parties or --local, not both")
    if args.counting != "auto" and args.split != "vertical":
        raise CLIError("--counting applies to joint vertical jobs (--split vertical)")
    shape = None
    if args.rtt_ms is not None or args.mbit is not None:
        if not args.local:
            raise CLIError("--rtt-ms/--mbit emulate a WAN between local daemons: use them with --local")
        if (args.rtt_ms or 0) < 0 or (args.mbit is not None and args.mbit <= 0):
            raise CLIError("--rtt-ms must be >= 0 and --mbit > 0")
        shape = (args.rtt_ms or 0.0, args.mbit)
    if args.parties:
        if not args.split:
            raise CLIError("--split horizontal|vertical is required with --parties")
        if args.file:
            raise CLIError("with --parties each party reads its own data; give no FILE")
        res = run_remote(
            args.parties,
            args.split,
            ms,
            mc,
            args.n_items,
            args.max_len,
            reveal_counts=not args.private_counts,
            candidates=args.candidates,
            counting=args.counting,
            dp=dp,
        )
    else:
        if not args.file:
            raise CLIError("give a transactions FILE (.dat or .npz), or --parties ANALYST.toml")
        if not Path(args.file).is_file():
            raise CLIError(f"cannot read {args.file}: no such file")
        if args.local:
            if args.local < 2:
                raise CLIError("--local needs at least 2 parties")
            if not args.split:
                raise CLIError("--split horizontal|vertical is required with --local")
            res = run_local(
                args.file,
                args.local,
                args.split,
                ms,
                mc,
                args.max_len,
                progress=not args.json,
                reveal_counts=not args.private_counts,
                candidates=args.candidates,
                counting=args.counting,
                link_shape=shape,
                dp=dp,
            )
        else:
            from ..joint.partition import load_transactions

            try:
                db = load_transactions(args.file)
            except ValueError as e:
                raise CLIError(str(e)) from None
            res = centralized_json(db, ms, mc)
    text = json.dumps(res) if args.json else format_human(res)
    if args.output:
        from anonymize.publish.io import atomic_write_text

        atomic_write_text(args.output, json.dumps(res))
    print(text)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "mine",
        help="frequent itemsets and rules: centralized, or jointly between party daemons",
        description="Mine frequent itemsets and association rules. Without --parties/--local the "
        "file is mined locally; --local N starts N daemons on loopback and mines a "
        "horizontal or vertical split of the file jointly; --parties runs the joint "
        "job on real daemons.",
    )
    p.add_argument("file", nargs="?", help="transactions: FIMI .dat (or CSR .npz)")
    p.add_argument(
        "--min-support",
        default="0.1",
        help="minimum support in (0, 1], a decimal or a fraction like 1/3 (default 0.1); "
        "frequent iff count >= ceil(min_support * N), computed exactly",
    )
    p.add_argument("--min-confidence", help="also derive rules with at least this confidence")
    p.add_argument("--local", type=int, metavar="N", help="start N local party daemons and mine jointly")
    p.add_argument("--split", choices=["horizontal", "vertical"], help="how the data is partitioned")
    p.add_argument(
        "--parties",
        metavar="ANALYST.toml",
        help="analyst config: [analyst] cert/key/ca and [parties.NAME] address, in protocol order",
    )
    p.add_argument("--n-items", type=int, help="horizontal jobs on --parties: the item universe 0..N-1")
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
    p.add_argument("-o", "--output", help="also write the JSON result to this file (atomically)")
    p.set_defaults(func=_cmd)
