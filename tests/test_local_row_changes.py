"""``LocalEngine.upsert_rows`` and ``delete_rows``: rows changed by key in one commit.

The reference is a Python dict from key to row, changed by the same operations; after each
operation the table's rows, its BM25 index and its nearest search must agree with it.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan import Bm25Search, NearestNeighborSearch, SearchPlan

WORDS = ["apple", "river", "stone", "cloud", "ember"]


def _rows(rows: dict[str, tuple[str, list[float]]]) -> pa.Table:
    keys = sorted(rows)
    return pa.table(
        {
            "id": pa.array(keys, pa.string()),
            "body": pa.array([rows[key][0] for key in keys], pa.string()),
            "vector": pa.array([rows[key][1] for key in keys], pa.list_(pa.float32())),
        }
    )


def _stored(engine: LocalEngine) -> dict[str, tuple[str, list[float]]]:
    table = engine.read_table("docs").to_pylist()
    return {row["id"]: (row["body"], row["vector"]) for row in table}


def _close(left: dict, right: dict) -> bool:
    return left.keys() == right.keys() and all(
        left[key][0] == right[key][0]
        and all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(left[key][1], right[key][1]))
        for key in left
    )


row_strategy = st.tuples(
    st.sampled_from(WORDS),
    st.lists(st.floats(0.125, 1.0, width=32), min_size=2, max_size=2),
)
operation = st.one_of(
    st.tuples(
        st.just("upsert"), st.dictionaries(st.sampled_from("abcdef"), row_strategy, max_size=3)
    ),
    st.tuples(st.just("delete"), st.lists(st.sampled_from("abcdefgh"), max_size=3)),
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations=st.lists(operation, min_size=1, max_size=4))
def test_changes_match_a_dict_model(tmp_path_factory, operations) -> None:
    engine = LocalEngine(tmp_path_factory.mktemp("rows"))
    model = {"a": ("apple", [1.0, 0.5])}
    engine.load_table("docs", _rows(model), text_columns=["body"])
    for kind, argument in operations:
        if kind == "upsert":
            if not argument:
                continue
            engine.upsert_rows("docs", _rows(argument))
            model.update(argument)
        else:
            removed = engine.delete_rows("docs", argument)
            assert removed == len(set(argument) & model.keys())
            for key in argument:
                model.pop(key, None)
        assert _close(_stored(engine), model)
    for word in WORDS:
        hits = engine.search(
            SearchPlan(source=Bm25Search(table="docs", column="body", query_text=word), limit=10)
        ).hits
        assert sorted(hit.key for hit in hits) == sorted(
            k for k, v in model.items() if v[0] == word
        )
    if model:
        query = [1.0, 0.0]
        hits = engine.search(
            SearchPlan(
                source=NearestNeighborSearch(table="docs", column="vector", query_vector=query),
                limit=len(model),
            )
        ).hits

        def cosine(vector: list[float]) -> float:
            v = np.asarray(vector, dtype=np.float64)
            return 1.0 - float(v[0] / np.linalg.norm(v))

        # Ordered as the engine documents: the distance rounded to Float32, then the key.
        expected = sorted(model, key=lambda key: (np.float32(cosine(model[key][1])), key))
        assert [hit.key for hit in hits] == expected


@pytest.fixture
def engine(tmp_path) -> LocalEngine:
    engine = LocalEngine(tmp_path / "db")
    engine.load_table(
        "docs",
        _rows({"a": ("apple", [1.0, 0.0]), "b": ("river", [0.0, 1.0])}),
        text_columns=["body"],
    )
    return engine


def test_a_missing_column_is_null_and_the_rest_keep_their_values(engine) -> None:
    engine.upsert_rows("docs", pa.table({"id": ["c"], "body": ["stone"]}))
    assert engine.read_table("docs").to_pylist()[-1] == {"id": "c", "body": "stone", "vector": None}
    assert engine.tables["docs"].rows == 3


def test_deleting_nothing_keeps_the_version(engine) -> None:
    version = engine.tables["docs"].version
    assert engine.delete_rows("docs", []) == 0
    assert engine.tables["docs"].version == version


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda e: e.upsert_rows("nope", pa.table({"id": ["x"]})),
            "table 'default.public.nope' not found",
        ),
        (lambda e: e.delete_rows("nope", ["x"]), "nope"),
        (
            lambda e: e.upsert_rows("docs", pa.table({"id": ["x"], "extra": [1]})),
            "no column 'extra'",
        ),
        (lambda e: e.upsert_rows("docs", pa.table({"body": ["x"]})), "need its key column 'id'"),
        (lambda e: e.upsert_rows("docs", pa.table({"id": ["x", "x"]})), "not unique"),
        (
            lambda e: e.upsert_rows(
                "docs", pa.table({"id": [None]}, schema=pa.schema([("id", pa.string())]))
            ),
            "NULL",
        ),
        (
            lambda e: e.upsert_rows("docs", pa.table({"id": ["x"], "vector": [["a"]]})),
            "column 'vector'",
        ),
        (lambda e: e.delete_rows("docs", [7]), "key 7 cannot be a value of key column 'id'"),
        (lambda e: e.delete_rows("docs", "ab"), "keys must be a list of keys, not str"),
        (lambda e: e.delete_rows("docs", None), "not NoneType"),
        (lambda e: e.delete_rows("docs", ["a", None]), "key None .* never NULL"),
        (
            lambda e: e.upsert_rows("docs", {"id": ["x"]}),
            r"rows must be an Arrow table \(pyarrow.Table or RecordBatch\), not dict",
        ),
        (lambda e: e.upsert_rows("docs", pa.table({"id": [1], "body": ["x"]})), "not converted"),
        (lambda e: e.upsert_rows("docs", pa.table({"id": ["x"], "body": [5]})), "not converted"),
        (
            lambda e: e.upsert_rows(
                "docs", pa.table([pa.array(["q"]), pa.array(["r"])], names=["id", "ID"])
            ),
            "columns 'id' and 'ID' differ only in case",
        ),
    ],
)
def test_bad_changes_are_refused_and_change_nothing(engine, call, message) -> None:
    before = engine.read_table("docs")
    with pytest.raises(EngineError, match=message):
        call(engine)
    assert engine.read_table("docs").equals(before)


def test_a_table_without_a_key_cannot_change_rows(tmp_path) -> None:
    engine = LocalEngine(tmp_path / "db")
    engine.load_table("plain", pa.table({"body": ["x"]}), key_column=None)
    with pytest.raises(EngineError, match="has no key column"):
        engine.upsert_rows("plain", pa.table({"body": ["y"]}))


def test_another_engine_sees_the_change(engine, tmp_path) -> None:
    other = LocalEngine(tmp_path / "db")
    engine.upsert_rows("docs", pa.table({"id": ["a"], "body": ["ember"]}))
    hits = other.search(
        SearchPlan(source=Bm25Search(table="docs", column="body", query_text="ember"))
    ).hits
    assert [hit.key for hit in hits] == ["a"]


def test_a_change_keeps_the_tables_indexes_and_their_metric(tmp_path) -> None:
    engine = LocalEngine(tmp_path / "db")
    rows = {"a": ("apple", [1.0, 0.0]), "b": ("river", [0.0, 1.0])}
    first = engine.load_table(
        "docs", _rows(rows), text_columns=["body"], vector_index="hnsw", vector_metric="l2"
    )
    changed = engine.upsert_rows("docs", _rows({"c": ("stone", [0.5, 0.5])}))
    assert changed.ann_indexes == first.ann_indexes
    assert changed.text_indexes == ("body",)
    assert changed.rows == 3


def test_negative_zero_is_the_key_zero_and_dictionary_keys_are_read(tmp_path) -> None:
    engine = LocalEngine(tmp_path / "db")
    engine.load_table("floats", pa.table({"id": [0.0, 1.5], "body": ["zero", "other"]}))
    engine.upsert_rows("floats", pa.table({"id": [-0.0], "body": ["replaced"]}))
    assert sorted(engine.read_table("floats").to_pylist(), key=lambda row: row["id"]) == [
        {"id": 0.0, "body": "replaced"},
        {"id": 1.5, "body": "other"},
    ]
    assert engine.delete_rows("floats", [-0.0]) == 1
    engine.upsert_rows(
        "floats", pa.table({"id": [2.5], "body": pa.array(["coded"]).dictionary_encode()})
    )
    assert engine.tables["floats"].rows == 2


def test_a_nan_key_is_refused_not_matched_to_nothing(tmp_path) -> None:
    engine = LocalEngine(tmp_path / "db")
    try:
        engine.load_table("scores", pa.table({"id": [0.5, 1.5], "body": ["a", "b"]}))
        with pytest.raises(EngineError, match="NaN equals no key"):
            engine.delete_rows("scores", [float("nan")])
        assert engine.delete_rows("scores", [-0.0, 1.5]) == 1
        assert engine.read_table("scores", ["id"]).column(0).to_pylist() == [0.5]
    finally:
        engine.close()
