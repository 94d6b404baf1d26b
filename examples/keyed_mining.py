"""Joint mining on keyed tables with text items, between real local daemons, checked against the pooled data.

    python examples/keyed_mining.py

1. A bank and an insurer know their customers by ``customer_id``; each has customers the other
   lacks. A vertical job aligns them by Private-ID (no party learns which of its customers the
   other has) and mines the products held together by the common customers.
2. Two retailers sell from the same catalogue (text SKUs); a horizontal job agrees on the items
   by secure union of the locally frequent names and mines both shops' baskets as one.

Each result is compared with a plain run on the pooled data (pandas: the inner join of the two
tables; the concatenation of the baskets).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import pandas as pd

from parties.analyst import HorizontalMining, VerticalMining, mine_local_sources
from parties.sources import parse_source

HERE = Path(__file__).resolve().parent


def table(path: Path, key: str, item: str):
    """A party's [data.transactions] table (the same shape as in party.toml)."""
    return parse_source("transactions", {"path": str(path), "transaction": key, "item": item}, HERE)


def pooled_itemsets(frame: pd.DataFrame, key: str, item: str, minsup: str) -> dict:
    baskets = [set(g.dropna()) for _, g in frame.groupby(key)[item]]
    need = math.ceil(Fraction(minsup) * len(baskets))
    items = sorted(set().union(*baskets))
    out = {}
    for k in range(1, 4):
        for c in itertools.combinations(items, k):
            n = sum(1 for b in baskets if set(c) <= b)
            if n >= need:
                out[frozenset(c)] = n
    return out


def main() -> None:
    bank, insurer = HERE / "bank-insurer" / "bank.csv", HERE / "bank-insurer" / "insurer.csv"
    res = mine_local_sources(
        [table(bank, "customer_id", "product"), table(insurer, "customer_id", "product")],
        VerticalMining(min_support="0.05", min_confidence="0.6", max_len=3),
        progress=False,
    )
    b, i = pd.read_csv(bank), pd.read_csv(insurer)
    common = set(b.customer_id) & set(i.customer_id)
    joined = pd.concat([b, i])
    joined = joined[joined.customer_id.isin(common)]
    want = pooled_itemsets(joined, "customer_id", "product", "0.05")
    got = {frozenset(x["items"]): x["count"] for x in res["itemsets"]}
    assert res["transactions"] == len(common) and got == want, "vertical result differs from the inner join"
    best = max(res["rules"], key=lambda r: (r["confidence"], r["support"]))
    print(f"bank + insurer: {len(common)} common customers (of {b.customer_id.nunique()} and "
          f"{i.customer_id.nunique()}), {len(got)} itemsets, {len(res['rules'])} rules, e.g. "
          f"{{{', '.join(best['antecedent'])}}} -> {{{', '.join(best['consequent'])}}} ({best['confidence']:.2f}); "
          "equal to the inner join's")  # fmt: skip

    north, south = HERE / "two-retailers" / "north.csv", HERE / "two-retailers" / "south.csv"
    res = mine_local_sources(
        [table(north, "basket_id", "sku"), table(south, "basket_id", "sku")],
        HorizontalMining(min_support="0.1", min_confidence="0.6", max_len=3),
        progress=False,
    )
    want = pooled_itemsets(pd.concat([pd.read_csv(north), pd.read_csv(south)]), "basket_id", "sku", "0.1")
    got = {frozenset(x["items"]): x["count"] for x in res["itemsets"]}
    assert got == want, "horizontal result differs from the pooled baskets"
    print(f"two retailers: {res['transactions']} baskets, {len(got)} itemsets, {len(res['rules'])} rules; "
          "equal to the pooled baskets'")  # fmt: skip


if __name__ == "__main__":
    main()
