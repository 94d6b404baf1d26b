"""The HTML report of a mining run: ``ppdm mine --report FILE.html`` (centralized, ``--local`` or ``--parties``).

One self-contained page (:class:`anonymize.reporting.Page`: inline CSS and SVG, no script, every
value escaped) from the result a job returned (:class:`.result.MiningResult`) and what the command
knew: its command line, parameters, data names and start time. A reader finds

* what was computed — the command, the parameters, the data each party read, when, how long;
* by whom — the analyst (the certificate's name for joint runs) and the parties, in protocol order;
* what each party learned — the result's ``revealed`` list, and with ε the privacy guarantee and the
  noise warning of :mod:`.noise`;
* timings and bytes per party — bytes sent, the job's own seconds at each party, network waits,
  peak memory, the protocol's phases, and per level the candidates and frequent itemsets;
* the result — itemsets by length, the most frequent itemsets and the most confident rules, with
  item names.

The itemsets and rules in full are the result (``ppdm mine -o``), not part of the page.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from anonymize.reporting import Page, bar_chart

__all__ = ["mining_page"]

TOP = 20


def _items(t: Sequence[Any]) -> str:
    return "{" + ", ".join(str(x) for x in t) + "}"


def mining_page(
    result: Mapping[str, Any],
    *,
    command: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    data: Sequence[str] = (),
    started: float | None = None,
    analyst: str | None = None,
    party_seconds: Mapping[str, float] | None = None,
) -> str:
    """The HTML page of the mining result ``result`` (module docstring).

    ``parameters``: the job's parameters as the analyst gave them; ``data``: the data names (files, tables,
    the parties' ``[data]`` key); ``started``: seconds since the epoch; ``analyst`` and ``party_seconds``
    default to those a :class:`.result.MiningResult` carries.
    """
    from parties.analyst.noise import noise_advice
    from parties.analyst.result import itemsets_frame, rules_frame

    proto = result.get("protocol", {})
    mode = proto.get("mode", "?")
    joint = mode != "centralized"
    parties = list(proto.get("parties") or [])
    analyst = analyst if analyst is not None else getattr(result, "analyst", None)
    seconds = dict(party_seconds if party_seconds is not None else getattr(result, "party_seconds", {}) or {})
    its, rules = itemsets_frame(result), rules_frame(result)
    title = f"ppdm mine: {'joint ' + mode if joint else 'centralized'} mining report"
    sub = f"{result.get('transactions', 0):,} transactions, {len(its):,} frequent itemsets, {len(rules):,} rules" + (
        f", {len(parties)} parties" if joint else ""
    )
    page = Page(title, sub)
    advice = noise_advice(result)
    if advice is not None and advice.noisy:
        page.warning("ε-DP: " + advice.message())

    page.heading("What was computed")
    when = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started)) if started is not None else None
    page.facts(
        [
            ("command", command),
            ("started", when),
            ("wall-clock seconds", proto.get("wall_seconds")),
            (
                "mode",
                {
                    "horizontal": "joint, horizontal split (same items, different transactions)",
                    "vertical": "joint, vertical split (same transactions, different items)",
                }.get(mode, mode),
            ),
            ("data", list(data) or None),
            ("transactions", result.get("transactions")),
            ("engine", proto.get("engine")),
        ]
    )
    if parameters:
        page.table(["parameter", "value"], [(k, v) for k, v in parameters.items() if v is not None])

    page.heading("By whom")
    if joint:
        page.facts(
            [
                ("analyst", analyst or "–"),
                ("parties (protocol order)", parties),
                ("reporting party", parties[0] if parties else None),
            ]
        )
        page.paragraph(
            "The analyst started the job on every party over mutually authenticated TLS; each party read its "
            "own data, and the parties computed the result together without pooling it."
        )
    else:
        page.paragraph("A centralized run in this process: no parties, nothing sent anywhere.")

    page.heading("What each party learned" if joint else "What was revealed")
    page.bullets(proto.get("revealed") or ["(the result does not say)"])
    dp = result.get("dp")
    if dp:
        _dp(page, dp, advice)

    if joint:
        _parties(page, proto, parties, seconds)
    _phases(page, proto)
    _levels(page, proto.get("levels") or [])
    _results(page, its, rules)
    meta = {k: v for k, v in result.items() if k not in ("itemsets", "rules")}
    page.raw_json("the result's protocol statistics (JSON; the itemsets and rules are in the result itself)", meta)
    return page.html(footer="ppdm mining report: self-contained HTML (inline CSS and SVG, no scripts).")


def _dp(page: Page, dp: Mapping[str, Any], advice) -> None:
    page.heading("Differential privacy", 3)
    ap = dp.get("against_parties") or {}
    page.facts(
        [
            ("ε of the job", dp.get("epsilon_exact", dp.get("epsilon"))),
            ("ε spent", dp.get("epsilon_spent")),
            ("neighbouring databases", dp.get("neighbouring")),
            ("mechanism", dp.get("mechanism")),
            ("ε-DP against coalitions of up to", f"{dp.get('colluders', 0)} parties (and the analyst)"),
            ("against one party more, ε at most", ap.get("one_more_party_epsilon_at_most")),
            ("support threshold on noisy counts", dp.get("threshold")),
            ("largest noise std of a count", None if advice is None else advice.noise_std),
            ("ε for noise below the threshold", None if advice is None else advice.suggested_epsilon),
        ]
    )
    levels = dp.get("levels") or []
    if levels:
        page.table(
            ["level", "candidates", "sensitivity", "ε", "noise std of a count"],
            [
                (lv.get("k"), lv.get("candidates"), lv.get("sensitivity"), lv.get("epsilon"), lv.get("noise_std"))
                for lv in levels
            ],
        )


def _parties(page: Page, proto: Mapping[str, Any], parties: list[str], seconds: Mapping[str, float]) -> None:
    sent = proto.get("bytes_sent") or {}
    if not isinstance(sent, dict):
        return
    waits = proto.get("network_waits") or {}
    rss = proto.get("peak_rss_bytes") or {}
    total = sum(v for v in sent.values() if isinstance(v, (int, float))) or 0
    page.heading("Timings and bytes per party")
    page.facts([("rounds", proto.get("rounds")), ("bytes on the wire, all parties", proto.get("bytes_total"))])
    page.table(
        ["party", "bytes sent", "share of bytes", "job seconds at the party", "network waits", "peak memory (MiB)"],
        [
            (
                p,
                sent.get(p),
                (sent.get(p) or 0) / total if total else None,
                seconds.get(p),
                waits.get(p),
                None if rss.get(p) is None else rss[p] / 2**20,
            )
            for p in parties
        ],
    )
    page.figure(
        bar_chart(parties, [("bytes sent", [sent.get(p) for p in parties])], title="bytes sent per party", unit="bytes")
    )
    if seconds:
        page.figure(
            bar_chart(
                parties, [("seconds", [seconds.get(p) for p in parties])], title="job seconds at each party", unit="s"
            ),
            "from each party's reply: the time its daemon spent on this job",
        )


def _phases(page: Page, proto: Mapping[str, Any]) -> None:
    ph = {k: v for k, v in (proto.get("phases_seconds") or {}).items() if isinstance(v, (int, float))}
    if not ph:
        return
    page.heading("Phases")
    page.figure(
        bar_chart(list(ph), [("seconds", list(ph.values()))], title="seconds per protocol phase", unit="s"),
        "as measured by the reporting party" if proto.get("mode") != "centralized" else None,
    )


def _levels(page: Page, levels: list) -> None:
    if not levels:
        return
    page.heading("Levels")
    cols = [c for c in ("candidates", "union", "frequent") if any(c in lv for lv in levels)]
    page.table(["itemset length", *cols], [(lv.get("k"), *(lv.get(c) for c in cols)) for lv in levels])
    page.figure(
        bar_chart(
            [f"length {lv.get('k')}" for lv in levels],
            [(c, [lv.get(c) for lv in levels]) for c in cols],
            title="candidates and frequent itemsets per level",
        )
    )


def _results(page: Page, its, rules) -> None:
    page.heading("Result")
    if len(its):
        by_len = its.groupby("length").size()
        page.figure(
            bar_chart(
                [f"length {k}" for k in by_len.index],
                [("itemsets", by_len.tolist())],
                title="frequent itemsets by length",
            )
        )
        known = its[its["support"].notna()]
        if len(known):
            top = known.sort_values(["support", "length"], ascending=[False, True], kind="stable").head(TOP)
            page.figure(
                bar_chart(
                    [_items(t) for t in top["items"]],
                    [("support", [float(v) for v in top["support_fraction"]])],
                    title=f"the {len(top)} most frequent itemsets (support as a share of transactions)",
                    max_value=1.0,
                )
            )
        else:
            page.paragraph("The job revealed which itemsets are frequent but no counts.")
    else:
        page.paragraph("No itemset reached the support threshold.")
    if len(rules):
        order = rules.assign(_c=rules["confidence"].fillna(0), _s=rules["support"].fillna(0))
        top = order.sort_values(["_c", "_s"], ascending=False, kind="stable").head(TOP)
        page.heading(f"The {len(top)} most confident of {len(rules):,} rules", 3)
        page.table(
            ["antecedent", "consequent", "support", "confidence", "lift"],
            [
                (_items(a), _items(c), _na(s), _na(cf), _na(lf))
                for a, c, s, cf, lf in zip(
                    top["antecedent"], top["consequent"], top["support"], top["confidence"], top["lift"]
                )
            ],
        )


def _na(v: Any) -> Any:
    """pandas' ``<NA>`` as None (shown as ``–``); numbers as Python numbers."""
    try:
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v.item() if hasattr(v, "item") else v
