"""Regenerate the small keyed example tables (synthetic, seeded): a bank and an insurer, two retailers.

    python examples/bank-insurer/make_tables.py

* ``bank-insurer/bank.csv`` and ``insurer.csv``: one row per (customer_id, product). The two
  customer bases overlap partly (about 60% of each); a customer with a mortgage tends to hold
  home insurance, one with a car loan car insurance. For ``ppdm mine --local --split vertical``.
* ``two-retailers/north.csv`` and ``south.csv``: one row per (basket_id, sku) with text SKUs;
  the same catalogue, different baskets. For ``ppdm mine --local --split horizontal``.

The data is made up by this script (no real person or shop); it is part of ppdm (Apache-2.0).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]  # examples/


def _write(path: Path, header: tuple[str, str], rows: list[tuple]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def bank_insurer(rng: np.random.Generator, n_customers: int = 600) -> None:
    ids = rng.permutation(np.arange(10_001, 10_001 + n_customers))
    bank_ids = set(ids[: int(n_customers * 0.75)].tolist())
    ins_ids = set(ids[int(n_customers * 0.3) :].tolist())
    bank, ins = [], []
    for c in sorted(bank_ids | ins_ids):
        mortgage, car_loan = rng.random() < 0.35, rng.random() < 0.3
        if c in bank_ids:
            held = ["checking"] if rng.random() < 0.9 else []
            held += ["savings"] if rng.random() < 0.5 else []
            held += ["credit_card"] if rng.random() < 0.45 else []
            held += ["mortgage"] if mortgage else []
            held += ["car_loan"] if car_loan else []
            bank += [(c, p) for p in held] or [(c, "")]  # a customer without products: an empty item
        if c in ins_ids:
            held = ["home"] if (mortgage and rng.random() < 0.85) or rng.random() < 0.1 else []
            held += ["car"] if (car_loan and rng.random() < 0.9) or rng.random() < 0.25 else []
            held += ["life"] if rng.random() < 0.3 else []
            held += ["travel"] if rng.random() < 0.2 else []
            ins += [(c, p) for p in held] or [(c, "")]
    _write(HERE / "bank-insurer" / "bank.csv", ("customer_id", "product"), bank)
    _write(HERE / "bank-insurer" / "insurer.csv", ("customer_id", "product"), ins)


def two_retailers(rng: np.random.Generator, n_baskets: int = 800) -> None:
    skus = ["bread", "butter", "milk", "coffee", "sugar", "tea", "eggs", "jam", "apples", "beer", "chips", "salsa"]
    bundles = [("bread", "butter"), ("coffee", "sugar"), ("chips", "salsa", "beer"), ("tea", "milk")]
    for name, start in (("north", 1), ("south", 50_001)):
        rows = []
        for b in range(start, start + n_baskets):
            basket = {skus[i] for i in rng.choice(len(skus), size=rng.integers(1, 4), replace=False)}
            for bundle in bundles:
                if rng.random() < 0.22:
                    basket.update(bundle)
            rows += [(f"{name[0].upper()}{b:06d}", s) for s in sorted(basket)]
        _write(HERE / "two-retailers" / f"{name}.csv", ("basket_id", "sku"), rows)


if __name__ == "__main__":
    rng = np.random.default_rng(20261126)
    bank_insurer(rng)
    two_retailers(rng)
    print(f"wrote {HERE / 'bank-insurer'}/{{bank,insurer}}.csv and {HERE / 'two-retailers'}/{{north,south}}.csv")
