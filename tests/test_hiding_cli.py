"""``ppdm hide-rules`` end to end: the contract's flags, JSON fields, atomic output, bad input."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from anonymize.itemsets import count_support, frequent_itemsets, read_fimi

ROOT = Path(__file__).resolve().parents[1]
MUSHROOM = ROOT / "anonymize" / "data" / "mushroom.dat"

FIELDS = {
    "algorithm",
    "parameters",
    "transactions",
    "min_support",
    "min_count",
    "min_confidence",
    "sensitive",
    "hiding_failure",
    "misses_cost",
    "lost_itemsets",
    "nonsensitive_itemsets",
    "ghost_itemsets",
    "artifactual_patterns",
    "lost_rules",
    "misses_cost_rules",
    "ghost_rules",
    "dissimilarity",
    "items_removed",
    "items_added",
    "transactions_modified",
    "seconds",
    "input",
    "output",
}


# the installed console script (``python -m parties.cli`` imports the CLI module twice, so the
# verbs' CLIError is not the one main() catches there)
PPDM = shutil.which("ppdm", path=str(Path(sys.executable).parent)) or "ppdm"


def ppdm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PPDM, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=120)


def run(capsys, *args) -> tuple[int, str, str]:
    """The CLI in process (``parties.cli.main``): exit code, stdout, stderr."""
    from parties.cli import main

    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hide")
    src = d / "mushroom.dat"
    src.write_bytes(MUSHROOM.read_bytes())
    src.chmod(0o444)  # read-only, like a released input: hiding must not need to write it
    return src


@pytest.mark.parametrize("algo", ["heuristic", "swa", "border", "exact"])
def test_end_to_end_json(capsys, data, tmp_path, algo):
    before = sha(data)
    out = tmp_path / "san.dat"
    args = [data, "--sensitive", "2 53; 24 => 94", "--min-support", "0.3", "--min-confidence", "0.5"]
    rc, stdout, err = run(capsys, "hide-rules", *args, "--algorithm", algo, "-o", out, "--json", "--seed", "3")
    assert rc == 0, err
    assert sha(data) == before  # the input's bytes are unchanged
    rep = json.loads(stdout)
    assert FIELDS <= set(rep)
    assert rep["algorithm"] == algo and rep["transactions"] == 8124 and rep["min_count"] == 2438
    assert rep["min_support"] == "0.3" and rep["min_confidence"] == "0.5"
    assert rep["hiding_failure"] == 0 and rep["ghost_itemsets"] == 0
    assert [s["pattern"] for s in rep["sensitive"]] == ["2 53", "24 => 94"]
    assert all(not s["mined_after"] for s in rep["sensitive"])
    # the written file is what the report describes
    san = read_fimi(out)
    orig = read_fimi(MUSHROOM)
    assert san.n_transactions == 8124
    assert rep["items_removed"] == orig.indices.size - san.indices.size
    fi = frequent_itemsets(san, 0.3)
    assert frozenset([2, 53]) not in fi.to_dict()
    xy, x = count_support(san, [[24, 94], [24]])
    assert xy < 2438 or xy < 0.5 * x
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary file left behind


def test_human_output_and_progress(capsys, data, tmp_path):
    out = tmp_path / "h.dat"
    rc, stdout, err = run(
        capsys, "hide-rules", data, "--sensitive", "2 53", "--min-support", "0.3", "-o", out, "--progress"
    )
    assert rc == 0, err
    assert "hiding failure" in stdout and "misses cost" in stdout and str(out) in stdout
    assert "mining 8,124 transactions" in err  # progress goes to stderr
    rc, stdout, err = run(
        capsys, "hide-rules", data, "--sensitive", "2 53", "--min-support", "0.3", "-o", out, "--json"
    )
    assert err == "" and json.loads(stdout)["hiding_failure"] == 0  # no progress when stderr is not a terminal


def test_console_script_contract(data, tmp_path):
    """The installed ``ppdm``: JSON on stdout, and bad input is one line with exit status 2."""
    out = tmp_path / "s.dat"
    r = ppdm(
        "hide-rules", data, "--sensitive", "2 53", "--min-support", "0.3", "--algorithm", "border", "-o", out, "--json"
    )
    assert r.returncode == 0 and json.loads(r.stdout)["hiding_failure"] == 0
    r = ppdm("hide-rules", data, "--sensitive", "2 99999", "--min-support", "0.3", "-o", tmp_path / "t.dat")
    assert r.returncode == 2 and r.stderr.startswith("ppdm: error: ") and r.stderr.count("\n") == 1
    assert not (tmp_path / "t.dat").exists()


@pytest.mark.parametrize(
    "extra,msg",
    [
        (["--sensitive", "2 99999"], "item 99999 of sensitive pattern"),
        (["--sensitive", " ; "], "sensitive list is empty"),
        (["--sensitive", "2 x"], "not an item id"),
        (["--sensitive", "2 => "], "empty side"),
        (["--min-support", "0"], "--min-support must be in (0, 1]"),
        (["--min-support", "1.5"], "--min-support must be in (0, 1]"),
        (["--min-support", "-0.2"], "--min-support must be in (0, 1]"),
        (["--min-support", "abc"], "--min-support must be a number"),
        (["--min-confidence", "0"], "--min-confidence must be in (0, 1]"),
        (["--min-confidence", "2"], "--min-confidence must be in (0, 1]"),
        (["--psi", "0.5"], "--psi and --window apply to --algorithm swa"),
        (["--algorithm", "swa", "--psi", "3"], "--psi must be in [0, 1]"),
        (["--algorithm", "border", "--strategy", "1b"], "apply to --algorithm heuristic"),
        (["--strategy", "1b"], "hides rules"),
        (["--algorithm", "exact", "--max-variables", "10"], "use --algorithm border"),
    ],
)
def test_bad_input_one_line_exit_2_no_output(capsys, data, tmp_path, extra, msg):
    out = tmp_path / "bad.dat"
    args = {"--sensitive": "2 53", "--min-support": "0.3"}
    flags = []
    it = iter(extra)
    for a in it:
        if a in args and a in ("--sensitive", "--min-support"):
            args[a] = next(it)
        else:
            flags.append(a)
    cmd = ["hide-rules", data, "--sensitive", args["--sensitive"], "--min-support", args["--min-support"], *flags]
    rc, stdout, err = run(capsys, *cmd, "-o", out)
    assert rc == 2, (stdout, err)
    assert err.count("\n") == 1 and err.startswith("ppdm: error: ") and msg in err and stdout == ""
    assert not out.exists() and not list(tmp_path.iterdir())


def test_unreadable_files_and_output_paths(capsys, data, tmp_path):
    base = ["--sensitive", "2 53", "--min-support", "0.3"]
    cases = [
        ([tmp_path / "missing.dat", *base, "-o", tmp_path / "o.dat"], "no such file"),
        ([tmp_path, *base, "-o", tmp_path / "o.dat"], "directory"),
        ([data, *base, "-o", tmp_path / "nowhere" / "o.dat"], "does not exist"),
        ([data, *base, "-o", data], "input is never overwritten"),
    ]
    garbage = tmp_path / "garbage.dat"
    garbage.write_text("1 2 3\n4 five 6\n")
    cases.append(([garbage, *base, "-o", tmp_path / "o.dat"], "line 2"))
    empty = tmp_path / "empty.dat"
    empty.write_text("\n\n")
    cases.append(([empty, *base, "-o", tmp_path / "o.dat"], "no transactions"))
    binary = tmp_path / "bin.dat"
    binary.write_bytes(b"\x00\x01\xff\xfe")
    cases.append(([binary, *base, "-o", tmp_path / "o.dat"], "not an item id"))
    before = sha(data)
    for args, msg in cases:
        rc, _, err = run(capsys, "hide-rules", *args)
        assert rc == 2, (args, err)
        assert err.startswith("ppdm: error: ") and err.count("\n") == 1 and msg in err, err
        assert not (tmp_path / "o.dat").exists()
    assert sha(data) == before


def test_output_replaced_atomically(capsys, data, tmp_path):
    out = tmp_path / "san.dat"
    out.write_text("old content\n")
    rc, _, _ = run(capsys, "hide-rules", data, "--sensitive", "2 53", "--min-support", "0.3", "-o", out, "--seed", "1")
    assert rc == 0
    assert read_fimi(out).n_transactions == 8124
    # a failing run leaves the previous output as it was
    prev = sha(out)
    rc, _, _ = run(capsys, "hide-rules", data, "--sensitive", "2 99999", "--min-support", "0.3", "-o", out)
    assert rc == 2 and sha(out) == prev
