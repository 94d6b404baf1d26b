"""Aggregate queries as data: parsing, validation and vectorized row selection (pandas as oracle)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymize.errors import AnonymizeError
from anonymize.query import parse_query

DF = pd.DataFrame({"age": [25, 31, 47, 52, 38], "sex": ["F", "M", "F", "F", "M"], "salary": [10.0, 20, 30, 40, 50]})


def test_sum_with_two_predicates_selects_the_rows_pandas_selects():
    q = parse_query('{"agg": "sum", "column": "salary", "where": [["age", ">=", 30], ["sex", "==", "F"]]}')
    want = (DF["age"] >= 30) & (DF["sex"] == "F")
    np.testing.assert_array_equal(q.rows(DF), want.to_numpy())
    assert q.values(DF).sum() == 70.0
    assert q.to_json() == {"agg": "sum", "column": "salary", "where": [["age", ">=", 30], ["sex", "==", "F"]]}


def test_in_and_not_in_and_count_without_where():
    assert parse_query({"agg": "count"}).rows(DF).sum() == 5
    q = parse_query({"agg": "count", "where": [["age", "in", [25, 52]]]})
    assert q.rows(DF).tolist() == [True, False, False, True, False]
    q = parse_query({"agg": "count", "where": [["sex", "not in", ["M"]]]})
    assert q.rows(DF).sum() == 3


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("{", "not valid JSON"),
        ("[1]", "expected a JSON object"),
        ('{"agg": "median", "column": "age"}', "unknown or missing 'agg'"),
        ('{"agg": "sum"}', "needs a 'column'"),
        ('{"agg": "count", "column": "age"}', "takes no column"),
        ('{"agg": "count", "where": [["age", "~", 3]]}', "unknown operator"),
        ('{"agg": "count", "where": [["age", ">"]]}', "triple"),
        ('{"agg": "count", "where": [["age", "in", []]]}', "non-empty list"),
        ('{"agg": "count", "where": [["age", "==", {"x": 1}]]}', "number or a string"),
        ('{"agg": "count", "where": "age > 3"}', "must be a list"),
    ],
)
def test_malformed_queries_are_one_line_errors(text, fragment):
    with pytest.raises(AnonymizeError, match=fragment) as e:
        parse_query(text)
    assert "\n" not in str(e.value)


def test_type_mismatch_and_unknown_column_are_errors_not_empty_answers():
    with pytest.raises(AnonymizeError, match="is numeric"):
        parse_query({"agg": "count", "where": [["age", "==", "30"]]}).rows(DF)
    with pytest.raises(AnonymizeError, match="is text"):
        parse_query({"agg": "count", "where": [["sex", ">", 3]]}).rows(DF)
    with pytest.raises(AnonymizeError, match="unknown column 'zip'"):
        parse_query({"agg": "count", "where": [["zip", "==", 3]]}).rows(DF)
    with pytest.raises(AnonymizeError, match="numeric column"):
        parse_query({"agg": "sum", "column": "sex"}).values(DF)


def test_no_code_is_evaluated():
    # a "column" that looks like code is only ever a column name
    q = parse_query({"agg": "count", "where": [["__import__('os').system('false')", "==", 1]]})
    with pytest.raises(AnonymizeError, match="unknown column"):
        q.rows(DF)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=40),
    st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
    st.integers(-1, 10),
)
def test_comparisons_match_pandas(xs, op, v):
    df = pd.DataFrame({"x": xs})
    got = parse_query({"agg": "count", "where": [["x", op, v]]}).rows(df)
    want = {"==": df.x == v, "!=": df.x != v, "<": df.x < v, "<=": df.x <= v, ">": df.x > v, ">=": df.x >= v}[op]
    np.testing.assert_array_equal(got, want.to_numpy())
