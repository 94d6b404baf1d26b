"""``--report FILE.html`` of ``ppdm mine`` (centralized and joint), ``ppdm anonymize`` and ``ppdm publish``.

Each page is checked for what a reader must find there — the command, the parties and what each learned
(the job's ``revealed`` lines), bytes per party, the achieved k measured again on the written release — and
for being self-contained (no script, no external resource, every value escaped). Then headless Chromium
renders it (tests/chromium.py): the console must stay free of errors and the screenshot must not be blank.
Without Chromium the rendering tests skip with one line saying how to install it.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from chromium import png_stats, render, require_chromium

from anonymize.errors import AnonymizeError
from anonymize.reporting import Page, bar_chart, check_report_path, histogram
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
MUSHROOM = DATA / "mushroom.dat"
SUBSET = DATA / "adult_subset.csv"
QIS = "age,sex,race,marital-status,education,native-country,workclass,occupation"
POLICY = ROOT / "examples" / "policy.toml"


def run(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def text_of(page: str) -> str:
    """The page's text as a reader sees it (tags dropped, entities decoded, whitespace collapsed)."""
    body = re.sub(r"<(style|title)>.*?</\1>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def self_contained(page: str) -> None:
    """No script, no external stylesheet, font, image or frame: the only URL is the empty favicon."""
    low = page.lower()
    assert "<script" not in low and "javascript:" not in low and "@import" not in low and "url(" not in low
    assert not re.search(r"<(img|iframe|object|embed|link(?![^>]*data:,))\b", low)
    assert re.findall(r'(?:src|href)="([^"]*)"', low) == ["data:,"]


def shows_in_chromium(path: Path) -> str:
    """Render ``path``: no console error, not blank; the page's visible text."""
    require_chromium()
    r = render(path)
    assert r.errors == [], r.errors
    st = png_stats(r.png)
    assert st["colours"] > 8 and st["non_white"] > 0.03, st
    return r.text


def test_local_mine_report(capsys, tmp_path):
    rep = tmp_path / "central.html"
    code, so, se = run(capsys, "mine", MUSHROOM, "--min-support", "0.4", "--min-confidence", "0.9", "--json",
                       "--report", rep)  # fmt: skip
    assert code == 0, se
    res = json.loads(so)
    page = rep.read_text()
    self_contained(page)
    t = text_of(page)
    assert "centralized mining report" in t and "8,124 transactions, 565 frequent itemsets" in t
    assert f"{len(res['rules']):,} rules" in t
    assert "ppdm mine " + str(MUSHROOM) in t and "--report " + str(rep) in t  # the command as typed
    assert "nothing leaves this process" in t and "no parties" in t
    assert "minimum support 0.4" in t and "minimum confidence 0.9" in t
    assert "the 20 most frequent itemsets" in t
    top = max(res["itemsets"], key=lambda i: (i["count"], -len(i["items"])))
    assert "{" + ", ".join(map(str, top["items"])) + "}" in t
    shown = shows_in_chromium(rep)
    assert "What was revealed" in shown


@pytest.mark.daemons
def test_joint_local3_mine_report(capsys, tmp_path):
    rep = tmp_path / "joint.html"
    code, so, se = run(capsys, "mine", "--local", "3", "--split", "horizontal", MUSHROOM, "--min-support", "0.4",
                       "--min-confidence", "0.9", "--json", "--report", rep)  # fmt: skip
    assert code == 0, se
    res = json.loads(so)
    proto = res["protocol"]
    page = rep.read_text()
    self_contained(page)
    t = text_of(page)
    assert "joint horizontal mining report" in t and "3 parties" in t
    assert "parties (protocol order) p0, p1, p2" in t and "analyst analyst" in t
    assert proto["revealed"] and all(" ".join(line.split()) in t for line in proto["revealed"])
    for p in ("p0", "p1", "p2"):  # bytes sent per party, as the result says
        assert f"{p} {proto['bytes_sent'][p]:,}" in t
    assert f"bytes on the wire, all parties {proto['bytes_total']:,}" in t
    assert "job seconds at each party" in t and "split among 3 parties" in t
    for lv in proto["levels"]:
        assert f"{lv['k']} {lv['candidates']:,}" in t
    shown = shows_in_chromium(rep)
    assert "What each party learned" in shown and "Timings and bytes per party" in shown


def released_k(out: Path, qis: list[str]) -> int:
    """The smallest class of the written release, rows suppressed to ``*`` left out (measured here)."""
    df = pd.read_csv(out, sep=None, engine="python", dtype=str)
    kept = df[~(df[qis] == "*").all(axis=1)]
    return int(kept.groupby(qis, dropna=False).size().min())


SECTIONS = [
    "Privacy achieved",
    "Class sizes",
    "records by the size of their class",
    "Information loss",
    "NCP per quasi-identifier",
    "Risks",
    "re-identification risk",
    "disclosure probability of their class",
]


def test_anonymize_report(capsys, tmp_path):
    out, rep = tmp_path / "out.csv", tmp_path / "release.html"
    code, so, se = run(capsys, "anonymize", SUBSET, "-o", out, "--qi", QIS, "--sensitive", "salary-class",
                       "--hierarchies", DATA, "--algorithm", "flash", "--k", 4, "--l", 2, "--max-suppression", 0.05,
                       "--queries", 20, "--report", rep)  # fmt: skip
    assert code == 0, se
    page = rep.read_text()
    self_contained(page)
    t = text_of(page)
    assert "k-anonymity k=4; distinct-l-diversity l=2" in t
    assert "salary-class 2" in t  # l (distinct) of the sensitive attribute
    for section in SECTIONS:
        assert section in t, section
    assert "3,016 records" in t
    # every class count says whether the suppressed * group is one of them (53 and 52 were shown unlabelled)
    released = pd.read_csv(out, sep=";", dtype=str)
    cols = QIS.split(",")
    star = (released[cols] == "*").all(axis=1)
    n_star = int(star.sum())
    assert n_star > 0  # the check below needs a * group
    sizes = released.groupby(cols).size()
    n_all, n_kept = len(sizes), released[~star].groupby(cols).ngroups
    counted, not_counted = f"* group of {n_star:,} rows counted as one class", f"* group of {n_star:,} rows not counted"
    assert n_all == n_kept + 1
    assert f"k (smallest class; {counted}) {int(sizes.min()):,}" in t and sizes.min() >= 4
    assert released_k(out, cols) >= 4
    assert f"classes ({counted}) {n_all:,}" in t
    assert f"classes ({not_counted}) {n_kept:,}" in t
    assert f"{n_all:,} classes as written ({counted})" in t
    shows_in_chromium(rep)


def test_anonymize_report_json_unchanged(capsys, tmp_path):
    """Any other --report name is the JSON report, as before."""
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    code, _, se = run(capsys, "anonymize", SUBSET, "-o", out, "--qi", "age,sex", "--algorithm", "mondrian", "--k", 5,
                      "--report", rep, "--quiet")  # fmt: skip
    assert code == 0, se
    assert json.loads(rep.read_text())["metrics"]["achieved"]["k"] >= 5


def test_publish_report(capsys, tmp_path):
    out, rep = tmp_path / "pub.csv", tmp_path / "publish.html"
    qis = "age,sex,race,marital-status,education,workclass"
    code, so, se = run(capsys, "publish", SUBSET, "-o", out, "--policy", POLICY, "--user",
                       "partner", "--purpose", "research", "--qi", qis, "--sensitive", "occupation", "--hierarchies",
                       DATA, "--queries", 0, "--report", rep, "--quiet")  # fmt: skip
    assert code == 0, se
    page = rep.read_text()
    self_contained(page)
    t = text_of(page)
    assert "data user partner" in t and "purpose research" in t and "security level restricted" in t
    assert "owner's requirement disclosure probability ≤ 0.5" in t
    cols = qis.split(",")
    released = pd.read_csv(out, sep=";", dtype=str)
    n_star = int((released[cols] == "*").all(axis=1).sum())
    k_file = int(released.groupby(cols).size().min())  # the * group is a class of the file
    group = f"* group of {n_star:,} rows counted as one class" if n_star else "no * group in the file"
    assert f"k (smallest class; {group}) {k_file:,}" in t and f"k {k_file}" in t
    assert released_k(out, cols) >= k_file
    assert "Releases the policy engine evaluated" in t and "each evaluated release" in t
    shows_in_chromium(rep)


@pytest.mark.parametrize(
    "argv,needle",
    [
        ("mine {m} --report {d}/r.pdf", "give a FILE.html"),
        ("mine {m} --report {d}/missing/r.html", "directory does not exist"),
        (
            "anonymize {s} -o {d}/o.csv --qi age --algorithm mondrian --k 5 --report {d}/missing/r.html",
            "directory does not exist",
        ),
        (
            "publish {s} -o {d}/o.csv --policy {p} --user partner --purpose research --qi age --sensitive occupation "
            "--report {d}/missing/r.html",
            "directory does not exist",
        ),
    ],
)
def test_bad_report_path_is_one_line_before_any_work(capsys, tmp_path, argv, needle):
    paths = {"m": MUSHROOM, "s": SUBSET, "p": POLICY, "d": tmp_path}
    code, so, se = run(capsys, *(a.format(**paths) for a in argv.split()))  # paths may hold spaces
    lines = [ln for ln in se.splitlines() if ln.strip()]
    assert code == 2 and so == "" and len(lines) == 1 and lines[0].startswith("ppdm: error:"), se
    assert needle in lines[0]
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_every_value_is_escaped(tmp_path):
    evil = '<script>alert("x")</script> & "quotes"'
    p = Page(evil, evil)
    p.heading(evil).paragraph(evil).warning(evil).facts([(evil, evil)]).table([evil], [[evil]]).bullets([evil])
    p.figure(bar_chart([evil], [(evil, [1.0])], title=evil), evil)
    p.raw_json(evil, {evil: evil})
    page = p.html(footer=evil)
    assert "<script" not in page and "alert(&quot;x&quot;)" in page
    with pytest.raises(TypeError):
        p.figure('<svg onload="alert(1)"></svg>')  # type: ignore[arg-type]
    with pytest.raises(AnonymizeError, match="FILE.html"):
        check_report_path(tmp_path / "r.txt")
    f = tmp_path / "evil.html"
    f.write_text(page)
    text = shows_in_chromium(f)
    assert evil in text  # shown as text, never run


def test_histogram_bins_cover_every_value():
    labels, totals = histogram([4, 4, 5, 9, 40, 500], [4, 4, 5, 9, 40, 500])
    assert sum(totals) == 562 and labels[0].startswith("4") and len(labels) == len(totals)
    labels, totals = histogram([0.0, 0.25, 1.0], [1, 1, 2], integer=False, bins=4, span=(0.0, 1.0))
    assert totals == [1, 1, 0, 2] and len(labels) == 4
    assert histogram([3, 3, 5]) == (["3", "4", "5"], [2.0, 0.0, 1.0])


def test_the_command_line_never_shows_a_password():
    from argparse import Namespace

    from parties.cli.report_args import command_text

    argv = ["ppdm", "mine", "--postgresql", "postgresql://bob:s3cret@db.example:5432/shop", "--query", "select a b"]
    text = command_text(Namespace(command_line=argv))
    assert text is not None and "s3cret" not in text
    assert "postgresql://bob:***@db.example:5432/shop" in text and "'select a b'" in text
    assert command_text(Namespace()) is None
