"""The HTML report of a release: ``ppdm anonymize --report FILE.html`` and ``ppdm publish --report FILE.html``.

What a reader finds, from the release's JSON report (the one ``--report FILE.json`` writes) and the
released table's classes:

* what was computed — the command, algorithm, quasi-identifiers, sensitive attributes, privacy
  models, suppression, input and output, when; for ``publish`` also who the release is for (user,
  purpose, security level) and the owner's and user's requirements;
* the achieved privacy — k, classes, suppressed rows, and per sensitive attribute l (distinct and
  entropy), the recursive (c, l) bound and t (every distance); for bucketizations the groups and the
  largest posterior, for synthetic data the groups;
* the class-size distribution — records per class size, as released (:func:`release_classes`);
* information loss — NCP overall and per attribute, DM, CDM, average class size, query error;
* risks — prosecutor, journalist and marketer re-identification risks, and the share of records per
  disclosure probability of their class;
* for ``publish``, every release the policy engine evaluated, and the timings of each phase.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .html import Page, fmt
from .svg import bar_chart, histogram

__all__ = ["release_classes", "release_page"]

GENERALIZING = ("full-domain", "partition", "clustering")


def release_classes(
    result, qis: Sequence[str], sensitive: Sequence[str]
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(class sizes, disclosure probability per class)`` of an :class:`..publish.anonymizer.AnonymizationResult`.

    Generalized releases are measured as released (:func:`..publish.policy.measure.frame_classes`:
    identical written QI values form a class, the ``*`` class of suppressed rows included);
    bucketizations and synthetic data give their groups' sizes and no disclosure. ``(None, None)``
    when the release has no classes to show.
    """
    from ..publish.policy.measure import frame_classes

    df = getattr(result, "df", None)
    if result.kind in GENERALIZING and df is not None and all(c in df.columns for c in qis):
        sens = [s for s in sensitive if s in df.columns]
        sizes, disclosure = frame_classes(df, list(qis), sens)
        return sizes, (disclosure if sens else None)
    cid = getattr(result, "class_id", None)
    if cid is not None and len(cid):
        c = np.asarray(cid, dtype=np.int64)
        counts = np.bincount(c[c >= 0]) if (c >= 0).any() else np.zeros(0, np.int64)
        return counts[counts > 0], None
    return None, None


def _models(params: dict) -> str:
    out = []
    for m in params.get("models") or []:
        rest = {k: v for k, v in m.items() if k != "model" and v is not None}
        out.append(m.get("model", "?") + (" " + fmt(rest) if rest else ""))
    return "; ".join(out) or "–"


def release_page(
    report: dict,
    *,
    command: str | None = None,
    sizes: Sequence[int] | np.ndarray | None = None,
    disclosure: Sequence[float] | np.ndarray | None = None,
    started: float | None = None,
) -> str:
    """The HTML page of a release report (``ppdm anonymize``'s, or ``ppdm publish``'s with its ``decision``).

    ``sizes``/``disclosure``: the released classes (:func:`release_classes`); ``started``: the run's start
    (seconds since the epoch); ``command``: the command line as typed.
    """
    publish = "decision" in report
    rel = report.get("release", report) if publish else report
    params = rel.get("parameters", {})
    m = rel.get("metrics", {})
    title = "ppdm publish: release report" if publish else "ppdm anonymize: release report"
    sub = f"{rel.get('algorithm', '?')} ({rel.get('kind', '?')}) on {report.get('input', '?')}"
    page = Page(title, sub)
    when = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started)) if started is not None else None

    page.heading("What was computed")
    page.facts(
        [
            ("command", command),
            ("started", when),
            ("input", report.get("input")),
            ("release written to", report.get("output")),
            ("other tables", ", ".join(f"{k}: {v}" for k, v in (rel.get("outputs") or {}).items()) or None),
            ("algorithm", f"{rel.get('algorithm')} ({rel.get('kind')})"),
            ("quasi-identifiers", params.get("quasi_identifiers")),
            ("sensitive attributes", params.get("sensitive") or "none"),
            ("identifiers dropped", params.get("identifiers_dropped") or "none"),
            ("privacy models", _models(params)),
            ("largest suppression allowed", params.get("max_suppression")),
            ("suppressed rows are", params.get("suppressed_rows")),
            ("generalization levels", rel.get("levels")),
            ("row order", report.get("row_order") or rel.get("row_order")),
        ]
    )
    if publish:
        _decision(page, report)
    else:
        page.heading("By whom, for whom")
        page.paragraph(
            "Computed on this machine by the data owner: the input stays here; what leaves is the release "
            "written above (and this report)."
        )

    _achieved(page, rel)
    _classes(page, m, sizes, params)
    _loss(page, m)
    _risks(page, m, sizes, disclosure)
    _timings(page, rel.get("timings") or {})
    page.raw_json("the JSON report this page was made from", report)
    return page.html(footer="ppdm release report: self-contained HTML (inline CSS and SVG, no scripts).")


def _decision(page: Page, report: dict) -> None:
    d = report["decision"]
    lv = d.get("level") or {}
    req = d.get("requirements") or {}
    priv, qual = req.get("privacy") or {}, req.get("quality") or {}
    page.heading("By whom, for whom")
    page.facts(
        [
            ("released by", "the data owner, on this machine (the input stays here)"),
            ("policy", report.get("policy")),
            ("data user", d.get("user")),
            ("purpose", d.get("purpose")),
            ("security level", f"{lv.get('name')}: {lv.get('description') or ''}".rstrip(": ")),
            ("level's method", f"{lv.get('model')} {fmt(lv.get('parameters') or {})} ({lv.get('algorithm')})"),
            ("owner's requirement", f"disclosure probability ≤ {fmt(priv.get('pmax'))}"),
            (
                "user's requirement",
                f"{str(qual.get('metric', '')).upper()} ≤ {fmt(qual.get('bound'))}" if qual else "none",
            ),
        ]
    )
    ch = d.get("chosen") or {}
    meas = report.get("measured") or {}
    if ch:
        page.success(
            f"chosen: {ch.get('model')} {fmt(ch.get('parameters') or {})} ({ch.get('algorithm')}); measured on the "
            f"release as written: disclosure {fmt(meas.get('disclosure'))}, NCP {fmt(meas.get('ncp'))}, "
            f"k {fmt(meas.get('k'))}"
        )
    steps = d.get("steps") or []
    if steps:
        page.heading("Releases the policy engine evaluated", 3)
        page.table(
            ["#", "phase", "method", "parameters", "found", "NCP", "disclosure", "privacy ok", "quality ok"],
            [
                (
                    i + 1,
                    s.get("phase"),
                    f"{s.get('model')} ({s.get('algorithm')})",
                    fmt(s.get("parameters") or {}),
                    s.get("ok"),
                    s.get("ncp"),
                    s.get("disclosure"),
                    s.get("privacy_ok"),
                    s.get("quality_ok"),
                )
                for i, s in enumerate(steps)
            ],
        )
        labels = [f"{i + 1}. {s.get('model')} {fmt(s.get('parameters') or {})}" for i, s in enumerate(steps)]
        page.figure(
            bar_chart(
                labels,
                [
                    ("NCP (information loss)", [_num(s.get("ncp")) for s in steps]),
                    ("disclosure probability", [_num(s.get("disclosure")) for s in steps]),
                ],
                title="each evaluated release: information loss and disclosure",
                max_value=1.0,
            ),
            f"owner's bound on disclosure: {fmt(priv.get('pmax'))}"
            + (f"; user's bound on {qual.get('metric')}: {fmt(qual.get('bound'))}" if qual else ""),
        )


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _achieved(page: Page, rel: dict) -> None:
    m = rel.get("metrics", {})
    a = m.get("achieved") or {}
    page.heading("Privacy achieved")
    rows: list[tuple[str, Any]] = [
        ("k (smallest class)", a.get("k")),
        ("classes as released (the suppressed * group counts as one)", a.get("classes")),
        ("groups", a.get("groups")),
        ("l required", a.get("l_required")),
        ("rows", m.get("rows")),
        ("published rows", m.get("published_rows")),
        ("synthetic rows", m.get("synthetic_rows")),
        ("suppressed rows", m.get("suppressed_rows")),
        ("suppressed share", m.get("suppressed_fraction")),
    ]
    page.facts(rows)
    sens = a.get("sensitive_attributes") or {}
    if sens:
        dists = sorted({d for v in sens.values() for d in (v.get("t") or {})})
        header = ["sensitive attribute", "l (distinct)", "l (entropy)", "recursive c bound"]
        extra = ["largest posterior"] if any("max_posterior" in v for v in sens.values()) else []
        page.table(
            header + extra + [f"t ({d})" for d in dists],
            [
                [name, v.get("l_distinct"), v.get("l_entropy"), v.get("recursive_c_bound")]
                + ([v.get("max_posterior")] if extra else [])
                + [(v.get("t") or {}).get(d) for d in dists]
                for name, v in sens.items()
            ],
        )


def _classes(page: Page, m: dict, sizes, params: dict) -> None:
    page.heading("Class sizes")
    c = m.get("classes") or {}
    page.facts(
        [
            ("classes (suppressed rows not counted)", c.get("classes")),
            ("smallest", c.get("min")),
            ("median", c.get("median")),
            ("mean", c.get("mean")),
            ("largest", c.get("max")),
            ("average class size / k (C_avg)", m.get("c_avg")),
        ]
    )
    if sizes is None or not len(sizes):
        page.paragraph("The distribution is not drawn: the release's rows were not in this process (engine run).")
        return
    s = np.asarray(sizes, dtype=np.int64)
    s = s[s > 0]
    labels, totals = histogram(s.tolist(), s.tolist(), bins=14)
    page.figure(
        bar_chart(labels, [("records", totals)], title="records by the size of their class", unit="records"),
        f"{len(s):,} classes as released, {int(s.sum()):,} records; a class of 500 counts 500 times, so the "
        "chart shows what share of the data sits in small classes",
    )


def _loss(page: Page, m: dict) -> None:
    ncp = m.get("ncp") or {}
    il = m.get("il_total") or {}
    q = m.get("query_error") or {}
    cov = m.get("covariance") or {}
    rows = [
        ("NCP (normalized certainty penalty, 0 = exact)", ncp.get("ncp")),
        ("NCP over hierarchy leaves", m.get("ncp_leaves")),
        ("average information loss per record", il.get("average_il")),
        ("discernibility DM", m.get("dm")),
        ("CDM", m.get("cdm")),
        ("query error: mean relative", q.get("mean_relative_error")),
        ("query error: median relative", q.get("median_relative_error")),
        ("queries", q.get("n_queries")),
        ("covariance error (relative Frobenius)", cov.get("covariance_relative_frobenius_error")),
    ]
    if not any(v is not None for _, v in rows):
        return
    page.heading("Information loss")
    page.facts(rows)
    per = ncp.get("per_attribute") or {}
    if per:
        page.figure(
            bar_chart(
                list(per), [("NCP", [_num(v) for v in per.values()])], title="NCP per quasi-identifier", max_value=1.0
            ),
            "0: values published exactly; 1: fully generalized or suppressed",
        )
    if m.get("cdm_definition"):
        page.paragraph("CDM: " + str(m["cdm_definition"]))


def _risks(page: Page, m: dict, sizes, disclosure) -> None:
    r = m.get("risk") or {}
    if not r and disclosure is None:
        return
    page.heading("Risks")
    if r:
        names = [
            ("prosecutor, largest", "prosecutor_max"),
            ("prosecutor, average", "prosecutor_avg"),
            ("journalist, largest", "journalist_max"),
            ("journalist, average", "journalist_avg"),
            ("marketer", "marketer"),
        ]
        shown = [(label, _num(r.get(key))) for label, key in names if key in r]
        page.figure(
            bar_chart(
                [x for x, _ in shown],
                [("re-identification risk", [v for _, v in shown])],
                title="re-identification risk",
                max_value=1.0,
            ),
            "the probability that an attacker who knows a person's quasi-identifiers picks her record "
            "(prosecutor: knows she is in the release; journalist: matches against the population; marketer: "
            "share of records re-identified on average)",
        )
        page.facts([("records in classes of one", r.get("records_in_unique_classes"))])
    if disclosure is not None and sizes is not None and len(sizes):
        s = np.asarray(sizes, dtype=np.float64)
        d = np.asarray(disclosure, dtype=np.float64)
        keep = s > 0
        labels, totals = histogram(
            d[keep].tolist(), (s[keep] / s[keep].sum()).tolist(), bins=10, integer=False, span=(0.0, 1.0)
        )
        page.figure(
            bar_chart(
                labels,
                [("share of records", totals)],
                title="records by the disclosure probability of their class",
                max_value=1.0,
            ),
            f"disclosure probability of a class: the largest share of one sensitive value in it (an attacker's "
            f"chance of guessing the value of someone she links to the class); largest: {fmt(float(d.max()))}",
        )


def _timings(page: Page, t: dict) -> None:
    phases = {k: v for k, v in t.items() if k != "total" and isinstance(v, (int, float))}
    if not phases:
        return
    page.heading("Timings")
    page.facts([("total seconds", t.get("total"))])
    page.figure(bar_chart(list(phases), [("seconds", list(phases.values()))], title="seconds per phase", unit="s"))
