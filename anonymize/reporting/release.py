"""The HTML report of a release: ``ppdm anonymize --report FILE.html`` and ``ppdm publish --report FILE.html``.

What a reader finds, from the release's JSON report (the one ``--report FILE.json`` writes) and the
released table's classes:

* what was computed — the command, algorithm, quasi-identifiers, sensitive attributes, privacy
  models, suppression, input and output, when; for ``publish`` also who the release is for (user,
  purpose, security level) and the owner's and user's requirements;
* the achieved privacy — every privacy model the release was asked for with what it requires, what the
  release achieves and whether it holds (:func:`model_rows`: k-anonymity, the l-diversities, t-closeness,
  β-likeness, δ-disclosure, (α, k)-anonymity, δ-presence, k-map, average risk, sample and population
  uniqueness); k, classes, suppressed rows, and per sensitive attribute l (distinct and entropy), the
  recursive (c, l) bound, t (every distance), β, δ-disclosure and α; with ``--suppressed-rows arx`` what
  the ``*`` group of suppressed rows breaks; for bucketizations the groups and the largest posterior, for
  synthetic data the groups;
* the class-size distribution — records per class size, as released (:func:`release_classes`);

Every count of classes says whether the ``*`` group of suppressed rows is one of them (:func:`star_rows`):
the JSON report counts it in some figures and not in others (``achieved`` counts it with ``--suppressed-rows
star``, not with ``arx``; ``classes`` and ``risk`` never do), so the same release shows, e.g., 53 classes in
one table and 52 in another, and the labels say why.
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

from ..errors import AnonymizeError
from .html import Page, fmt
from .svg import bar_chart, histogram

__all__ = ["model_rows", "release_classes", "release_page", "star_rows"]

GENERALIZING = ("full-domain", "partition", "clustering")
STAR_MODES = ("star", "arx")
"""``suppressed_rows`` values that write the suppressed rows as one all-``*`` group."""
MODEL_HEADER = ["model", "attribute", "measure", "required", "achieved", "holds"]
"""The columns of the table of privacy models (:func:`model_rows`)."""
TOL = 1e-9
"""The tolerance of the models' own checks (:mod:`anonymize.publish.models_sensitive`)."""


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

    _achieved(page, rel, sizes)
    _classes(page, rel, m, sizes, params)
    _loss(page, m)
    _risks(page, rel, m, sizes, disclosure)
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


def star_rows(rel: dict) -> int:
    """Rows of the release ``rel`` (a report's, or a ``publish`` report's ``release``) written as the one
    all-``*`` group of suppressed rows: the suppressed rows of a generalizing release with
    ``suppressed_rows`` ``star`` or ``arx``; 0 when the file has no such group (nothing suppressed,
    suppressed rows left out with ``drop``, a bucketization or synthetic data)."""
    params = rel.get("parameters") or {}
    if rel.get("kind") not in GENERALIZING or params.get("suppressed_rows") not in STAR_MODES:
        return 0
    n = (rel.get("metrics") or {}).get("suppressed_rows")
    return int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) and n > 0 else 0


def _star_note(rel: dict, counted: bool) -> str:
    """How a count of classes of ``rel`` treats the ``*`` group: ``counted`` — whether the figure includes
    it (when the file has one)."""
    star = star_rows(rel)
    if star:
        return f"* group of {star:,} rows {'counted as one class' if counted else 'not counted'}"
    return "no * group in the file"


def _star_fact(rel: dict) -> str | None:
    """The ``*`` group in words (None for a bucketization or synthetic data)."""
    if rel.get("kind") not in GENERALIZING:
        return None
    star = star_rows(rel)
    if star:
        return f"{star:,} suppressed rows, written with * in every quasi-identifier as one group"
    n = (rel.get("metrics") or {}).get("suppressed_rows")
    if n:
        return f"none: the {fmt(n)} suppressed rows are left out of the file"
    return "none: no row suppressed"


def _achieved_counts_star(rel: dict) -> bool:
    """Whether the report's ``achieved`` (k, classes, l, t, β, δ, α) measured the ``*`` group as a class:
    with ``suppressed_rows='star'`` it did (the group must meet every model); with ``'arx'`` it did not
    (ARX's outliers: the group is described by ``suppressed_group``)."""
    return (rel.get("parameters") or {}).get("suppressed_rows") == "star"


def _arx_sizes(rel: dict, sizes: Sequence[int] | np.ndarray | None) -> np.ndarray | None:
    """The class sizes the table-level models were judged on: the written file's (``sizes``, the ``*``
    group included), without the ``*`` group under ARX's semantics (the search judges the other classes
    only). Only the multiset of sizes matters, so one class of the group's size is left out."""
    if sizes is None or not len(sizes):
        return None
    s = np.asarray(sizes, dtype=np.int64)
    s = s[s > 0]
    star = star_rows(rel)
    if star and (rel.get("parameters") or {}).get("suppressed_rows") == "arx":
        hit = np.flatnonzero(s == star)
        if len(hit):
            s = np.delete(s, hit[0])
    return s


def _ge(value: Any, bound: float) -> bool | None:
    """``value ≥ bound`` within the models' tolerance; None when ``value`` is not a number."""
    v = _num(value)
    return None if v is None else v >= bound - TOL


def _le(value: Any, bound: float) -> bool | None:
    """``value ≤ bound`` within the models' tolerance; None when ``value`` is not a number."""
    v = _num(value)
    return None if v is None else v <= bound + TOL


def _table_model(d: dict):
    """The table-level model :mod:`anonymize.publish.models_population` builds from its description ``d``."""
    from ..publish.models_population import AverageRisk, PopulationUniqueness, SampleUniqueness

    name = d.get("model")
    if name == "average-risk":
        return AverageRisk(d["threshold"])
    if name == "sample-uniqueness":
        return SampleUniqueness(d["threshold"])
    return PopulationUniqueness(d["threshold"], d.get("estimator", "dankar"), d.get("population_size"))


NOT_IN_REPORT = "not measured (the JSON report has no per-class population counts)"
"""The achieved cell of δ-presence / k-map with a population table when the report does not carry them."""


def model_rows(rel: dict, sizes: Sequence[int] | np.ndarray | None = None) -> list[list[Any]]:
    """One row per privacy model of the release ``rel`` and per quantity it bounds (columns
    :data:`MODEL_HEADER`): the model's name (as the JSON report's ``parameters.models`` says), the
    sensitive attribute, the measure, the requirement, the achieved value and whether it holds (None:
    not measured).

    Achieved values come from the report's ``metrics.achieved`` — ``k``; per sensitive attribute
    ``l_distinct``, ``l_entropy``, ``recursive_c_bound``, ``t`` (by distance), ``beta_basic``,
    ``beta_enhanced``, ``delta_disclosure``, ``alpha``; and, when a report carries them, ``k_map`` and
    ``delta_presence`` (``[smallest, largest]``, as ``ppdm check`` names them). The table-level models
    (average risk, sample and population uniqueness) are measured here on ``sizes``, the written file's
    class sizes (:func:`release_classes`), as the search judged them (the ``*`` group left out under ARX's
    semantics). A sensitive model without an attribute bounds every sensitive attribute: one row each.
    """
    params = rel.get("parameters") or {}
    a = (rel.get("metrics") or {}).get("achieved") or {}
    sens = a.get("sensitive_attributes") or {}
    attributes = list(sens) or list(params.get("sensitive") or []) or ["–"]
    rows: list[list[Any]] = []
    for d in params.get("models") or []:
        name = str(d.get("model", "?"))
        try:
            rows += _rows_of(name, d, a, sens, attributes, rel, sizes)
        except (KeyError, TypeError, ValueError, AnonymizeError):  # a report this page cannot read: say so
            rows.append([name, "", "–", fmt({k: v for k, v in d.items() if k != "model"}), "not measured", None])
    return rows


def _rows_of(
    name: str, d: dict, a: dict, sens: dict, attributes: list[str], rel: dict, sizes: Sequence[int] | np.ndarray | None
) -> list[list[Any]]:
    """The rows of :func:`model_rows` for the model ``d`` named ``name``."""
    if name in SENSITIVE_MODELS:
        rows: list[list[Any]] = []
        for attr in [d["attribute"]] if d.get("attribute") else attributes:
            rows += [[name, attr, *r] for r in _sensitive_rows(name, d, sens.get(attr) or {})]
        if name == "alpha-k-anonymity":
            rows.append([name, "", "k (smallest class)", f"≥ {fmt(d.get('k'))}", a.get("k"), _ge(a.get("k"), d["k"])])
        return rows
    if name in TABLE_MODELS:
        return [[name, "", *_table_row(name, d, _arx_sizes(rel, sizes))]]
    return [[name, "", *r] for r in _class_rows(name, d, a)]


SENSITIVE_MODELS = (
    "distinct-l-diversity",
    "entropy-l-diversity",
    "recursive-cl-diversity",
    "t-closeness",
    "beta-likeness",
    "delta-disclosure",
    "alpha-k-anonymity",
)
"""Models measured per sensitive attribute (``metrics.achieved.sensitive_attributes``)."""
TABLE_MODELS = ("average-risk", "sample-uniqueness", "population-uniqueness")
"""Table-level models, measured on the released class sizes."""


def _sensitive_rows(name: str, d: dict, s: dict) -> list[list[Any]]:
    """``[measure, required, achieved, holds]`` rows of the sensitive model ``d`` on one attribute, whose
    achieved figures are ``s`` (one entry of ``metrics.achieved.sensitive_attributes``)."""
    if name in ("distinct-l-diversity", "entropy-l-diversity"):
        key, what = ("l_distinct", "distinct l") if name.startswith("distinct") else ("l_entropy", "entropy l")
        return [[what, f"≥ {fmt(d.get('l'))}", s.get(key), _ge(s.get(key), d["l"])]]
    if name == "recursive-cl-diversity":
        c, lr = float(d["c"]), d["l"]
        ld, cb = s.get("l_distinct"), _num(s.get("recursive_c_bound"))
        # every class is (c, l)-diverse for every c above the bound at l = distinct l ≥ l
        holds = None if cb is None else (True if cb < c else (False if ld == lr else None))
        return [
            ["distinct l", f"≥ {fmt(lr)}", ld, _ge(ld, lr)],
            ["c bound at l = distinct l", f"< {fmt(c)}", cb, holds],
        ]
    if name == "t-closeness":
        dist, ground = d.get("distance", "emd"), d.get("ground")
        key = f"emd_{ground}" if dist == "emd" and ground else dist
        v = (s.get("t") or {}).get(key)
        return [[f"t ({key})", f"≤ {fmt(d.get('t'))}", v, _le(v, d["t"])]]
    if name == "beta-likeness":
        key = f"beta_{d.get('variant', 'enhanced')}"
        v, req = s.get(key), f"≤ {fmt(d.get('beta'))}"
        if v is None and key in s:
            return [[f"β ({d.get('variant')})", req, "none: some gain exceeds its cap −ln p, so no β holds", False]]
        return [[f"β ({d.get('variant')})", req, v, _le(v, d["beta"])]]
    if name == "delta-disclosure":
        v, req = s.get("delta_disclosure"), f"< {fmt(d.get('delta'))}"
        if v is None and "delta_disclosure" in s:
            return [
                ["δ (max |ln q/p|)", req, "none: a value of the table is missing from some class, so no δ holds", False]
            ]
        dv = _num(v)
        return [["δ (max |ln q/p|)", req, v, None if dv is None else dv < float(d["delta"])]]
    # alpha-k-anonymity: the α part (its k part is a row of its own)
    v = s.get("alpha")
    return [["α (largest share of a value)", f"≤ {fmt(d.get('alpha'))}", v, _le(v, d["alpha"])]]


def _table_row(name: str, d: dict, sizes: np.ndarray | None) -> list[Any]:
    """``[measure, required, achieved, holds]`` of the table-level model ``d`` on the class ``sizes``."""
    what = {
        "average-risk": "average risk (classes / rows)",
        "sample-uniqueness": "sample uniques (share of rows in classes of one)",
        "population-uniqueness": f"population uniques ({d.get('estimator')}, N = {fmt(d.get('population_size'))})",
    }[name]
    req = f"≤ {fmt(d.get('threshold'))}"
    if sizes is None or not len(sizes):
        return [what, req, "not measured (no rows in this process)", None]
    v = _table_model(d).value(sizes)
    if v is None:
        return [what, req, "none: the estimate failed and the release has sample uniques", False]
    return [what, req, v, v <= float(d["threshold"]) + 1e-12]


def _class_rows(name: str, d: dict, a: dict) -> list[list[Any]]:
    """``[measure, required, achieved, holds]`` rows of a model of class sizes or population counts
    (k-anonymity, δ-presence, k-map), from ``metrics.achieved`` ``a``; a model this page does not know
    gets its parameters and nothing measured."""
    k = a.get("k")
    pop = f" (population of {fmt(d.get('population_rows'))} rows)" if d.get("population_rows") else ""
    if name == "k-anonymity":
        return [["k (smallest class)", f"≥ {fmt(d.get('k'))}", k, _ge(k, d["k"])]]
    if name == "delta-presence":
        dp = a.get("delta_presence")
        lo, hi = (dp[0], dp[1]) if isinstance(dp, (list, tuple)) and len(dp) == 2 else (None, None)
        return [
            [
                "δ, smallest class" + pop,
                f"≥ {fmt(d.get('dmin'))}",
                NOT_IN_REPORT if dp is None else lo,
                _ge(lo, d["dmin"]),
            ],
            [
                "δ, largest class" + pop,
                f"≤ {fmt(d.get('dmax'))}",
                NOT_IN_REPORT if dp is None else hi,
                _le(hi, d["dmax"]),
            ],
        ]
    if name == "k-map" and d.get("derived_k") is not None:  # estimated k-map: k'-anonymity
        kp = d["derived_k"]
        est = f"k' from k = {fmt(d.get('k'))}, {d.get('estimator')}, N = {fmt(d.get('population_size'))}"
        return [[f"k (smallest class; {est})", f"≥ {fmt(kp)}", k, _ge(k, kp)]]
    if name == "k-map":
        v = a.get("k_map")
        return [["population rows of the smallest match" + pop, f"≥ {fmt(d.get('k'))}",
                 NOT_IN_REPORT if v is None else v, _ge(v, d["k"])]]  # fmt: skip
    rest = {key: v for key, v in d.items() if key not in ("model", "attribute") and v is not None}
    return [["–", fmt(rest) or "–", "not measured", None]]


def _achieved(page: Page, rel: dict, sizes) -> None:
    """The "Privacy achieved" section: k, classes and rows; every model with its requirement and achieved
    value (:func:`model_rows`); the per-attribute figures; the ``*`` group's verdicts under ARX's semantics."""
    m = rel.get("metrics", {})
    a = m.get("achieved") or {}
    bucket = rel.get("kind") not in GENERALIZING
    counted = _achieved_counts_star(rel)
    page.heading("Privacy achieved")
    rows: list[tuple[str, Any]] = [
        (f"k (smallest class; {_star_note(rel, counted)})", a.get("k")),
        ("classes" if bucket else f"classes ({_star_note(rel, counted)})", a.get("classes")),
        ("groups", a.get("groups")),
        ("l required", a.get("l_required")),
        ("rows", m.get("rows")),
        ("published rows", m.get("published_rows")),
        ("synthetic rows", m.get("synthetic_rows")),
        ("suppressed rows", m.get("suppressed_rows")),
        ("suppressed share", m.get("suppressed_fraction")),
        ("* group", _star_fact(rel)),
    ]
    page.facts(rows)
    models = model_rows(rel, sizes)
    if models:
        page.heading("Privacy models: required and achieved", 3)
        page.table(
            MODEL_HEADER,
            models,
            caption=_models_caption(rel, counted),
        )
        broken = sorted({str(r[0]) for r in models if r[5] is False})
        if broken:
            page.warning(f"not met on the release as measured: {', '.join(broken)}")
        elif all(r[5] is True for r in models):
            page.success("every privacy model asked for holds on the release as measured")
    sens = a.get("sensitive_attributes") or {}
    if sens:
        dists = sorted({d for v in sens.values() for d in (v.get("t") or {})})
        header = ["sensitive attribute", "l (distinct)", "l (entropy)", "recursive c bound"]
        extra = ["largest posterior"] if any("max_posterior" in v for v in sens.values()) else []
        more = [(k, h) for k, h in SENSITIVE_MORE if any(k in v for v in sens.values())]
        over = f"over the {_measured_on(rel, counted)}"
        page.table(
            header + extra + [h for _, h in more],
            [
                [name, v.get("l_distinct"), v.get("l_entropy"), v.get("recursive_c_bound")]
                + ([v.get("max_posterior")] if extra else [])
                + [("none" if k in v and v[k] is None else v.get(k)) for k, _ in more]
                for name, v in sens.items()
            ],
            caption=f"per sensitive attribute, {over}" + ("; none: no β (enhanced) or no δ holds" if more else ""),
        )
        if dists:
            page.table(
                ["sensitive attribute"] + [f"t ({d})" for d in dists],
                [[name] + [(v.get("t") or {}).get(d) for d in dists] for name, v in sens.items()],
                caption=f"t-closeness: the largest distance of a class to the table, per distance, {over}",
            )
    _suppressed_group(page, m.get("suppressed_group"))


def _measured_on(rel: dict, counted: bool) -> str:
    """What the achieved figures were measured on, in words: the groups of a bucketization or synthetic
    data, else the classes as written and whether the ``*`` group is one of them."""
    if rel.get("kind") not in GENERALIZING:
        return "groups (rows not published are in none)"
    return f"classes as written ({_star_note(rel, counted)})"


def _models_caption(rel: dict, counted: bool) -> str:
    """What the table of privacy models was measured on."""
    parts = [f"measured on the {_measured_on(rel, counted)}"]
    names = {str(d.get("model")) for d in (rel.get("parameters") or {}).get("models") or []}
    if names & set(TABLE_MODELS):
        parts.append(f"risk and uniques over the classes as written ({_star_note(rel, not _is_arx(rel))})")
    if _is_arx(rel) and star_rows(rel):
        parts.append("the * group is not held to the models under ARX's semantics (below)")
    return "; ".join(parts) + "; holds –: not measured"


SENSITIVE_MORE = [
    ("beta_basic", "β (basic)"),
    ("beta_enhanced", "β (enhanced)"),
    ("delta_disclosure", "δ-disclosure"),
    ("alpha", "α"),
]
"""Columns of the per-attribute table beyond l and t: ``metrics.achieved.sensitive_attributes`` keys."""


def _is_arx(rel: dict) -> bool:
    """The suppressed rows were released with ARX's outlier semantics (``--suppressed-rows arx``)."""
    return (rel.get("parameters") or {}).get("suppressed_rows") == "arx"


def _suppressed_group(page: Page, g: dict | None) -> None:
    """``metrics.suppressed_group`` (``--suppressed-rows arx``): what the ``*`` group breaks, model by model."""
    if not g:
        return
    rows = int(g.get("rows") or 0)
    page.heading("The * group of suppressed rows (ARX semantics)", 3)
    breaks = [str(b) for b in g.get("breaks") or []]
    if breaks:
        page.warning(f"the * group of {rows:,} rows breaks {', '.join(breaks)}")
    else:
        page.success(f"the * group of {rows:,} rows meets every model")
    page.paragraph(
        "With --suppressed-rows arx the suppressed rows form one group with * in every quasi-identifier that, "
        "as in ARX, is not held to the privacy models; the models above are measured on the other classes. "
        "Per-class models are checked on the group alone, the table-level ones on the file as written."
    )
    scope = {"group": "the * group alone", "file": "the file as written (classes and * group)"}
    page.table(
        ["model", "requirement", "checked on", "holds"],
        [
            [
                (v.get("model") or {}).get("model") if isinstance(v.get("model"), dict) else v.get("model"),
                v.get("requirement"),
                scope.get(str(v.get("scope")), v.get("scope")),
                v.get("holds"),
            ]
            for v in g.get("models") or []
        ],
    )


def _classes(page: Page, rel: dict, m: dict, sizes, params: dict) -> None:
    """The "Class sizes" section: the report's summary of the released classes (never the ``*`` group) and
    the distribution of the classes as written (the ``*`` group one of them)."""
    page.heading("Class sizes")
    c = m.get("classes") or {}
    bucket = rel.get("kind") not in GENERALIZING
    note = "groups; rows not published are in none" if bucket else _star_note(rel, False)
    page.facts(
        [
            (f"classes ({note})", c.get("classes")),
            (f"smallest ({note})", c.get("min")),
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
    drawn = "groups" if bucket else f"classes as written ({_star_note(rel, True)})"
    page.figure(
        bar_chart(labels, [("records", totals)], title="records by the size of their class", unit="records"),
        f"{len(s):,} {drawn}, {int(s.sum()):,} records; a class of 500 counts 500 times, so the "
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


def _risks(page: Page, rel: dict, m: dict, sizes, disclosure) -> None:
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
            f"share of records re-identified on average); over the released classes ({_star_note(rel, False)})",
        )
        page.facts([(f"records in classes of one ({_star_note(rel, False)})", r.get("records_in_unique_classes"))])
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
            f"chance of guessing the value of someone she links to the class); largest: {fmt(float(d.max()))}; "
            + (
                "over the groups"
                if rel.get("kind") not in GENERALIZING
                else f"over the classes as written ({_star_note(rel, True)})"
            ),
        )


def _timings(page: Page, t: dict) -> None:
    phases = {k: v for k, v in t.items() if k != "total" and isinstance(v, (int, float))}
    if not phases:
        return
    page.heading("Timings")
    page.facts([("total seconds", t.get("total"))])
    page.figure(bar_chart(list(phases), [("seconds", list(phases.values()))], title="seconds per phase", unit="s"))
