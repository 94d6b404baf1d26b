"""Counts filtered on audited values (issue 16, item 4): ``count where salary >= X and id == 3``,
binary-searched over X, pinned row 3's salary with 17 answered queries and no denial.

Oracle for "pinned": the interval of salaries consistent with the answers released (computed
here from the answers alone, as the attacker does).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonymize.audit import TableAuditor


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame({"id": np.arange(10), "dept": list("aabbbccdde"), "salary": rng.integers(20, 200, 10) * 1000})


def binary_search(ta: TableAuditor, row: int, lo: int = 0, hi: int = 1 << 20) -> tuple[int, int, int, int]:
    """The attacker: narrow row's salary to [lo, hi) with count queries; (lo, hi, answered, denied)."""
    answered = denied = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        out = ta.ask({"agg": "count", "where": [["salary", ">=", mid], ["id", "==", row]]})
        if not out.allowed:
            denied += 1
            break
        answered += 1
        lo, hi = (mid, hi) if out.value == 1 else (lo, mid)
    return lo, hi, answered, denied


@pytest.mark.parametrize(
    ("public", "filterable"),
    [((), ()), (("id",), ()), (("id",), ("salary",))],
    ids=["default", "id-public", "id-public-salary-filterable"],
)
def test_binary_search_by_counts_is_denied_before_the_value_is_pinned(table, public, filterable):
    ta = TableAuditor(table, "simulatable-sum", public=public, filterable=filterable)
    lo, hi, answered, denied = binary_search(ta, 3)
    assert denied == 1 and hi - lo > 1 and answered == 0
    assert lo <= table.salary[3] < hi


def test_without_the_guard_the_search_pins_the_value(table):
    """What the attack achieved before: with salary declared public nothing protects it (17-20 answers)."""
    ta = TableAuditor(table, "simulatable-sum", public=("id", "salary"))
    lo, hi, answered, denied = binary_search(ta, 3)
    assert denied == 0 and hi - lo == 1 and lo == table.salary[3] and answered == 20


def test_filterable_counts_are_audited_as_sums_of_indicators(table):
    ta = TableAuditor(table, "sum", public=("id",), filterable=("salary",))
    everyone = ta.ask({"agg": "count", "where": [["salary", ">=", 100_000]]})
    assert everyone.allowed and everyone.value == int((table.salary >= 100_000).sum())
    # by department: public row sets of several rows, answered
    assert ta.ask({"agg": "count", "where": [["salary", ">=", 100_000], ["dept", "==", "b"]]}).allowed
    # all but row 3: differencing with the first count gives row 3's indicator
    diff = ta.ask({"agg": "count", "where": [["salary", ">=", 100_000], ["id", "!=", 3]]})
    assert not diff.allowed and diff.value is None
    # another threshold is another indicator: its own audit
    assert ta.ask({"agg": "count", "where": [["salary", ">=", 50_000], ["id", "!=", 3]]}).allowed


def test_predicates_on_public_and_text_columns_stay_free(table):
    ta = TableAuditor(table, "sum", public=("id",))
    assert ta.ask({"agg": "sum", "column": "salary", "where": [["dept", "==", "b"]]}).allowed
    assert ta.ask({"agg": "count", "where": [["id", "<", 5]]}).allowed
    out = ta.ask({"agg": "sum", "column": "id", "where": [["salary", ">", 0]]})
    assert not out.allowed and "audited column 'salary'" in out.decision.reason


def test_bad_column_lists_are_one_line(table):
    from anonymize.audit import AuditError

    with pytest.raises(AuditError, match="public column 'nope' is not in the table"):
        TableAuditor(table, "sum", public=("nope",))
    with pytest.raises(AuditError, match="listed as public and as filterable"):
        TableAuditor(table, "sum", public=("salary",), filterable=("salary",))
