"""Joint mining on keyed tables with named items (parties.sources, parties.joint.named/keyed).

Oracles: an exact brute force over the pooled data (vertical: the inner join of the parties' keyed
tables by pandas; horizontal: the concatenation), mlxtend on larger data, and the FIMI reference
fingerprint of mushroom. The jobs run as they do in a daemon (the job functions over an in-memory
network) and, end to end, between real daemons started by ``ppdm mine --local``.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.channel import run_parties
from parties.config import Limits
from parties.jobs.mining import mine_horizontal_job, mine_vertical_job
from parties.jobs.registry import JobContext
from parties.sources import parse_source

REPO = Path(__file__).resolve().parents[1]
ITEMS = ["tea", "milk", "jam", "rye", "oat", "fig"]


def write_table(path: Path, records: dict) -> None:
    rows = [(k, i) for k, items in records.items() for i in sorted(items)] + [
        (k, None) for k, items in records.items() if not items
    ]
    pd.DataFrame(rows, columns=["cid", "product"]).to_csv(path, index=False)


def run_job(fn, tables: list[dict], params: dict, tmp: Path) -> dict:
    """The daemon job ``fn`` on every party (in-memory network), party p reading ``tables[p]`` from CSV."""
    names = [f"p{i}" for i in range(len(tables))]
    srcs = {}
    for n, t in zip(names, tables):
        write_table(tmp / f"{n}.csv", t)
        srcs[n] = parse_source("transactions", {"path": f"{n}.csv", "transaction": "cid", "item": "product"}, tmp)

    async def party(ch, _):
        cfg = SimpleNamespace(data={"transactions": srcs[ch.me]}, limits=Limits())
        return await fn(JobContext(ch.me, ch, dict(params), config=cfg, session="t"))

    return run_parties(names, party, timeout=120)


def brute_force(transactions: list[set], minsup: str) -> dict:
    n = len(transactions)
    need = math.ceil(Fraction(minsup) * n)
    items = sorted(set().union(*transactions)) if transactions else []
    out = {}
    for k in range(1, len(items) + 1):
        found = False
        for c in itertools.combinations(items, k):
            cnt = sum(1 for t in transactions if set(c) <= t)
            if cnt >= need and cnt > 0:
                out[frozenset(c)] = cnt
                found = True
        if not found:
            break
    return out


def got(res: dict) -> dict:
    rep = next(r for r in res.values() if "itemsets" in r)
    return {frozenset(x["items"]): x["count"] for x in rep["itemsets"]}


def inner_join(tables: list[dict]) -> list[set]:
    common = set(tables[0]).intersection(*map(set, tables[1:]))
    return [set().union(*(t[k] for t in tables)) for k in sorted(common, key=str)]


keyed_tables = st.lists(st.sets(st.sampled_from(ITEMS[:3]), max_size=3), min_size=0, max_size=14)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.data(), st.integers(2, 3), st.sampled_from(["0.2", "0.5", "1"]), st.sampled_from(["private-id", "psi"]))
def test_vertical_keyed_equals_the_inner_join(tmp_path, data, n_parties, minsup, align) -> None:
    tables = []
    for p in range(n_parties):
        keys = data.draw(st.sets(st.integers(0, 20), min_size=1, max_size=12))
        # disjoint item names per party (a vertical schema): prefix them with the party
        tables.append(
            {k: {f"{p}{x}" for x in data.draw(keyed_tables.map(lambda s: s[0] if s else set()))} for k in keys}
        )
    res = run_job(mine_vertical_job, tables, {"min_support": minsup, "align": align}, tmp_path)
    want = brute_force(inner_join(tables), minsup)
    assert got(res) == want
    rep = next(r for r in res.values() if "itemsets" in r)
    assert rep["transactions"] == len(set(tables[0]).intersection(*map(set, tables[1:])))


@pytest.mark.parametrize("align", ["private-id", "psi"])
def test_vertical_three_parties_mlxtend(tmp_path, align) -> None:
    from mlxtend.frequent_patterns import apriori

    rng = np.random.default_rng(3)
    tables = []
    for items in (["a", "b", "c"], ["d", "e"], ["f", "g", "h"]):
        keys = rng.choice(300, size=200, replace=False)
        tables.append({int(k): {x for x in items if rng.random() < 0.5} for k in keys})
    res = run_job(mine_vertical_job, tables, {"min_support": "0.1", "min_confidence": "0.5", "align": align}, tmp_path)
    rows = inner_join(tables)
    oh = pd.DataFrame([{x: (x in t) for x in "abcdefgh"} for t in rows])
    fi = apriori(oh, min_support=0.1, use_colnames=True)
    need = math.ceil(Fraction("0.1") * len(rows))
    want = {frozenset(s): round(v * len(rows)) for s, v in zip(fi.itemsets, fi.support)}
    assert got(res) == {k: v for k, v in want.items() if v >= need}
    rep = next(r for r in res.values() if "itemsets" in r)
    revealed = " ".join(rep["protocol"]["revealed"])
    if align == "private-id":
        assert "no party learns which of its records another party holds" in revealed
        assert "no single-owner candidate" in revealed
    else:
        assert "each party learns which of its records the others hold" in revealed


def test_vertical_single_owner_counts_are_never_announced_with_private_id(tmp_path) -> None:
    """A candidate of one party's items is still a product with the others' presence: no local path."""
    tables = [{k: {"x"} for k in range(10)}, {k: {"y"} if k % 2 else set() for k in range(5, 15)}]
    res = run_job(mine_vertical_job, tables, {"min_support": "0.2"}, tmp_path)
    assert got(res) == brute_force(inner_join(tables), "0.2")
    for r in res.values():
        assert all(lv.get("cross_party") == lv["candidates"] for lv in r["protocol"]["levels"])


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(st.sets(st.sampled_from(ITEMS), max_size=4), max_size=10), min_size=2, max_size=3),
       st.sampled_from(["0.2", "0.4", "0.7"]))  # fmt: skip
def test_horizontal_text_items_equal_pooled_mining(tmp_path, parts, minsup) -> None:
    tables = [{f"{p}-{t}": s for t, s in enumerate(part)} for p, part in enumerate(parts)]
    res = run_job(mine_horizontal_job, tables, {"min_support": minsup, "min_confidence": "0.5"}, tmp_path)
    pooled = [s for part in parts for s in part]
    assert got(res) == brute_force(pooled, minsup)
    rep = next(r for r in res.values() if "itemsets" in r)
    assert rep["transactions"] == len(pooled)
    assert any("locally frequent" in line for line in rep["protocol"]["revealed"])


def test_horizontal_catalog_and_long_names(tmp_path) -> None:
    long = "x" * 100 + "-ü"  # several secure-union chunks
    tables = [{1: {long, "tea"}, 2: {"tea"}}, {3: {long}, 4: {long, "milk"}}]
    res = run_job(mine_horizontal_job, tables, {"min_support": "0.5"}, tmp_path)
    assert got(res) == brute_force([{long, "tea"}, {"tea"}, {long}, {long, "milk"}], "0.5")
    cat = run_job(mine_horizontal_job, tables, {"min_support": "0.25", "catalog": ["milk", "tea"]}, tmp_path)
    assert got(cat) == {frozenset({"tea"}): 2, frozenset({"milk"}): 1}  # items outside the catalog are not mined
    assert any("catalog" in line for line in next(iter(cat.values()))["protocol"]["revealed"])


def test_a_bad_source_fails_its_party_with_one_line(tmp_path) -> None:
    write_table(tmp_path / "p0.csv", {1: {"a"}})
    (tmp_path / "p1.csv").write_text("cid,item\n1,a\n")  # no column 'product'
    srcs = {
        n: parse_source("transactions", {"path": f"{n}.csv", "transaction": "cid", "item": "product"}, tmp_path)
        for n in ("p0", "p1")
    }
    errors = {}

    async def party(ch, _):
        cfg = SimpleNamespace(data={"transactions": srcs[ch.me]}, limits=Limits())
        try:
            await mine_vertical_job(JobContext(ch.me, ch, {"min_support": "0.5"}, config=cfg, session="t"))
        except Exception as e:
            errors[ch.me] = str(e)

    run_parties(["p0", "p1"], party, timeout=3)  # in memory nothing tells p0: it times out (daemons: below)
    assert errors["p1"] == "data 'transactions': no column 'product'"  # the daemon prefixes the party


# --------------------------------------------------------------------------- real daemons
def ppdm(*args, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "parties.cli", *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.daemons
@pytest.mark.parametrize("align", ["private-id", "psi"])
def test_bank_insurer_example_between_daemons(align) -> None:
    from mlxtend.frequent_patterns import apriori

    ex = REPO / "examples" / "bank-insurer"
    r = ppdm("mine", "--local", "--split", "vertical", ex / "bank.csv", ex / "insurer.csv", "--transaction",
             "customer_id", "--item", "product", "--min-support", "0.05", "--align", align, "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    b, i = pd.read_csv(ex / "bank.csv"), pd.read_csv(ex / "insurer.csv")
    rows = pd.concat([b, i]).merge(pd.DataFrame({"customer_id": sorted(set(b.customer_id) & set(i.customer_id))}))
    oh = pd.crosstab(rows.customer_id, rows["product"]).astype(bool)
    fi = apriori(oh, min_support=0.05, use_colnames=True)
    n = len(set(b.customer_id) & set(i.customer_id))
    want = {frozenset(s): round(v * len(oh)) for s, v in zip(fi.itemsets, fi.support)}  # customers with items
    assert res["transactions"] == n
    assert {frozenset(x["items"]): x["count"] for x in res["itemsets"]} == {
        k: v for k, v in want.items() if v >= math.ceil(0.05 * n)
    }


@pytest.mark.daemons
def test_mushroom_as_text_items_over_three_daemons_matches_the_reference(tmp_path) -> None:
    from anonymize.itemsets import read_fimi

    db = read_fimi(REPO / "anonymize" / "data" / "mushroom.dat")
    ids = db.items[db.indices]
    tx = np.repeat(np.arange(db.n_transactions), np.diff(db.indptr))
    files = []
    for p in range(3):
        keep = tx % 3 == p
        df = pd.DataFrame({"basket": [f"m{t}" for t in tx[keep]], "sku": [f"item-{i:03d}" for i in ids[keep]]})
        f = tmp_path / f"shop{p}.parquet"
        df.to_parquet(f, index=False)
        files.append(f)
    r = ppdm("mine", "--local", "--split", "horizontal", *files, "--transaction", "basket", "--item", "sku",
             "--min-support", "0.4", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    from anonymize.itemsets import frequent_itemsets

    fi = frequent_itemsets(db, Fraction("0.4"))  # the centralized miner (checked against FIMI's reference counts)
    want = {frozenset(f"item-{i:03d}" for i in items): int(c) for items, c in fi}
    assert len(want) == 565
    assert {frozenset(x["items"]): x["count"] for x in res["itemsets"]} == want


@pytest.mark.daemons
def test_bad_sources_end_the_session_everywhere_and_the_daemons_serve_the_next_job(make_cluster, tmp_path, pg_server):
    """Item 5: a missing column, NULL keys, a failing query, a wrong password file — one line naming the
    party and data key, on every party; no session left behind; the next job runs."""
    import time as _time

    from parties.analyst.client import PartyError, health, run_sync

    write_table(tmp_path / "a.csv", {1: {"tea"}, 2: {"tea", "milk"}, 3: {"milk"}})
    write_table(tmp_path / "b.csv", {2: {"jam"}, 3: {"jam"}, 4: {"rye"}})
    (tmp_path / "nullkey.csv").write_text("cid,product\n1,jam\n,rye\n")
    pg_server.execute("DROP TABLE IF EXISTS shop_lines", "CREATE TABLE shop_lines (cid int, product text)",
                      "INSERT INTO shop_lines VALUES (2, 'jam'), (3, 'jam'), (4, 'rye')")  # fmt: skip
    good_pw = pg_server.password_file(tmp_path / "good.pass")
    bad_pw = pg_server.password_file(tmp_path / "bad.pass", "not-the-password")

    def table(**kw):
        return {"transaction": "cid", "item": "product", **kw}

    data = {
        "alice": {"crm": table(path=str(tmp_path / "a.csv"))},
        "bob": {
            "crm": table(path=str(tmp_path / "b.csv")),
            "nocol": {"path": str(tmp_path / "b.csv"), "transaction": "cid", "item": "sku"},
            "nullkey": table(path=str(tmp_path / "nullkey.csv")),
            "pgbad": table(
                postgresql=pg_server.url, password_file=str(bad_pw), query="SELECT cid, product FROM shop_lines"
            ),
            "pgquery": table(postgresql=pg_server.url, password_file=str(good_pw), query="SELECT * FROM nope"),
            "pg": table(
                postgresql=pg_server.url, password_file=str(good_pw), query="SELECT cid, product FROM shop_lines"
            ),
        },
    }
    # alice reads the same key names from her own file
    for k in ("nocol", "nullkey", "pgbad", "pgquery", "pg"):
        data["alice"][k] = table(path=str(tmp_path / "a.csv"))
    c = make_cluster(["alice", "bob"], data=data, policy={"min_parties": 2})
    expect = {
        "nocol": "party 'bob': data 'nocol': no column 'sku'",
        "nullkey": "party 'bob': data 'nullkey': rows with a NULL key ('cid'); every row needs one",
        "pgbad": "party 'bob': data 'pgbad': cannot connect to its PostgreSQL server",
        "pgquery": "party 'bob': data 'pgquery': its query failed",
    }
    for key, msg in expect.items():
        with pytest.raises(PartyError) as e:
            c.run_job("mine.vertical", {"min_support": "0.5", "data": key}, timeout=60)
        assert str(e.value).endswith(msg) and str(e.value).count("bob") == 1, str(e.value)
        assert "\n" not in str(e.value) and "not-the-password" not in str(e.value)
    deadline = _time.monotonic() + 10
    while True:
        active = {p.name: run_sync(health(p, c.creds)).active_sessions for p in c.peers}
        if not any(active.values()) or _time.monotonic() > deadline:
            break
        _time.sleep(0.2)
    assert active == {"alice": 0, "bob": 0}
    assert "not-the-password" not in c.log("bob") + c.log("alice")
    out = c.run_job("mine.vertical", {"min_support": "0.5", "data": "pg"}, timeout=120)
    rep = next(v for v in out.values() if "itemsets" in v)
    # inner join of alice's a.csv and bob's PostgreSQL rows: customers 2 and 3
    assert rep["transactions"] == 2
    assert {frozenset(x["items"]): x["count"] for x in rep["itemsets"]} == brute_force(
        [{"tea", "milk", "jam"}, {"milk", "jam"}], "0.5"
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sets(st.sampled_from(ITEMS), max_size=5), max_size=12),
    st.lists(st.sampled_from(ITEMS + ["kiwi"]), unique=True, max_size=7),
)
def test_renumber_maps_names_exactly(transactions, universe) -> None:
    """Renumbering a party's items into an agreed universe (any order; items outside dropped)."""
    from anonymize.itemsets import TransactionDB
    from parties.joint.named import renumber

    names = sorted(set().union(*transactions)) if transactions else []
    db = TransactionDB.from_transactions([[names.index(x) for x in t] for t in transactions], items=range(len(names)))
    out, dropped = renumber(db, names, universe)
    assert dropped == len(set(names) - set(universe))
    assert out.n_transactions == len(transactions) and list(out.items) == list(range(len(universe)))
    for t, s in enumerate(transactions):
        row = out.indices[out.indptr[t] : out.indptr[t + 1]]
        assert list(row) == sorted(row) and {universe[i] for i in row} == s & set(universe)
