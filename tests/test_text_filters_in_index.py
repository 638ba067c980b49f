"""A filter evaluated inside the BM25 index (``engines/local/_text_filters.py``): the query it
becomes keeps exactly the rows the row mask keeps (SQL's three-valued logic, NULLs, signed and
unsigned integers at their extremes), and a filtered text search returns the rows and scores of
the unfiltered search masked in NumPy, for filters the index evaluates and filters it does not
(strings, floats), scattered over the table, at several selectivities."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval import Bm25Search, Comparison, InList, IsNull, SearchPlan
from hotdata_retrieval.engines.local import LocalEngine, bm25
from hotdata_retrieval.engines.local._text_filters import filter_query
from hotdata_retrieval.engines.local.masks import passing_rows
from hotdata_retrieval.plan.filters import And, Between, Not, Or, Predicate

ROWS = 300
WORDS = ["fox", "owl", "den", "red", "river", "stone", "moss", "pine"]
U64_TOP = 2**64 - 1
I64_LOW = -(2**63)


def _columns() -> pa.Table:
    generator = np.random.default_rng(11)
    small = generator.integers(-3, 4, ROWS)
    nulls = generator.random(ROWS) < 0.2
    wide = generator.integers(-(2**62), 2**62, ROWS)
    wide[:3] = [I64_LOW, 2**63 - 1, 0]
    unsigned = generator.integers(0, 2**63, ROWS, dtype=np.uint64) * np.uint64(2)
    unsigned[:2] = [U64_TOP, 0]
    return pa.table(
        {
            "small": pa.array(small, pa.int8(), mask=nulls),
            "wide": pa.array(wide, pa.int64()),
            "unsigned": pa.array(unsigned, pa.uint64(), mask=generator.random(ROWS) < 0.1),
            "word": pa.array([WORDS[i % 8] for i in range(ROWS)]),
        }
    )


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tuple[bm25.Bm25Index, pa.Table]:
    data = _columns()
    directory = tmp_path_factory.mktemp("bm25") / "index"
    bm25.build_bm25_index(directory, ["fox den"] * ROWS, data.select(bm25.filter_columns(data)))
    return bm25.Bm25Index(directory), data


def _every_row(data: pa.Table) -> Callable[[str], tuple[np.ndarray, np.ndarray]]:
    """The sample a small table has: every row (``LoadedTable.sampled``'s form)."""

    def sample(column: str) -> tuple[np.ndarray, np.ndarray]:
        values = data.column(column).combine_chunks()
        dtype = np.uint64 if pa.types.is_uint64(values.type) else np.int64
        present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        return np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False), dtype=dtype), present

    return sample


_OPERATORS = ["=", "!=", "<", "<=", ">", ">="]
_VALUES = {
    "small": st.integers(-4, 4),
    # near values, values a few coarse buckets (2**56 wide here) apart, and the extremes
    "wide": st.sampled_from([I64_LOW, -(2**57), -1, 0, 1, 5, 2**57, 3 * 2**56 + 5, 2**63 - 1]),
    "unsigned": st.sampled_from([0, 1, 6, 2**57, 2**62, 2**63 - 1]),  # filter values are i64s
}


def _leaf(column: str) -> st.SearchStrategy[Predicate]:
    values = _VALUES[column]
    return st.one_of(
        st.builds(
            lambda op, v: Comparison(column=column, operator=op, value=v),
            st.sampled_from(_OPERATORS),
            values,
        ),
        st.builds(lambda low, high: Between(column=column, low=low, high=high), values, values),
        st.builds(
            lambda vs, neg: InList(column=column, values=vs, negated=neg),
            st.lists(values, max_size=4),
            st.booleans(),
        ),
        st.builds(lambda neg: IsNull(column=column, negated=neg), st.booleans()),
    )


_LEAVES = st.one_of(*(_leaf(column) for column in _VALUES))
_PREDICATES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.builds(lambda ops: And(operands=tuple(ops)), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda ops: Or(operands=tuple(ops)), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda op: Not(operand=op), inner),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(predicate=_PREDICATES)
def test_the_index_keeps_the_rows_the_mask_keeps(
    index: tuple[bm25.Bm25Index, pa.Table], predicate: Predicate
) -> None:
    bm25_index, data = index
    found = filter_query(predicate, bm25_index, data.schema, _every_row(data))
    assert found is not None  # integer columns and integer values: always translated
    query, share = found.query, found.share
    searcher = bm25_index._searcher
    hits = searcher.search(query, limit=ROWS, count=False).hits
    rowids = sorted(bm25_index._rowids([address for _, address in hits]).tolist())
    expected = passing_rows(predicate, data)
    assert rowids == np.flatnonzero(expected).tolist()
    assert share == pytest.approx(expected.mean())
    # counted by binary search of each column's sorted sample: the same share
    every = _every_row(data)

    def ordered(column: str) -> np.ndarray:
        values, present = every(column)
        return np.sort(values[present])

    counted = filter_query(predicate, bm25_index, data.schema, every, ordered)
    assert counted is not None and counted.share == share


@settings(max_examples=300, deadline=None)
@given(
    predicate=_PREDICATES,
    rowids=st.lists(st.integers(0, ROWS - 1), max_size=40),
)
def test_a_filter_tested_on_some_rows_keeps_what_the_mask_keeps(
    index: tuple[bm25.Bm25Index, pa.Table], predicate: Predicate, rowids: list[int]
) -> None:
    """A filter tested on a search's hits alone (any rows, in any order, repeated) keeps
    those of them the row mask keeps: SQL's three-valued logic over NULLs and extremes."""
    bm25_index, data = index
    found = filter_query(predicate, bm25_index, data.schema, _every_row(data))
    assert found is not None
    taken = np.array(rowids, dtype=np.int64)
    every = _every_row(data)

    def rows(column: str) -> tuple[np.ndarray, np.ndarray]:
        values, present = every(column)
        return values[taken], present[taken]

    kept = found.keeps(rows)
    assert kept.dtype == np.bool_
    assert kept.tolist() == passing_rows(predicate, data)[taken].tolist()


@pytest.mark.parametrize(
    "predicate",
    [
        Comparison(column="word", operator="=", value="fox"),  # a string column
        Comparison(column="small", operator=">", value=1.5),  # a float value
        Comparison(column="small", operator="=", value="1"),  # a string value
        Comparison(column="small", operator="=", value=True),  # a boolean value
        Comparison(column="unsigned", operator=">", value=-1),  # outside the field's range
        And(operands=(IsNull(column="small"), Comparison(column="word", operator="=", value="x"))),
    ],
)
def test_what_the_index_cannot_read_as_sql_is_left_to_the_mask(
    index: tuple[bm25.Bm25Index, pa.Table], predicate: Predicate
) -> None:
    bm25_index, data = index
    assert filter_query(predicate, bm25_index, data.schema, _every_row(data)) is None


# -- through the engine ---------------------------------------------------------------------

ENGINE_ROWS = 4_000


def _table() -> pa.Table:
    generator = np.random.default_rng(5)
    texts = [
        " ".join(generator.choice(WORDS, size=generator.integers(1, 6))) for _ in range(ENGINE_ROWS)
    ]
    texts[::97] = [None] * len(texts[::97])
    ids = generator.permutation(ENGINE_ROWS) * 3  # keys out of row order
    shuffled = generator.permutation(ENGINE_ROWS)
    maybe = generator.integers(0, 50, ENGINE_ROWS)
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "body": texts,
            "shuffled": pa.array(shuffled, pa.int64()),
            "bucket": pa.array(np.arange(ENGINE_ROWS) % 100, pa.int32()),
            "maybe": pa.array(maybe, pa.int16(), mask=generator.random(ENGINE_ROWS) < 0.3),
            "tag": pa.array([WORDS[i] for i in generator.integers(0, 8, ENGINE_ROWS)]),
            "ratio": pa.array(generator.random(ENGINE_ROWS), pa.float64()),
        }
    )
    # a scattered column with NULLs, spanning many coarse buckets
    sparse = pa.array(shuffled, pa.int64(), mask=generator.random(ENGINE_ROWS) < 0.3)
    return table.append_column("sparse", sparse)


def _numpy(data: pa.Table, column: str) -> tuple[np.ndarray, np.ndarray]:
    values = data.column(column).combine_chunks()
    present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False)), present


def _filters(data: pa.Table) -> list[tuple[str, Predicate, np.ndarray]]:
    """Each filter with the rows it keeps, computed here in NumPy (a NULL never kept)."""
    shuffled, _ = _numpy(data, "shuffled")
    bucket, _ = _numpy(data, "bucket")
    maybe, present = _numpy(data, "maybe")
    tag = np.array(data.column("tag").to_pylist())
    ratio, _ = _numpy(data, "ratio")
    sparse, known = _numpy(data, "sparse")
    cases: list[tuple[str, Predicate, np.ndarray]] = []
    for share in (0.005, 0.01, 0.05, 0.1, 0.3):
        kept = int(ENGINE_ROWS * share)
        low = 1234 % (ENGINE_ROWS - kept)
        cases.append(
            (
                f"scattered range {share:.1%}",
                Between(column="shuffled", low=low, high=low + kept - 1),
                (shuffled >= low) & (shuffled <= low + kept - 1),
            )
        )
    cases += [
        (
            "one-sided range 5%",
            Comparison(column="shuffled", operator=">=", value=ENGINE_ROWS - ENGINE_ROWS // 20),
            shuffled >= ENGINE_ROWS - ENGINE_ROWS // 20,
        ),
        (
            "one-sided range 1%",
            Comparison(column="shuffled", operator="<", value=ENGINE_ROWS // 100),
            shuffled < ENGINE_ROWS // 100,
        ),
        # ranges over many coarse buckets: the inner buckets whole, the two at the ends cut
        (
            "wide range keeping no row",
            Between(column="shuffled", low=ENGINE_ROWS, high=2 * ENGINE_ROWS),
            np.zeros(ENGINE_ROWS, dtype=bool),
        ),
        (
            "wide range over NULLs",
            Between(column="sparse", low=1000, high=1319),
            known & (sparse >= 1000) & (sparse <= 1319),
        ),
        (
            "NOT a wide range over NULLs",
            Not(operand=Between(column="sparse", low=100, high=3899))
            & Comparison(column="bucket", operator="<", value=50),
            known & ~((sparse >= 100) & (sparse <= 3899)) & (bucket < 50),
        ),
        ("equality 1%", Comparison(column="bucket", operator="=", value=7), bucket == 7),
        (
            "IN list",
            InList(column="bucket", values=(3, 7, 11, 99)),
            np.isin(bucket, [3, 7, 11, 99]),
        ),
        (
            "NOT IN over NULLs",
            InList(column="maybe", values=tuple(range(1, 50)), negated=True),
            present & ~np.isin(maybe, range(1, 50)),
        ),
        (
            "IS NULL",
            IsNull(column="maybe") & Comparison(column="bucket", operator="<", value=20),
            ~present & (bucket < 20),
        ),
        (
            "NOT over NULLs",
            Not(operand=Comparison(column="maybe", operator=">", value=2))
            & (Comparison(column="bucket", operator=">=", value=90)),
            present & ~(maybe > 2) & (bucket >= 90),
        ),
        (
            "OR of ranges",
            Or(
                operands=(
                    Comparison(column="shuffled", operator="<", value=30),
                    Comparison(column="shuffled", operator=">", value=ENGINE_ROWS - 30),
                )
            ),
            (shuffled < 30) | (shuffled > ENGINE_ROWS - 30),
        ),
        ("string", Comparison(column="tag", operator="=", value="owl"), tag == "owl"),
        (
            "string and number",
            Comparison(column="tag", operator="=", value="owl")
            & Comparison(column="bucket", operator="<", value=10),
            (tag == "owl") & (bucket < 10),
        ),
        ("float", Comparison(column="ratio", operator=">", value=0.97), ratio > 0.97),
        ("nothing", Comparison(column="bucket", operator=">", value=500), bucket > 500),
        # wide: tested on the hits of a prefix of the unfiltered order, NULLs never kept
        (
            "wide NOT over NULLs",
            Not(operand=Comparison(column="maybe", operator=">", value=40)),
            present & ~(maybe > 40),
        ),
        (
            "wide IN over NULLs",
            InList(column="maybe", values=tuple(range(0, 50, 2))),
            present & (maybe % 2 == 0),
        ),
        (
            "wide NOT IN over NULLs",
            InList(column="maybe", values=(1, 2, 3), negated=True),
            present & ~np.isin(maybe, [1, 2, 3]),
        ),
        (
            "wide OR of IS NULL",
            IsNull(column="maybe") | Comparison(column="bucket", operator=">=", value=50),
            ~present | (bucket >= 50),
        ),
        ("almost every row", Comparison(column="bucket", operator="!=", value=7), bucket != 7),
    ]
    return cases


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    engine = LocalEngine(tmp_path_factory.mktemp("engine") / "db")
    engine.load_table("docs", _table(), key_column="id", text_columns=["body"])
    yield engine
    engine.close()


@pytest.mark.parametrize("case", range(len(_filters(_table()))))
@pytest.mark.parametrize("limit", [1, 10, 57])
def test_a_filtered_text_search_is_the_unfiltered_search_masked(
    engine: LocalEngine, case: int, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _table()
    name, predicate, kept = _filters(data)[case]
    handed: list[str] = []
    search = bm25.Bm25Index.search

    def spied(self: bm25.Bm25Index, *args: Any, **options: Any) -> Any:
        routes = [route for route in ("where", "test", "mask") if options.get(route) is not None]
        if routes:
            handed.append(routes[0])
        return search(self, *args, **options)

    monkeypatch.setattr(bm25.Bm25Index, "search", spied)
    keys = np.asarray(data.column("id").to_numpy())
    kept_keys = set(keys[kept].tolist())
    for text in ("fox", "owl den", "red river stone", "pine moss fox owl"):
        branch = Bm25Search(table="docs", column="body", query_text=text)
        every = engine.search(SearchPlan(source=branch, columns=["id"], limit=ENGINE_ROWS))
        reference = sorted((-hit.score, hit.key) for hit in every.hits if hit.key in kept_keys)[
            :limit
        ]
        found = engine.search(
            SearchPlan(source=branch, columns=["id"], limit=limit, filter=predicate)
        )
        assert [(-hit.score, hit.key) for hit in found.hits] == reference
    assert handed == [ROUTES.get(name, "mask")] * len(handed) and handed


ROUTES = {
    "scattered range 0.5%": "where",
    "scattered range 1.0%": "where",
    "scattered range 5.0%": "where",
    "scattered range 10.0%": "where",
    "scattered range 30.0%": "test",
    "one-sided range 5%": "where",
    "one-sided range 1%": "where",
    "wide range keeping no row": "where",
    "wide range over NULLs": "where",
    "NOT a wide range over NULLs": "where",
    "equality 1%": "where",
    "IN list": "where",
    "NOT IN over NULLs": "where",
    "IS NULL": "where",
    "NOT over NULLs": "where",
    "OR of ranges": "where",
    "nothing": "where",
    "wide NOT over NULLs": "test",
    "wide IN over NULLs": "test",
    "wide NOT IN over NULLs": "test",
    "wide OR of IS NULL": "test",
    "almost every row": "test",
}
"""How the index evaluates each filter over integer columns: in its query (``where``: one
keeping at most 1 row in 8), or on a prefix's hits (``test``: one keeping more); the other
filters are a row mask."""


@pytest.mark.parametrize(
    ("predicate", "postings"),
    [
        (Comparison(column="small", operator="=", value=1), True),
        (InList(column="small", values=(1, 2)), True),
        (Not(operand=Comparison(column="small", operator="!=", value=1)), True),
        (
            Or(operands=(InList(column="small", values=(1,)), InList(column="wide", values=(0,)))),
            True,
        ),
        (Comparison(column="small", operator="!=", value=1), False),
        (Between(column="small", low=1, high=2), True),  # two values: their postings
        (Between(column="wide", low=0, high=3 * 2**56), True),  # four coarse buckets
        (Between(column="wide", low=0, high=2**62), False),  # a fast field's range
        (Comparison(column="wide", operator="<", value=0), False),  # many coarse buckets
        (Comparison(column="wide", operator=">", value=2**63 - 3), True),  # two values left
        (Comparison(column="small", operator=">=", value=2), False),  # no coarse field
        (InList(column="small", values=(1, 2), negated=True), False),
        (IsNull(column="small"), False),
        (
            And(
                operands=(InList(column="small", values=(1,)), IsNull(column="wide", negated=True))
            ),
            False,
        ),
    ],
)
def test_a_filter_reads_postings_alone_only_of_equalities(
    index: tuple[bm25.Bm25Index, pa.Table], predicate: Predicate, postings: bool
) -> None:
    """Equalities and IN lists read postings (each text term is then intersected with them);
    a range, an inequality or a presence test scans a fast field."""
    bm25_index, data = index
    found = filter_query(predicate, bm25_index, data.schema, _every_row(data))
    assert found is not None and found.postings is postings
