"""A party's tables where they live (parties.sources): CSV, Parquet, DuckDB and a real PostgreSQL server.

Every source is read into the same KeyedTransactions as an independent pandas reading of the rows;
bad inputs are one line naming the data key, never a password or a data row.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import time

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parties.config import ConfigError, parse_config
from parties.guards.data_keys import canonical_data_keys
from parties.sources import SourceError, load_source, parse_source, source_from_flags


def expected(rows: pd.DataFrame, key: str, item: str) -> tuple[list, dict]:
    """Independent reading: records in key-text order, each with the set of its item names."""
    keys = sorted({str(k) for k in rows[key]})
    per: dict[str, set] = {k: set() for k in keys}
    for k, i in zip(rows[key], rows[item]):
        if i is not None and not (isinstance(i, float) and np.isnan(i)):
            per[str(k)].add(i)
    return keys, per


def as_sets(kt) -> list[set]:
    names = kt.item_names()
    return [
        {names[j] for j in kt.db.indices[kt.db.indptr[t] : kt.db.indptr[t + 1]]} for t in range(kt.db.n_transactions)
    ]


def check(kt, rows: pd.DataFrame, key: str = "k", item: str = "i") -> None:
    """Records come in any fixed order: compare them as key digest -> item set."""
    keys, per = expected(rows, key, item)
    assert kt.db.n_transactions == len(keys)
    by_digest = {hashlib.sha256(k.encode()).digest(): per[k] for k in keys}
    assert dict(zip((bytes(d) for d in kt.key_digests), as_sets(kt))) == by_digest
    assert kt.names == sorted(kt.names, key=lambda x: (isinstance(x, str), x))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.one_of(st.none(), st.sampled_from(["milk", "bread", "é-café", "x,y", "9"]))),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from(["csv", "parquet"]),
)
def test_text_items_from_files_match_an_independent_reading(tmp_path_factory, rows, fmt) -> None:
    d = tmp_path_factory.mktemp("src")
    df = pd.DataFrame(rows, columns=["k", "i"])
    path = d / f"lines.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
        df["i"] = df["i"].where(df["i"] != "", None)
    else:
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    kt = load_source(parse_source("s", {"path": str(path), "transaction": "k", "item": "i"}, d))
    if fmt == "csv":  # CSV has no types: DuckDB infers integers when every item looks like one
        as_int = kt.item_kind == "int"
        df["i"] = [None if v is None or v != v else (int(v) if as_int else str(v)) for v in df["i"]]
        if any(v is not None for _, v in rows):
            assert as_int == all(v in (None, "9") for _, v in rows)
    else:
        assert kt.item_kind == "text"
    check(kt, df)
    assert kt.lines == len({(str(k), i) for k, i in rows if i is not None})  # duplicates count once


def test_integer_items_stay_integers_and_globs_read_every_file(tmp_path) -> None:
    a = pd.DataFrame({"basket": ["b1", "b1", "b2"], "sku": [5, 7, 5]})
    b = pd.DataFrame({"basket": ["b3", "b2", "b2"], "sku": [12, 7, 7]})
    pq.write_table(pa.Table.from_pandas(a, preserve_index=False), tmp_path / "part-1.parquet")
    pq.write_table(pa.Table.from_pandas(b, preserve_index=False), tmp_path / "part-2.parquet")
    kt = load_source(parse_source("s", {"path": "part-*.parquet", "transaction": "basket", "item": "sku"}, tmp_path))
    assert kt.item_kind == "int" and kt.names == [5, 7, 12]
    check(kt, pd.concat([a, b]), "basket", "sku")


def test_duckdb_database_with_a_query(tmp_path) -> None:
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE lines AS SELECT * FROM (VALUES (1, 'tea'), (1, 'milk'), (2, 'tea'), (3, NULL)) t(b, s)")
    con.close()
    src = parse_source(
        "w", {"duckdb": "wh.duckdb", "query": "SELECT b, s FROM lines", "transaction": "b", "item": "s"}, tmp_path
    )
    kt = load_source(src)
    check(kt, pd.DataFrame({"b": [1, 1, 2, 3], "s": ["tea", "milk", "tea", None]}), "b", "s")
    assert kt.db.n_transactions == 3 and set() in as_sets(kt)  # a NULL item: a record without items


@pytest.mark.parametrize(
    ("table", "where", "match"),
    [
        ({"path": "x.csv", "transaction": "k"}, "item", "needs the column names"),
        ({"path": "x.xlsx", "transaction": "k", "item": "i"}, "format", "cannot tell the format"),
        ({"path": "x.csv", "duckdb": "d", "transaction": "k", "item": "i"}, "exactly one", "exactly one of"),
        ({"duckdb": "d.duckdb", "transaction": "k", "item": "i"}, "query", "needs a query"),
        (
            {"postgresql": "postgresql://u:pw@h/db", "query": "q", "transaction": "k", "item": "i"},
            "",
            "carries a password",
        ),
        ({"postgresql": "mysql://u@h/db", "query": "q", "transaction": "k", "item": "i"}, "", "postgresql://"),
        ({"path": "x.csv", "transaction": "k", "item": "i", "colour": "red"}, "", "unknown key data.s.colour"),
        ({"path": "x.dat", "transaction": "k", "item": "i"}, "", "has no columns"),
        ({"path": "x.csv", "query": "q", "transaction": "k", "item": "i"}, "", "go with duckdb or postgresql"),
    ],
)
def test_bad_tables_are_one_line(tmp_path, table, where, match) -> None:
    with pytest.raises(SourceError, match=match) as e:
        parse_source("s", table, tmp_path, "party.toml")
    assert "\n" not in str(e.value) and "pw" not in str(e.value).replace("password", "")


def test_read_errors_name_the_data_key_and_keep_details_local(tmp_path) -> None:
    (tmp_path / "x.csv").write_text("customer,product\n1,a\n,b\n")
    bad_col = parse_source("crm", {"path": "x.csv", "transaction": "customer", "item": "sku"}, tmp_path)
    with pytest.raises(SourceError) as e:
        load_source(bad_col, who="bank")
    assert str(e.value) == "party 'bank', data 'crm': no column 'sku'"
    assert "header line has 2 column(s)" in e.value.full() and str(tmp_path) not in str(e.value)
    null_key = parse_source("crm", {"path": "x.csv", "transaction": "customer", "item": "product"}, tmp_path)
    with pytest.raises(SourceError, match="rows with a NULL key"):
        load_source(null_key)
    missing = parse_source("crm", {"path": "nope*.csv", "transaction": "customer", "item": "product"}, tmp_path)
    with pytest.raises(SourceError, match="no such file"):
        load_source(missing)
    (tmp_path / "db.duckdb").write_bytes(b"")
    duckdb.connect(str(tmp_path / "ok.duckdb")).close()
    q = parse_source(
        "crm", {"duckdb": "ok.duckdb", "query": "SELECT * FROM nothing", "transaction": "a", "item": "b"}, tmp_path
    )
    with pytest.raises(SourceError, match="its query failed") as e:
        load_source(q)
    assert "nothing" in e.value.full()


def test_csv_parse_errors_do_not_quote_the_row(tmp_path) -> None:
    (tmp_path / "x.csv").write_text("k,i\n1,a\n2,b,secret-extra-field\n")
    src = parse_source("s", {"path": "x.csv", "transaction": "k", "item": "i"}, tmp_path)
    with pytest.raises(SourceError) as e:  # DuckDB's sniffer takes the wide row for the header: no column 'k'
        load_source(src)
    assert "secret-extra-field" not in e.value.full()  # neither the peers nor the party's own log see the row


def test_party_toml_data_tables_and_canonical_keys(tmp_path) -> None:
    doc = {
        "party": {"name": "alice", "listen": "127.0.0.1:1", "cert": "a.pem", "key": "a.key", "ca": "ca.pem"},
        "data": {
            "transactions": "alice.dat",
            "sales": {"path": "sales/*.parquet", "transaction": "basket_id", "item": "sku"},
            "again": {"path": "sales/*.parquet", "transaction": "basket_id", "item": "sku"},
        },
    }
    cfg = parse_config(doc, tmp_path)
    assert cfg.data["transactions"] == str(tmp_path / "alice.dat")
    assert cfg.data["sales"].kind == "file" and cfg.data["sales"].format == "parquet"
    assert canonical_data_keys(cfg.data)["sales"] == canonical_data_keys(cfg.data)["again"] == "again"
    doc["data"]["bad"] = {"postgresql": "postgresql://u:hunter2@h/db", "query": "q", "transaction": "a", "item": "b"}
    with pytest.raises(ConfigError) as e:
        parse_config(doc, tmp_path, "party.toml")
    assert "party.toml" in str(e.value) and "hunter2" not in str(e.value)


def test_flags_of_local_mine() -> None:
    with pytest.raises(SourceError, match="one data source"):
        source_from_flags(None)
    with pytest.raises(SourceError, match="needs a query"):
        source_from_flags(None, duckdb="x.duckdb", transaction="a", item="b")
    assert source_from_flags("x.dat").kind == "legacy"


def test_cli_mines_a_csv_with_names_and_refuses_bad_input_in_one_line(tmp_path) -> None:
    (tmp_path / "b.csv").write_text("basket,sku\n1,tea\n1,milk\n2,tea\n2,milk\n3,tea\n")
    ok = subprocess.run(
        [sys.executable, "-m", "parties.cli", "mine", str(tmp_path / "b.csv"), "--transaction", "basket",
         "--item", "sku", "--min-support", "0.5", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    import json

    got = {frozenset(x["items"]): x["count"] for x in json.loads(ok.stdout)["itemsets"]}
    assert got == {frozenset({"tea"}): 3, frozenset({"milk"}): 2, frozenset({"milk", "tea"}): 2}
    bad = subprocess.run(
        [sys.executable, "-m", "parties.cli", "mine", str(tmp_path / "b.csv"), "--transaction", "basket",
         "--item", "product"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "no column 'product'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- a real PostgreSQL server
def pg_source(pg_server, tmp_path, query: str, password: str | None = None, mode: int = 0o600):
    pw = pg_server.password_file(tmp_path / "pg.pass", password, mode)
    table = {"postgresql": pg_server.url, "password_file": str(pw), "query": query, "transaction": "k", "item": "i"}
    return parse_source("shop", table, tmp_path)


def test_postgresql_reads_the_same_as_a_file(pg_server, tmp_path) -> None:
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"k": rng.integers(0, 400, 3000), "i": rng.choice(["tea", "milk", "jam", "rye"], 3000)})
    pg_server.ingest("lines_a", pa.Table.from_pandas(df, preserve_index=False))
    kt = load_source(pg_source(pg_server, tmp_path, "SELECT k, i FROM lines_a"))
    check(kt, df)
    df.to_csv(tmp_path / "same.csv", index=False)
    kt2 = load_source(parse_source("f", {"path": "same.csv", "transaction": "k", "item": "i"}, tmp_path))
    assert dict(zip(map(bytes, kt.key_digests), map(frozenset, as_sets(kt)))) == dict(
        zip(map(bytes, kt2.key_digests), map(frozenset, as_sets(kt2)))
    )


def test_postgresql_failures_are_one_line_without_the_password(pg_server, tmp_path) -> None:
    with pytest.raises(SourceError) as e:
        load_source(pg_source(pg_server, tmp_path, "SELECT 1 AS k, 'a' AS i", password="wrong-password"), who="p")
    assert str(e.value) == "party 'p', data 'shop': cannot connect to its PostgreSQL server"
    assert "password authentication failed" in e.value.full() and "wrong-password" not in e.value.full()
    with pytest.raises(SourceError, match="readable by others"):
        load_source(pg_source(pg_server, tmp_path, "SELECT 1 AS k, 'a' AS i", mode=0o644))
    with pytest.raises(SourceError, match="its query failed"):
        load_source(pg_source(pg_server, tmp_path, "SELECT k, i FROM no_such_table"))
    with pytest.raises(SourceError, match="no column 'i'"):
        load_source(pg_source(pg_server, tmp_path, "SELECT 1 AS k, 'a' AS item"))
    pw = pg_server.password_file(tmp_path / "pg.pass")
    closed = f"postgresql://ppdm@127.0.0.1:{pg_server.port + 1 if pg_server.port < 65535 else 1}/postgres"
    src = parse_source(
        "shop",
        {"postgresql": closed, "password_file": str(pw), "query": "SELECT 1", "transaction": "k", "item": "i"},
        tmp_path,
    )
    with pytest.raises(SourceError, match="cannot connect"):
        load_source(src)


def test_postgresql_connection_dropped_mid_read_is_one_error(pg_server, tmp_path) -> None:
    """A backend terminated while its rows stream in: one SourceError, nothing half-built."""
    query = "SELECT g AS k, 'item' || (g % 50)::text AS i FROM generate_series(1, 30000000) AS g"
    src = pg_source(pg_server, tmp_path, query)
    errors: list[BaseException] = []

    def read() -> None:
        try:
            load_source(src, who="p")
        except BaseException as e:  # the test inspects it
            errors.append(e)

    t = threading.Thread(target=read)
    t.start()
    deadline = time.monotonic() + 60
    killed = 0
    while t.is_alive() and time.monotonic() < deadline and not killed:
        time.sleep(0.5)
        with pg_server.connect() as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE query LIKE '%generate_series%' AND pid <> pg_backend_pid()"
            )
            killed = cur.fetchone()[0]
    t.join(120)
    assert killed and not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], SourceError), errors
    assert str(errors[0]).startswith("party 'p', data 'shop': ") and "\n" not in str(errors[0])


def test_a_table_of_columns_is_read_by_its_columns(tmp_path) -> None:
    """[data.KEY] naming neither transaction nor item is a table of columns (joint publishing reads
    it): a CSV, Parquet or DuckDB query gives the columns asked for, the optional ones it has; a
    missing required column is one line naming it, never a value."""
    from parties.sources.reader import read_columns

    df = pd.DataFrame({"cid": ["c1", "c2", "c3"], "age": [39, 50, 38], "sex": ["F", "M", "F"]})
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet")
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    con.execute("CREATE TABLE people AS SELECT * FROM read_parquet(?)", [str(tmp_path / "t.parquet")])
    con.close()
    sources = [
        parse_source("t", {"path": "t.csv"}, tmp_path),
        parse_source("t", {"path": "t.parquet"}, tmp_path),
        parse_source("t", {"duckdb": "wh.duckdb", "query": "SELECT * FROM people WHERE age > 30"}, tmp_path),
    ]
    for src in sources:
        assert src.transaction is None and src.item is None
        got = read_columns(src, ["cid"], ["sex", "salary"])
        assert list(got.columns) == ["cid", "sex"]
        assert sorted(zip(got["cid"], got["sex"])) == [("c1", "F"), ("c2", "M"), ("c3", "F")]
        with pytest.raises(SourceError) as e:
            read_columns(src, ["cid", "income"])
        assert str(e.value) == "data 't': no column 'income'" and "39" not in (e.value.full())
    with pytest.raises(SourceError, match="is not a table with columns"):
        read_columns(parse_source("t", "x.dat", tmp_path), ["cid"])
    # naming one of transaction / item is still refused when the config is read
    with pytest.raises(SourceError, match="needs the column names"):
        parse_source("t", {"path": "t.csv", "item": "sex"}, tmp_path)
