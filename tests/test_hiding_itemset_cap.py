"""The cap on the frequent itemsets mined for hiding (``max_itemsets``, ``--max-itemsets``).

mushroom at --min-support 0.01 used to end in a numpy memory error: now mining stops as soon as
the count passes the cap (default 1,000,000), within seconds, and the run fails with one line.
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from anonymize.hiding import MAX_ITEMSETS, HidingError, hide
from anonymize.itemsets import frequent_itemsets, read_fimi
from anonymize.itemsets.engine import ItemsetLimitExceeded

ROOT = Path(__file__).resolve().parents[1]
MUSHROOM = ROOT / "anonymize" / "data" / "mushroom.dat"


def run(capsys, *args) -> tuple[int, str, str]:
    """The CLI in process (``parties.cli.main``): exit code, stdout, stderr."""
    from parties.cli import main

    rc = main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_line_error(err: str) -> str:
    assert err.startswith("ppdm: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.slow
def test_mushroom_at_one_percent_fails_fast_with_one_line(capsys, tmp_path):
    out = tmp_path / "o.dat"
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        rc, stdout, err = run(
            capsys, "hide-rules", MUSHROOM, "--sensitive", "34 85", "--min-support", "0.01", "-o", out, "--quiet"
        )
        took = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"\ncapped mushroom 0.01 run: {took:.2f} s, peak traced memory {peak / 2**20:,.0f} MiB")
    assert rc == 2 and stdout == "" and not out.exists()
    msg = one_line_error(err)
    assert "MemoryError" not in msg and "1,000,000" in msg and "at size" in msg
    assert "--min-support" in msg and "--max-itemsets" in msg
    assert took < 20, took
    assert peak < 4 * 2**30, peak  # bounded: the full result would be hundreds of millions of itemsets


def test_small_cap_fails_the_same_way(capsys, tmp_path):
    out = tmp_path / "o.dat"
    # 2,735 frequent itemsets at 30 %: 28 items, 163 pairs — the cap of 100 is passed at size 2
    rc, stdout, err = run(
        capsys, "hide-rules", MUSHROOM, "--sensitive", "34 85", "--min-support", "0.3",
        "--max-itemsets", "100", "-o", out, "--quiet",
    )  # fmt: skip
    assert rc == 2 and stdout == "" and not out.exists()
    msg = one_line_error(err)
    assert "191 itemsets (at size 2)" in msg and "cap of 100" in msg and "--max-itemsets" in msg


@pytest.mark.parametrize("algo", ["heuristic", "border"])
def test_cap_above_the_count_changes_nothing(capsys, tmp_path, algo):
    a, b = tmp_path / "a.dat", tmp_path / "b.dat"
    base = ["hide-rules", MUSHROOM, "--sensitive", "34 85; 24 => 86", "--min-support", "0.3",
            "--min-confidence", "0.8", "--algorithm", algo, "--seed", "5", "--quiet"]  # fmt: skip
    assert len(frequent_itemsets(read_fimi(MUSHROOM), 0.3)) == 2735
    rc1, _, _ = run(capsys, *base, "-o", a)
    rc2, _, _ = run(capsys, *base, "--max-itemsets", "2735", "-o", b)  # exactly the count: not passed
    assert rc1 == rc2 == 0
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("value", ["0", "-3"])
def test_cli_refuses_a_nonsense_cap(capsys, tmp_path, value):
    out = tmp_path / "o.dat"
    rc, _, err = run(
        capsys, "hide-rules", MUSHROOM, "--sensitive", "34 85", "--min-support", "0.3",
        "--max-itemsets", value, "-o", out, "--quiet",
    )  # fmt: skip
    assert rc == 2 and "--max-itemsets" in one_line_error(err) and "positive" in err
    assert not out.exists()


def test_api_cap():
    assert MAX_ITEMSETS == 1_000_000
    txs = [[1, 2, 3], [1, 2, 3], [1, 2], [2, 3]]  # 7 frequent itemsets at min count 2
    with pytest.raises(HidingError, match=r"7 itemsets \(at size 3\).*cap of 6"):
        hide(txs, "1 2", min_count=2, max_itemsets=6)
    with pytest.raises(HidingError, match="at size 1"):
        hide(txs, "1 2", min_count=2, max_itemsets=2)
    out, rep = hide(txs, "1 2", min_count=2, max_itemsets=7, seed=0)
    assert rep.hiding_failure == 0
    with pytest.raises(HidingError, match="max_itemsets"):
        hide(txs, "1 2", min_count=2, max_itemsets=0)


def test_miner_stops_as_soon_as_the_count_passes():
    db = read_fimi(MUSHROOM)
    with pytest.raises(ItemsetLimitExceeded) as e:
        frequent_itemsets(db, 0.1, max_itemsets=10_000)  # 574,431 itemsets in all
    assert 10_000 < e.value.count < 10_000 + 300_000 and e.value.limit == 10_000
    assert len(frequent_itemsets(db, 0.3, max_itemsets=2735)) == 2735
