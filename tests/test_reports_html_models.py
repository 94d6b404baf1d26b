"""The privacy models on ``ppdm anonymize --report FILE.html``: every model asked for, with its requirement,
the achieved value and whether it holds (``anonymize/reporting/release.py``, :func:`model_rows`).

Each test runs a real release through the CLI, parses the written page with :mod:`html.parser` and checks
the achieved value shown against the JSON report (the one the page embeds: the value shown is the report's, formatted)
and against a recomputation on the written file that does not use ppdm's measurement: pycanon 1.0.1 for
β-likeness, δ-disclosure and (α,k)-anonymity, pandas for k, l, the table-level risks and the ``*`` group.
The class counts are checked for saying whether the ``*`` group of suppressed rows is one of them: the
same release has one class more with it (ppdm's star semantics) than without (ARX's outliers, and the
report's ``classes`` summary). The pages are self-contained and render in Chromium (tests/chromium.py;
skipped without the browser).
"""

from __future__ import annotations

import html
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from chromium import png_stats, render, require_chromium
from pycanon import anonymity as pycanon

from anonymize.publish.metrics import population as P
from anonymize.reporting.html import fmt
from anonymize.reporting.release import MODEL_HEADER, model_rows, release_page, star_rows
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
QIS = "age,sex,race,marital-status,education,native-country,workclass,occupation"
QI_LIST = QIS.split(",")
POP_QIS = ["age", "sex", "race", "marital-status", "education"]
REL = 1e-3  # the page shows four significant digits


# ------------------------------------------------------------------------------------------------ helpers
class Tables(HTMLParser):
    """Every ``<table>`` of a page as rows of cell texts (``th`` and ``td``), and its ``class``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append((dict(attrs).get("class") or "", []))
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1][1].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables_of(page: str) -> list[tuple[str, list[list[str]]]]:
    p = Tables()
    p.feed(page)
    return p.tables


def facts_of(page: str) -> dict[str, str]:
    """Every two-column fact row of the page: label -> value as shown."""
    return {r[0]: r[1] for cls, rows in tables_of(page) if cls == "facts" for r in rows if len(r) == 2}


def model_table(page: str) -> list[list[str]]:
    """The rows of the table of privacy models (header left out)."""
    found = [rows[1:] for _, rows in tables_of(page) if rows and rows[0] == MODEL_HEADER]
    assert len(found) == 1, "the page has no table of privacy models"
    return found[0]


def shown(rows: list[list[str]], model: str, measure_start: str, attribute: str = "") -> tuple[str, str, str]:
    """``(required, achieved, holds)`` of the one row of ``model`` whose measure starts with ``measure_start``."""
    hit = [r for r in rows if r[0] == model and r[1] == attribute and r[2].startswith(measure_start)]
    assert len(hit) == 1, (model, measure_start, rows)
    return hit[0][3], hit[0][4], hit[0][5]


def number(text: str) -> float:
    return float(text.replace(",", ""))


def text_of(page: str) -> str:
    body = re.sub(r"<(style|title)>.*?</\1>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def self_contained(page: str) -> None:
    low = page.lower()
    assert "<script" not in low and "javascript:" not in low and "@import" not in low and "url(" not in low
    assert not re.search(r"<(img|iframe|object|embed|link(?![^>]*data:,))\b", low)
    assert re.findall(r'(?:src|href)="([^"]*)"', low) == ["data:,"]


def renders(path: Path) -> str:
    """Chromium renders ``path`` without console errors and not blank; its visible text."""
    require_chromium()
    r = render(path)
    assert r.errors == [], r.errors
    st = png_stats(r.png)
    assert st["colours"] > 8 and st["non_white"] > 0.03, st
    return r.text


def embedded_report(page: str) -> dict:
    """The JSON report the page was made from (its collapsed raw-JSON block), parsed."""
    found = re.findall(
        r"<details><summary>the JSON report this page was made from</summary><pre>(.*?)</pre>", page, re.S
    )
    assert len(found) == 1
    return json.loads(html.unescape(found[0]))


def anonymize(capsys, tmp_path: Path, source: Path, qis: str, *extra) -> tuple[str, dict, pd.DataFrame]:
    """One ``ppdm anonymize ... --report page.html``: the page, the JSON report it embeds, the written file."""
    out, rep = tmp_path / "out.csv", tmp_path / "page.html"
    argv = ["anonymize", source, "-o", out, "--qi", qis, "--hierarchies", DATA, "--algorithm", "flash",
            "--queries", 0, "--quiet", "--report", rep, *extra]  # fmt: skip
    code = main([str(a) for a in argv])
    _, se = capsys.readouterr()
    assert code == 0, se
    page = rep.read_text()
    return page, embedded_report(page), pd.read_csv(out, sep=";", dtype=str).reset_index(drop=True)


def star_mask(df: pd.DataFrame, qis: list[str]) -> pd.Series:
    return (df[qis] == "*").all(axis=1)


# ----------------------------------------------------------------------------- sensitive models (star)
SENSITIVE_CASES = [
    ("beta-basic", ["--k", 4, "--beta", 1, "--beta-variant", "basic"]),
    ("beta-enhanced", ["--k", 4, "--beta", 1]),
    ("delta", ["--k", 4, "--delta", 1.5]),
    ("alpha-k", ["--k", 3, "--alpha", 0.8]),
    ("k-l-t", ["--k", 4, "--l", 2, "--t", 0.3, "--t-distance", "variational"]),
]


def _frequencies(df: pd.DataFrame, sa: str) -> tuple[pd.DataFrame, pd.Series]:
    q = df.groupby(QI_LIST)[sa].value_counts(normalize=True).unstack(fill_value=0.0)
    p = df[sa].value_counts(normalize=True)
    return q.reindex(columns=p.index, fill_value=0.0), p


@pytest.mark.parametrize("extra", [c[1] for c in SENSITIVE_CASES], ids=[c[0] for c in SENSITIVE_CASES])
def test_sensitive_models_shown_as_the_json_and_pycanon_measure_them(capsys, tmp_path, extra):
    page, rep, df = anonymize(capsys, tmp_path, SUBSET, QIS, "--sensitive", "salary-class",
                              "--max-suppression", 0.05, *extra)  # fmt: skip
    self_contained(page)
    rows = model_table(page)
    ach = rep["metrics"]["achieved"]
    sa = ach["sensitive_attributes"]["salary-class"]
    models = rep["parameters"]["models"]
    # one row (or two) per model asked for, every one measured and holding
    assert {r[0] for r in rows} == {m["model"] for m in models}
    assert all(r[5] == "yes" for r in rows), rows
    assert "every privacy model asked for holds" in text_of(page)
    summary = facts_of(page)["privacy models"]
    assert all(m["model"] in summary for m in models)
    # star semantics: the written file (the * group a class of it) is what pycanon measures
    sizes = df.groupby(QI_LIST).size()
    assert rep["metrics"]["suppressed_rows"] > 0 and star_mask(df, QI_LIST).sum() == rep["metrics"]["suppressed_rows"]
    for m in models:
        name = m["model"]
        if name == "k-anonymity":
            req, got, _ = shown(rows, name, "k (smallest class)")
            assert req == f"≥ {m['k']}" and got == fmt(ach["k"]) and number(got) == sizes.min()
            assert number(got) == pycanon.k_anonymity(df, QI_LIST)
        elif name == "beta-likeness":
            req, got, _ = shown(rows, name, f"β ({m['variant']})", "salary-class")
            assert req == f"≤ {fmt(m['beta'])}" and got == fmt(sa[f"beta_{m['variant']}"])
            # pycanon's enhanced value equals the basic β when no cap −ln p is exceeded (checked by groupby)
            ref = getattr(pycanon, f"{m['variant']}_beta_likeness")(df, QI_LIST, ["salary-class"])
            assert math.isclose(number(got), ref, rel_tol=REL) and number(got) <= m["beta"]
            if m["variant"] == "enhanced":
                q, p = _frequencies(df, "salary-class")
                assert (((q - p) / p <= np.log(1 / p) + 1e-9) | (q <= p)).to_numpy().all()
        elif name == "delta-disclosure":
            req, got, _ = shown(rows, name, "δ", "salary-class")
            assert req == f"< {fmt(m['delta'])}" and got == fmt(sa["delta_disclosure"])
            q, _ = _frequencies(df, "salary-class")
            assert (q > 0).to_numpy().all()  # every value in every class: pycanon's δ is the paper's then
            ref = pycanon.delta_disclosure(df, QI_LIST, ["salary-class"])
            assert math.isclose(number(got), ref, rel_tol=REL) and number(got) < m["delta"]
        elif name == "alpha-k-anonymity":
            req, got, _ = shown(rows, name, "α", "salary-class")
            a_ref, k_ref = pycanon.alpha_k_anonymity(df, QI_LIST, ["salary-class"])
            assert req == f"≤ {fmt(m['alpha'])}" and got == fmt(sa["alpha"])
            assert math.isclose(number(got), a_ref, rel_tol=REL)
            req, got, _ = shown(rows, name, "k (smallest class)")
            assert req == f"≥ {m['k']}" and got == fmt(ach["k"]) and number(got) == k_ref
        elif name == "distinct-l-diversity":
            req, got, _ = shown(rows, name, "distinct l", "salary-class")
            assert req == f"≥ {m['l']}" and got == fmt(sa["l_distinct"])
            assert number(got) == pycanon.l_diversity(df, QI_LIST, ["salary-class"])
        elif name == "t-closeness":
            req, got, _ = shown(rows, name, "t (variational)", "salary-class")
            assert req == f"≤ {fmt(m['t'])}" and got == fmt(sa["t"]["variational"])
            q, p = _frequencies(df, "salary-class")
            assert math.isclose(number(got), float((q - p).abs().sum(axis=1).max() / 2), rel_tol=REL)
        else:  # pragma: no cover - a case above asked for another model
            raise AssertionError(name)
    # the class counts: the * group is one class of the file and of "achieved"; the summary leaves it out
    n_star = rep["metrics"]["suppressed_rows"]
    f = facts_of(page)
    counted, not_counted = f"* group of {n_star:,} rows counted as one class", f"* group of {n_star:,} rows not counted"
    assert f[f"classes ({counted})"] == fmt(len(sizes)) == fmt(ach["classes"])
    assert f[f"classes ({not_counted})"] == fmt(len(sizes) - 1) == fmt(rep["metrics"]["classes"]["classes"])
    assert f[f"k (smallest class; {counted})"] == fmt(sizes.min())
    if "--delta" in extra:  # the page as a browser shows it: the requirement "< 1.5" is text
        text = renders(tmp_path / "page.html")
        assert "Privacy models: required and achieved" in text and "< 1.5" in text


def test_a_failing_model_is_shown_failing_and_none_explained():
    """The page judges what the report says: a β that no enhanced bound allows, a δ with a missing value."""
    rel = {
        "kind": "full-domain",
        "parameters": {
            "sensitive": ["s"],
            "suppressed_rows": "drop",
            "models": [
                {"model": "beta-likeness", "beta": 1.0, "variant": "enhanced", "attribute": None},
                {"model": "delta-disclosure", "delta": 2.0, "attribute": "s"},
                {"model": "k-anonymity", "k": 5},
                {"model": "recursive-cl-diversity", "c": 3.0, "l": 2, "attribute": None},
                {"model": "entropy-l-diversity", "l": 1.5, "attribute": None},
            ],
        },
        "metrics": {
            "suppressed_rows": 3,
            "achieved": {
                "k": 4,
                "classes": 7,
                "sensitive_attributes": {
                    "s": {
                        "l_distinct": 2,
                        "l_entropy": 1.6,
                        "recursive_c_bound": 2.5,
                        "beta_enhanced": None,
                        "delta_disclosure": None,
                    }
                },
            },
        },
    }
    rows = {(r[0], r[2]): r for r in model_rows(rel)}
    assert (
        rows[("beta-likeness", "β (enhanced)")][4].startswith("none")
        and rows[("beta-likeness", "β (enhanced)")][5] is False
    )
    assert rows[("delta-disclosure", "δ (max |ln q/p|)")][5] is False
    assert rows[("k-anonymity", "k (smallest class)")][4:] == [4, False]
    assert rows[("recursive-cl-diversity", "c bound at l = distinct l")][4:] == [2.5, True]
    assert rows[("entropy-l-diversity", "entropy l")][4:] == [1.6, True]
    assert star_rows(rel) == 0  # suppressed rows dropped: no * group
    rel["parameters"]["models"].append({"model": "t-closeness", "distance": "emd"})  # no t: a report the page
    assert model_rows(rel)[-1] == ["t-closeness", "", "–", "distance=emd", "not measured", None]  # cannot read
    page = release_page(rel)
    t = text_of(page)
    assert "not met on the release as measured: beta-likeness, delta-disclosure, k-anonymity" in t
    assert "classes (no * group in the file) 7" in t and "* group none: the 3 suppressed rows are left out" in t
    assert "&lt; 2" in page  # the requirement "< 2" escaped


def test_dropped_rows_leave_no_star_group_and_one_class_count(capsys, tmp_path):
    page, rep, df = anonymize(capsys, tmp_path, SUBSET, QIS, "--sensitive", "salary-class", "--k", 4, "--alpha", 0.8,
                              "--max-suppression", 0.05, "--suppressed-rows", "drop")  # fmt: skip
    m = rep["metrics"]
    assert m["suppressed_rows"] > 0 and len(df) == m["rows"] - m["suppressed_rows"] and not star_mask(df, QI_LIST).any()
    sizes = df.groupby(QI_LIST).size()
    f = facts_of(page)
    assert f["classes (no * group in the file)"] == fmt(len(sizes)) == fmt(m["achieved"]["classes"])
    assert fmt(m["classes"]["classes"]) == fmt(len(sizes))  # both counts agree: there is no * group
    assert f["* group"] == f"none: the {m['suppressed_rows']:,} suppressed rows are left out of the file"
    assert f"{len(sizes):,} classes as written (no * group in the file)" in text_of(page)
    # the file's own distribution is the reference: pycanon on the file measures what the page shows
    _, got, ok = shown(model_table(page), "alpha-k-anonymity", "α", "salary-class")
    assert ok == "yes" and math.isclose(
        number(got), pycanon.alpha_k_anonymity(df, QI_LIST, ["salary-class"])[0], rel_tol=REL
    )


# ---------------------------------------------------------------- population models, ARX's * group
@pytest.fixture(scope="module")
def research(tmp_path_factory) -> Path:
    """adult_subset.csv is the population; a seeded random 30 % of it is the research table."""
    d = tmp_path_factory.mktemp("research")
    pop = pd.read_csv(SUBSET, sep=";")
    path = d / "research.csv"
    pop.sample(frac=0.3, random_state=7).to_csv(path, sep=";", index=False)
    return path


def test_population_and_risk_models_with_the_arx_star_group(capsys, tmp_path, research):
    page, rep, df = anonymize(
        capsys, tmp_path, research, ",".join(POP_QIS), "--sensitive", "salary-class",
        "--insensitive", "native-country,workclass,occupation", "--population", SUBSET,
        "--delta-presence", "0.1,0.5", "--k-map", 5, "--max-avg-risk", 0.1, "--max-sample-uniques", 0.01,
        "--max-population-uniques", 0.01, "--population-size", 30160, "--max-suppression", 0.05,
        "--suppressed-rows", "arx",
    )  # fmt: skip
    self_contained(page)
    rows = model_table(page)
    m = rep["metrics"]
    star = star_mask(df, POP_QIS)
    n_star = int(star.sum())
    assert n_star == m["suppressed_rows"] > 0
    kept = df[~star].groupby(POP_QIS).size()  # ARX: the models are held by the classes outside the * group
    names = {d["model"] for d in rep["parameters"]["models"]}
    assert {r[0] for r in rows} == names
    # the table-level risks, as the search judged them (the * group left out), = the JSON's risk = pandas
    req, got, ok = shown(rows, "average-risk", "average risk")
    assert req == "≤ 0.1" and ok == "yes" and got == fmt(m["risk"]["prosecutor_avg"])
    assert math.isclose(number(got), len(kept) / kept.sum(), rel_tol=REL)
    req, got, ok = shown(rows, "sample-uniqueness", "sample uniques")
    assert req == "≤ 0.01" and ok == "yes"
    assert number(got) == m["risk"]["records_in_unique_classes"] / kept.sum() == (kept == 1).sum() / kept.sum()
    req, got, ok = shown(rows, "population-uniqueness", "population uniques (dankar, N = 30,160)")
    est, _ = P.estimate_uniques(kept.to_numpy(), 30160, "dankar", zayatz_fallback=False)
    assert req == "≤ 0.01" and ok == "yes" and math.isclose(number(got), est / 30160, rel_tol=REL, abs_tol=1e-12)
    # δ-presence and k-map: the page shows the report's figures, which equal pandas over the population
    # generalized to the release's levels (ARX: the classes outside the * group)
    from anonymize.publish.hierarchy import Hierarchy

    population = pd.read_csv(SUBSET, sep=";")
    gen = {}
    for q in POP_QIS:
        h = Hierarchy.read_arx(DATA / f"adult_hierarchy_{q}.csv", name=q)
        lv = rep["levels"][q]
        gen[q] = h.labels[lv][h.maps[lv][h.encode(population[q], column=q)]].astype(str)
    pop_classes = pd.DataFrame(gen).groupby(POP_QIS).size()
    kept_str = df[~star].astype({q: str for q in POP_QIS}).groupby(POP_QIS).size()
    pop_of = pop_classes.reindex(kept_str.index)
    assert pop_of.notna().all()
    ratio = kept_str / pop_of
    for measure, want in (("δ, smallest", ratio.min()), ("δ, largest", ratio.max())):
        _, got, ok = shown(rows, "delta-presence", measure)
        assert ok == "yes" and math.isclose(number(got), want, rel_tol=REL)
    _, got, ok = shown(rows, "k-map", "population")
    assert ok == "yes" and number(got) == pop_of.min() == m["achieved"]["k_map"]
    # the * group's verdict, model by model, as the JSON says; δ-presence recomputed: 37 of 3,016 rows
    g = m["suppressed_group"]
    pop_rows = len(pd.read_csv(SUBSET, sep=";"))
    breaks_dp = not (0.1 <= n_star / pop_rows <= 0.5)
    assert g["rows"] == n_star and ("δ-presence [0.1, 0.5]" in g["breaks"]) == breaks_dp
    t = text_of(page)
    assert f"the * group of {n_star:,} rows breaks {', '.join(g['breaks'])}" in t
    verdicts = [r for _, rs in tables_of(page) for r in rs if len(r) == 4 and r[2].startswith("the ")]
    assert [(r[1], r[3]) for r in verdicts] == [(v["requirement"], fmt(v["holds"])) for v in g["models"]]
    # every class count says whether the * group is in it: 44 with it, 43 without
    f = facts_of(page)
    with_star, without = f"* group of {n_star:,} rows counted as one class", f"* group of {n_star:,} rows not counted"
    assert f[f"classes ({without})"] == fmt(len(kept)) == fmt(m["achieved"]["classes"]) == fmt(m["classes"]["classes"])
    assert f[f"k (smallest class; {without})"] == fmt(kept.min())
    assert f"{len(kept) + 1:,} classes as written ({with_star})" in t
    text = renders(tmp_path / "page.html")
    assert "Privacy models: required and achieved" in text and "ARX semantics" in text


def test_estimated_k_map_and_average_risk_count_the_star_group(capsys, tmp_path, research):
    """ppdm's star semantics: the * group is one class of the file, so the table-level risk counts it
    (the JSON's risk summary does not: the page's value differs from it and equals pandas on the file)."""
    page, rep, df = anonymize(
        capsys, tmp_path, research, ",".join(POP_QIS), "--sensitive", "salary-class",
        "--insensitive", "native-country,workclass,occupation", "--k-map", 5, "--population-size", 30160,
        "--max-avg-risk", 0.05, "--max-suppression", 0.05,
    )  # fmt: skip
    rows = model_table(page)
    m = rep["metrics"]
    sizes = df.groupby(POP_QIS).size()  # the written file, * group included
    n_star = int(star_mask(df, POP_QIS).sum())
    assert n_star == m["suppressed_rows"] > 0
    kmap = rep["parameters"]["models"][0]
    assert kmap["model"] == "k-map" and kmap["derived_k"] is not None
    req, got, ok = shown(rows, "k-map", "k (smallest class; k' from k = 5, poisson, N = 30,160)")
    assert req == f"≥ {kmap['derived_k']}" and got == fmt(m["achieved"]["k"]) == fmt(sizes.min()) and ok == "yes"
    req, got, ok = shown(rows, "average-risk", "average risk")
    assert ok == "yes" and math.isclose(number(got), len(sizes) / sizes.sum(), rel_tol=REL)
    kept = m["classes"]["classes"] / (m["rows"] - n_star)
    assert math.isclose(kept, m["risk"]["prosecutor_avg"]) and not math.isclose(number(got), kept, rel_tol=REL)
    t = text_of(page)
    counted = f"* group of {n_star:,} rows counted as one class"
    assert f"risk and uniques over the classes as written ({counted})" in t
    f = facts_of(page)
    assert f[f"classes ({counted})"] == fmt(len(sizes)) == fmt(m["achieved"]["classes"])
    assert f[f"classes (* group of {n_star:,} rows not counted)"] == fmt(len(sizes) - 1) == fmt(m["classes"]["classes"])


def test_population_uniqueness_recomputed_on_the_file(capsys, tmp_path, research):
    page, rep, df = anonymize(
        capsys, tmp_path, research, ",".join(POP_QIS), "--sensitive", "salary-class",
        "--insensitive", "native-country,workclass,occupation", "--max-population-uniques", 0.01,
        "--population-size", 9000, "--uniqueness-estimator", "zayatz",
    )  # fmt: skip
    sizes = df.groupby(POP_QIS).size().to_numpy()
    assert (sizes == 1).sum() > 0  # sample uniques: the estimate is not trivially 0
    req, got, ok = shown(model_table(page), "population-uniqueness", "population uniques (zayatz, N = 9,000)")
    assert req == "≤ 0.01" and ok == "yes"
    assert math.isclose(number(got), P.zayatz_uniques(*P.size_frequencies(sizes), 9000) / 9000, rel_tol=REL)
    assert (
        facts_of(page)["classes (no * group in the file)"]
        == fmt(len(sizes))
        == fmt(rep["metrics"]["classes"]["classes"])
    )


def test_population_counts_are_shown_when_the_report_has_them():
    """A report with ``achieved.k_map`` / ``achieved.delta_presence`` (the keys of ``ppdm check``) shows
    them with their verdicts; values are escaped."""
    rel = {
        "kind": "full-domain",
        "parameters": {
            "models": [
                {"model": "delta-presence", "dmin": 0.1, "dmax": 0.5, "population_rows": 3016},
                {"model": "k-map", "k": 5, "population_rows": 3016},
                {"model": "<b>new-model</b>", "x": 1},
            ],
            "suppressed_rows": "star",
        },
        "metrics": {"suppressed_rows": 0, "achieved": {"k": 2, "k_map": 7, "delta_presence": [0.05, 0.4]}},
    }
    rows = {(r[0], r[2].split(" (")[0]): r[3:] for r in model_rows(rel)}
    assert rows[("delta-presence", "δ, smallest class")] == ["≥ 0.1", 0.05, False]
    assert rows[("delta-presence", "δ, largest class")] == ["≤ 0.5", 0.4, True]
    assert rows[("k-map", "population rows of the smallest match")] == ["≥ 5", 7, True]
    page = release_page(rel)
    assert "<b>new-model" not in page and "&lt;b&gt;new-model&lt;/b&gt;" in page
    assert "not met on the release as measured: delta-presence" in text_of(page)
    self_contained(page)
