"""Right answers on hostile data, on every path: the CTE form and the native ``hybrid_search``
on the local engine, the reference fusion, the agent tools, the retriever and ``hdq search``.

Each test names the kind of fault it pins (issue "Right answers on hostile data").
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    InList,
    IsNull,
    KeyTypeError,
    NearestNeighborSearch,
    Not,
    Or,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    competition_ranks,
    rank_branch,
    reciprocal_rank_fusion,
    to_sql,
)
from hotdata_retrieval.adapters.langchain import HotdataRetriever
from hotdata_retrieval.adapters.toolkit import SearchToolkit, ToolError
from hotdata_retrieval.cli import main
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import EngineError, LocalEngine
from hotdata_retrieval.engines.results import executed_plan, search_result
from hotdata_retrieval.lint import lint
from hotdata_retrieval.spec.native import HOTDATA_NATIVE

EMBEDDER = HashingEmbedder(dimensions=8)


def _engine() -> LocalEngine:
    return LocalEngine(embedder=EMBEDDER)


# -- empty inputs ----------------------------------------------------------------------------


def _sources(table: str) -> list[Any]:
    text = Bm25Search(table=table, column="body", query_text="fox")
    semantic = VectorSearch(table=table, column="body", query_text="fox")
    nearest = NearestNeighborSearch(
        table=table, column="body_embedding", query_vector=EMBEDDER.embed_query("fox")
    )
    return [
        text,
        semantic,
        nearest,
        ReciprocalRankFusion(branches=[text, semantic]),
        ReciprocalRankFusion(branches=[text, nearest]),
    ]


@pytest.fixture(scope="module")
def empty_engine() -> Iterator[LocalEngine]:
    with _engine() as engine:
        engine.load_table(
            "empty",
            pa.table({"id": pa.array([], pa.int64()), "body": pa.array([], pa.string())}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        engine.load_table(
            "nulls",
            pa.table({"id": [1, 2, 3], "body": pa.array([None, None, None], pa.string())}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield engine


@pytest.mark.parametrize("table", ["empty", "nulls"])
@pytest.mark.parametrize("position", range(5))
def test_an_empty_table_or_all_null_texts_give_an_empty_result_on_every_form(
    empty_engine: LocalEngine, table: str, position: int
) -> None:
    plan = SearchPlan(source=_sources(table)[position])
    assert empty_engine.search(plan).hits == ()
    rows = empty_engine.sql(to_sql(plan)).to_pylist()
    if isinstance(plan.source, NearestNeighborSearch):
        # The fast-path shape cannot filter NULL vectors out without leaving the index's
        # plan: their NULL distances sort last, and search() leaves them out.
        assert all(row["_distance"] is None for row in rows)
    else:
        assert rows == []
    if plan.fusion is not None:
        assert empty_engine.sql(to_sql(plan, HOTDATA_NATIVE)).num_rows == 0


@pytest.mark.parametrize("table", ["empty", "nulls"])
def test_the_agent_tools_and_the_retriever_answer_an_empty_table_with_nothing(
    empty_engine: LocalEngine, table: str
) -> None:
    toolkit = SearchToolkit(empty_engine, table=table)
    assert toolkit.search_text("fox")["rows"] == []
    assert toolkit.search_semantic("fox")["rows"] == []
    for mode in ("text", "semantic", "hybrid"):
        retriever = HotdataRetriever(engine=empty_engine, table=table, mode=mode)
        assert retriever.invoke("fox") == []


def test_hdq_search_on_an_empty_table_says_no_results(tmp_path: Path) -> None:
    source = tmp_path / "docs.parquet"
    pq.write_table(
        pa.table({"id": ["1", "2"], "body": pa.array([None, None], pa.string())}), source
    )
    database = tmp_path / "db"
    runner = CliRunner()
    loaded = runner.invoke(
        main, ["load", str(source), "--database", str(database), "--embedder", "hashing"]
    )
    assert loaded.exit_code == 0, loaded.stderr
    for mode in ("text", "semantic", "hybrid"):
        result = runner.invoke(
            main, ["search", "fox", "--table", "docs", "--mode", mode, "--database", str(database)]
        )
        assert result.exit_code == 0, result.stderr
        assert "no results" in result.stderr


# -- vectors that make a distance undefined -------------------------------------------------


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[1.0, 2.0], [1.0]], r"row 2 \(id = 'b'\) has 1 dimension, row 1 \(id = 'a'\) has 2"),
        ([[1.0, float("nan")], [1.0, 2.0]], r"row 1 \(id = 'a'\) holds NaN or an infinite"),
        ([[1.0, 2.0], [float("inf"), 2.0]], r"row 2 \(id = 'b'\) holds NaN or an infinite"),
        ([[1.0, 2.0], [-float("inf"), 2.0]], r"row 2 \(id = 'b'\) holds NaN or an infinite"),
        ([[], [1.0]], r"row 1 \(id = 'a'\) holds an empty vector"),
        # Finite in Float64, an infinity in Float32 (where the distance functions compute).
        ([[1.0, 2.0], [1e39, 2.0]], r"row 2 \(id = 'b'\) holds a value beyond Float32's range"),
        ([[1.0, 2.0], [2.0, -3.5e38]], r"row 2 \(id = 'b'\) holds a value beyond Float32's"),
        ([[1.0, None], [1.0, 2.0]], r"row 1 \(id = 'a'\) holds a NULL component"),
    ],
)
def test_a_stored_vector_that_makes_a_distance_undefined_is_refused_at_load(
    vectors: list[list[float]], message: str
) -> None:
    with _engine() as engine, pytest.raises(EngineError, match=message):
        engine.load_table(
            "v", pa.table({"id": ["a", "b"], "emb": pa.array(vectors, pa.list_(pa.float64()))})
        )


@pytest.mark.parametrize(
    ("value_type", "bad", "message"),
    [
        (pa.float32(), {11: [float("nan"), 1.0]}, r"row 12 \(id = 11\) holds NaN"),
        (pa.float16(), {6: [1.0, float("inf")]}, r"row 7 \(id = 6\) holds NaN"),
        (pa.float64(), {8: [1e39, 1.0]}, r"row 9 \(id = 8\) holds a value beyond"),
        # A NaN anywhere is reported before a value beyond Float32's range anywhere.
        (pa.float64(), {3: [1e39, 1.0], 10: [float("nan"), 1.0]}, r"row 11 \(id = 10\) holds NaN"),
        (pa.int64(), {}, None),
        (pa.float32(), {}, None),
    ],
)
def test_the_load_check_names_the_row_across_blocks(
    monkeypatch: pytest.MonkeyPatch, value_type: pa.DataType, bad: dict, message: str | None
) -> None:
    """The vector check tests its values a few rows at a time (here two rows per block, with
    NULL rows between): the row it names is the first bad row of the whole column."""
    from hotdata_retrieval.engines.local import _prepare

    monkeypatch.setattr(_prepare, "_CHECK_BLOCK", 4)
    vectors = [None if row % 4 == 1 else bad.get(row, [1.0, 2.0]) for row in range(12)]
    data = pa.table({"id": list(range(12)), "emb": pa.array(vectors, pa.list_(value_type))})
    with _engine() as engine:
        if message is None:
            engine.load_table("v", data)
            assert engine.read_table("v").column("emb").to_pylist() == vectors
        else:
            with pytest.raises(EngineError, match=message):
                engine.load_table("v", data)


def test_a_null_vector_is_no_candidate_on_any_path() -> None:
    with _engine() as engine:
        engine.load_table(
            "v",
            pa.table(
                {
                    "id": [1, 2, 3],
                    "body": ["red fox", "fox den", "fox"],
                    "emb": pa.array([[1.0, 0.0], None, [0.0, 1.0]], pa.list_(pa.float32())),
                }
            ),
            text_columns=["body"],
        )
        nearest = NearestNeighborSearch(table="v", column="emb", query_vector=[1.0, 0.0])
        text = Bm25Search(table="v", column="body", query_text="fox")
        single = engine.search(SearchPlan(source=nearest))
        assert single.keys == [1, 3]
        assert [hit.distance for hit in single] == pytest.approx([0.0, 1.0])
        fused = SearchPlan(source=ReciprocalRankFusion(branches=[text, nearest]))
        ranks = {hit.key: hit.branches["nearest"].rank for hit in engine.search(fused)}
        assert ranks[2] is None and sorted(r for r in ranks.values() if r) == [1, 2]
        native = engine.sql(to_sql(fused, HOTDATA_NATIVE)).to_pylist()
        assert {row["id"] for row in native} == {1, 2, 3}  # 2 through its text branch only


# -- Unicode forms --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "query"),
    [
        ("café crème", unicodedata.normalize("NFD", "café")),
        (unicodedata.normalize("NFD", "café crème"), "café"),
        ("red fox", "\uff52\uff45\uff44 \uff26\uff2f\uff38"),  # full-width RED FOX
        ("\uff46\uff4f\uff58 den", "fox"),
        ("the \ufb01le", "file"),  # the fi ligature
        ("STRASSE", "straße"),
        # Case folding writes İ (U+0130) as i + U+0307 COMBINING DOT ABOVE, a mark no
        # precomposed form absorbs and the tokenizer would split the word at.
        ("İstanbul", "istanbul"),
        ("istanbul'da", "İSTANBUL"),
        ("İZMİR", "izmir"),
    ],
)
def test_text_matches_across_unicode_forms(document: str, query: str) -> None:
    with _engine() as engine:
        engine.load_table(
            "u",
            pa.table({"id": [1, 2], "body": [document, "unrelated words"]}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        text = Bm25Search(table="u", column="body", query_text=query)
        assert engine.search(SearchPlan(source=text)).keys == [1]
        fused = SearchPlan(
            source=ReciprocalRankFusion(
                branches=[text, VectorSearch(table="u", column="body", query_text=query)]
            )
        )
        native = engine.sql(to_sql(fused, HOTDATA_NATIVE)).to_pylist()
        assert native[0]["id"] == 1


# -- scores and labels ----------------------------------------------------------------------


def test_a_single_vector_result_names_its_distance(tmp_path: Path) -> None:
    with _engine() as engine:
        engine.load_table(
            "d",
            pa.table({"id": [1, 2, 3], "body": ["red fox", "blue sky", "fox den"]}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        result = engine.search(
            SearchPlan(source=VectorSearch(table="d", column="body", query_text="fox"))
        )
        assert result.ranked_by == "_distance" and not result.descending
        assert all(hit.score is None and hit.distance is not None for hit in result)
        distances = [hit.distance for hit in result]
        assert distances == sorted(distances)
        fused = engine.search(
            SearchPlan(
                source=ReciprocalRankFusion(
                    branches=[
                        Bm25Search(table="d", column="body", query_text="fox"),
                        VectorSearch(table="d", column="body", query_text="fox"),
                    ]
                )
            )
        )
        assert fused.ranked_by == "score" and fused.descending
        assert all(hit.distance is None and hit.score is not None for hit in fused)


def test_hdq_search_labels_a_distance_in_table_and_json(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    rows = [{"id": str(i), "body": f"fox number {i}"} for i in range(5)]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    database = tmp_path / "db"
    runner = CliRunner()
    assert (
        runner.invoke(
            main, ["load", str(source), "--database", str(database), "--embedder", "hashing"]
        ).exit_code
        == 0
    )
    base = ["search", "fox", "--table", "docs", "--database", str(database)]
    table = runner.invoke(main, [*base, "--mode", "semantic"])
    assert "distance (lower is nearer)" in table.stdout
    assert "score" not in table.stdout
    document = json.loads(
        runner.invoke(main, [*base, "--mode", "semantic", "--format", "json"]).stdout
    )
    assert document["ranked_by"] == "distance" and document["order"] == "ascending"
    assert all("distance" in hit and "score" not in hit for hit in document["hits"])
    fused = json.loads(runner.invoke(main, [*base, "--mode", "hybrid", "--format", "json"]).stdout)
    assert fused["ranked_by"] == "score" and fused["order"] == "descending"


# -- hdq search --explain when piped --------------------------------------------------------


@pytest.mark.parametrize("mode", ["text", "semantic", "nearest", "hybrid"])
def test_explain_into_a_file_is_the_exact_statement_and_lints_clean(
    tmp_path: Path, mode: str
) -> None:
    source = tmp_path / "docs.jsonl"
    rows = [{"id": str(i), "body": f"fox number {i} " + "word " * 30} for i in range(8)]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    database = tmp_path / "db"
    runner = CliRunner()
    assert (
        runner.invoke(
            main,
            ["load", str(source), "--database", str(database), "--embedder", "hashing"],
        ).exit_code
        == 0
    )
    arguments = ["search", "fox", "--table", "docs", "--mode", mode, "--database", str(database)]
    piped = runner.invoke(main, [*arguments, "--explain"])
    assert piped.exit_code == 0, piped.stderr
    statement = json.loads(
        runner.invoke(main, [*arguments, "--explain", "--format", "json"]).stdout
    )["sql"]
    assert piped.stdout.startswith(statement + ";\n")  # not wrapped, not cut
    assert all(line.startswith("-- ") for line in piped.stdout[len(statement) + 2 :].splitlines())
    script = tmp_path / "f.sql"
    script.write_text(piped.stdout)
    assert lint(script.read_text()) == []
    linted = runner.invoke(main, ["lint", str(script)])
    assert linted.exit_code == 0, linted.stdout + linted.stderr


# -- ties and key types in the reference fusion ---------------------------------------------


def test_the_reference_fusion_refuses_keys_of_different_kinds() -> None:
    with pytest.raises(KeyTypeError, match=r"1 \(int\) and '1' \(str\)"):
        reciprocal_rank_fusion([[1, 2], ["1", "3"]])
    with pytest.raises(KeyTypeError, match="None key"):
        reciprocal_rank_fusion([[1, None]])
    with pytest.raises(KeyTypeError, match="NaN key"):
        reciprocal_rank_fusion([[float("nan"), 1], [float("nan"), 2]])
    with pytest.raises(KeyTypeError, match="True"):
        reciprocal_rank_fusion([[1], [True]])


def test_numbers_are_one_kind_of_key() -> None:
    hits = reciprocal_rank_fusion([[1, 2], [1.0, 3]])
    assert [hit.key for hit in hits] == [1, 2, 3]
    assert hits[0].ranks == (1, 1)


def test_the_reference_fusion_gives_tied_rows_one_rank() -> None:
    keys, ranks = rank_branch([(3, 2.5), (13, 2.5), (19, 2.5)], higher_is_better=True)
    assert (keys, ranks) == ([3, 13, 19], [1, 1, 1])
    nearest, nearest_ranks = rank_branch([(13, 0.1), (19, 0.2), (3, 0.3)], higher_is_better=False)
    fused = reciprocal_rank_fusion([keys, nearest], ranks=[ranks, nearest_ranks])
    assert [hit.key for hit in fused] == [13, 19, 3]
    with pytest.raises(PlanError, match="not a competition rank"):
        reciprocal_rank_fusion([[1, 2, 3]], ranks=[[1, 1, 2]])


# -- pages are slices of one ranking --------------------------------------------------------

WORDS = ["fox", "den", "red", "sky", "fox fox", "blue fox"]


@settings(max_examples=60, deadline=None)
@given(
    bodies=st.lists(st.sampled_from([*WORDS, None]), min_size=1, max_size=40),
    vectors=st.data(),
    page=st.integers(min_value=1, max_value=7),
    depth=st.integers(min_value=1, max_value=30),
    filtered=st.booleans(),
)
def test_concatenated_pages_are_the_unpaged_ranking(
    bodies: list[str | None], vectors: st.DataObject, page: int, depth: int, filtered: bool
) -> None:
    count = len(bodies)
    stored = vectors.draw(
        st.lists(
            st.none() | st.lists(st.sampled_from([-1.0, 0.0, 1.0, 2.0]), min_size=2, max_size=2),
            min_size=count,
            max_size=count,
        )
    )
    table = pa.table(
        {
            "id": list(range(count)),
            "body": pa.array(bodies, pa.string()),
            "category": ["a" if i % 3 else "b" for i in range(count)],
            "emb": pa.array(stored, pa.list_(pa.float32(), 2)),  # typed: NULLs only may come
        }
    )
    text = Bm25Search(table="p", column="body", query_text="fox")
    nearest = NearestNeighborSearch(table="p", column="emb", query_vector=[1.0, 0.5], metric="l2")
    where = Comparison(column="category", operator="=", value="a") if filtered else None

    def plan(limit: int, offset: int) -> SearchPlan:
        return SearchPlan(
            source=ReciprocalRankFusion(branches=[text, nearest], depth=depth),
            limit=limit,
            offset=offset,
            filter=where,
            include_branch_scores=True,
            columns=["id"],
        )

    with _engine() as engine:
        engine.load_table("p", table, text_columns=["body"])
        unpaged = engine.search(plan(depth, 0))
        for dialect in ("hotdata", HOTDATA_NATIVE):
            rows = []
            for offset in range(0, depth, page):
                limit = min(page, depth - offset)
                statement = to_sql(plan(limit, offset), dialect)
                rows.extend(row["id"] for row in engine.sql(statement).to_pylist())
            assert rows == unpaged.keys
        # ... and the unpaged ranking is the reference fusion of the branches run alone.
        rankings = []
        for branch in (text, nearest):
            alone = engine.search(SearchPlan(source=branch, limit=count, filter=where))
            rankings.append(
                rank_branch(
                    [(hit.key, hit.ranking_value) for hit in alone],
                    higher_is_better=branch.higher_is_better,
                    depth=depth,
                )
            )
    expected = reciprocal_rank_fusion(
        [keys for keys, _ in rankings], ranks=[ranks for _, ranks in rankings], limit=depth
    )
    assert unpaged.keys == [hit.key for hit in expected]
    assert [hit.score for hit in unpaged] == [hit.score for hit in expected]
    assert [tuple(b.rank for b in hit.branches.values()) for hit in unpaged] == [
        hit.ranks for hit in expected
    ]


SHUFFLED = [7, 2, 11, 0, 5, 9, 1, 10, 3, 8, 6, 4]
"""Keys not in row order, so a tie cut by rowid and one cut by key keep different rows."""


@pytest.fixture(scope="module")
def shuffled() -> Iterator[LocalEngine]:
    with _engine() as engine:
        for name, keys in (("ints", SHUFFLED), ("texts", [f"k{key:02d}" for key in SHUFFLED])):
            engine.load_table(
                name,
                pa.table(
                    {
                        "id": keys,
                        # Three BM25 levels, each a tie; equal texts embed to equal vectors.
                        "body": ["fox fox", "fox den", "fox den fox"] * 4,
                        "category": ["a", "b"] * 6,
                    }
                ),
                text_columns=["body"],
                embed_columns=["body"],
            )
        yield engine


@pytest.mark.parametrize("table", ["ints", "texts"])
@pytest.mark.parametrize("kind", ["text", "semantic"])
@pytest.mark.parametrize("filtered", [False, True])
@pytest.mark.parametrize("page", [1, 2, 5])
def test_pages_of_one_table_function_branch_tile_its_ranking(
    shuffled: LocalEngine, table: str, kind: str, filtered: bool, page: int
) -> None:
    source = (
        Bm25Search(table=table, column="body", query_text="fox")
        if kind == "text"
        else VectorSearch(table=table, column="body", query_text="fox")
    )
    where = Comparison(column="category", operator="=", value="a") if filtered else None
    unpaged = shuffled.search(SearchPlan(source=source, limit=12, filter=where))
    # One ranking: raw score (best first), then key ascending among ties.
    sign = -1 if source.higher_is_better else 1
    assert unpaged.keys == [
        hit.key for hit in sorted(unpaged, key=lambda hit: (sign * hit.ranking_value, hit.key))
    ]
    pages = [
        shuffled.search(SearchPlan(source=source, limit=page, offset=offset, filter=where)).keys
        for offset in range(0, len(unpaged), page)
    ]
    assert [key for keys in pages for key in keys] == unpaged.keys


@pytest.mark.parametrize("table", ["ints", "texts"])
def test_a_tie_at_a_table_function_depth_cut_keeps_the_lowest_keys_in_both_forms(
    shuffled: LocalEngine, table: str
) -> None:
    # Four rows tie at each BM25 level and each distance: a depth of 2 cuts inside a tie.
    fused = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table=table, column="body", query_text="fox"),
                VectorSearch(table=table, column="body", query_text="fox"),
            ],
            depth=2,
        ),
        limit=2,
        columns=["id"],
    )
    native = [row["id"] for row in shuffled.sql(to_sql(fused, HOTDATA_NATIVE)).to_pylist()]
    cte = [row["id"] for row in shuffled.sql(to_sql(fused)).to_pylist()]
    assert cte == native
    assert shuffled.search(fused).keys == native


# -- filters keep what SQL keeps, on every form --------------------------------------------


@pytest.fixture(scope="module")
def categories() -> Iterator[LocalEngine]:
    with _engine() as engine:
        engine.load_table(
            "c",
            pa.table(
                {
                    "id": list(range(8)),
                    "body": [f"fox {i}" for i in range(8)],
                    "category": ["a", "b", "c", "d", "e", None, "a", None],
                    "emb": pa.array([[1.0, float(i)] for i in range(8)], pa.list_(pa.float32())),
                }
            ),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield engine


FOUR = ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        # NOT (NULL IN (...)) is unknown: a NULL category never passes (SQL three-valued logic).
        (Not(operand=InList(column="category", values=FOUR)), [4]),
        (InList(column="category", values=FOUR, negated=True), [4]),
        (Not(operand=InList(column="category", values=[*FOUR, "e"])), []),
        (
            Or(operands=[Not(operand=InList(column="category", values=FOUR)), IsNull(column="id")]),
            [4],
        ),
    ],
)
@pytest.mark.parametrize("form", ["text", "semantic", "nearest", "fused", "native"])
def test_a_not_in_filter_never_keeps_a_null_on_any_form(
    categories: LocalEngine, where: Any, expected: list[int], form: str
) -> None:
    text = Bm25Search(table="c", column="body", query_text="fox")
    semantic = VectorSearch(table="c", column="body", query_text="fox")
    nearest = NearestNeighborSearch(table="c", column="emb", query_vector=[1.0, 0.5])
    sources = {
        "text": text,
        "semantic": semantic,
        "nearest": nearest,
        "fused": ReciprocalRankFusion(branches=[text, semantic, nearest]),
        "native": ReciprocalRankFusion(branches=[text, nearest]),
    }
    plan = SearchPlan(source=sources[form], filter=where, columns=["id"])
    if form == "native":
        keys = [row["id"] for row in categories.sql(to_sql(plan, HOTDATA_NATIVE)).to_pylist()]
    else:
        keys = categories.search(plan).keys
        assert sorted(row["id"] for row in categories.sql(to_sql(plan)).to_pylist()) == expected
    assert sorted(keys) == expected


@pytest.fixture(scope="module")
def zeros() -> Iterator[LocalEngine]:
    with _engine() as engine:
        engine.load_table(
            "z",
            pa.table(
                {
                    "id": list(range(6)),
                    "body": [f"fox {i}" for i in range(6)],
                    "x": [1.0, -0.0, 9.0, None, 0.5, 0.0],
                    "emb": pa.array([[1.0, float(i)] for i in range(6)], pa.list_(pa.float32())),
                }
            ),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield engine


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        # -0.0 = 0.0 in SQL; an IN list of four values or more is a hash lookup in DataFusion,
        # where the two zeros differ unless the load and the plan write both as 0.0.
        (InList(column="x", values=[0.0, 9.0, 7.0, 8.0]), [1, 2, 5]),
        (InList(column="x", values=[-0.0, 9.0, 7.0, 8.0]), [1, 2, 5]),
        (Not(operand=InList(column="x", values=[0.0, 9.0, 7.0, 8.0])), [0, 4]),
        (Comparison(column="x", operator="=", value=-0.0), [1, 5]),
        (Comparison(column="x", operator="<", value=0.0), []),
    ],
)
@pytest.mark.parametrize("form", ["text", "semantic", "nearest", "fused", "native"])
def test_negative_zero_is_zero_in_every_filter_on_every_form(
    zeros: LocalEngine, where: Any, expected: list[int], form: str
) -> None:
    text = Bm25Search(table="z", column="body", query_text="fox")
    semantic = VectorSearch(table="z", column="body", query_text="fox")
    nearest = NearestNeighborSearch(table="z", column="emb", query_vector=[1.0, 0.5])
    sources = {
        "text": text,
        "semantic": semantic,
        "nearest": nearest,
        "fused": ReciprocalRankFusion(branches=[text, semantic, nearest]),
        "native": ReciprocalRankFusion(branches=[text, nearest]),
    }
    plan = SearchPlan(source=sources[form], filter=where, columns=["id"])
    if form == "native":
        keys = [row["id"] for row in zeros.sql(to_sql(plan, HOTDATA_NATIVE)).to_pylist()]
    else:
        keys = zeros.search(plan).keys
    assert sorted(keys) == expected


@pytest.fixture(scope="module")
def wide_numbers() -> Iterator[LocalEngine]:
    with _engine() as engine:
        engine.load_table(
            "w",
            pa.table(
                {
                    "id": list(range(5)),
                    "body": [f"fox {i}" for i in range(5)],
                    # Integers beyond 2**53 (no exact Float64), unsigned ones beyond Int64.
                    "n": [1, 2**60, 3, None, 2**62],
                    "u": pa.array([1, 2**63, 3, None, 2**64 - 1], pa.uint64()),
                    "x": [1.0, 2.0**60, 9.0, None, 2.0**63],
                    "f": pa.array([2.0**24, 1.0, 2.0, None, 3.0], pa.float32()),
                    "emb": pa.array([[1.0, float(i)] for i in range(5)], pa.list_(pa.float32())),
                }
            ),
            text_columns=["body"],
        )
        yield engine


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (Comparison(column="n", operator=">", value=2.5), [1, 2, 4]),
        (Comparison(column="n", operator="=", value=1.0), [0]),
        (InList(column="n", values=[1, 2.5, 3, 4]), [0, 2]),
        (Comparison(column="x", operator=">=", value=2**60), [1, 4]),
        (Comparison(column="u", operator=">", value=-1), [0, 1, 2, 4]),
        (Comparison(column="u", operator=">", value=2**62), [1, 4]),
        (InList(column="u", values=[-1, 3, 7, 9]), [2]),
        # An integer compared with a Float32 column is read as Float32: 2**24 + 1 is 2**24.
        (Comparison(column="f", operator="=", value=2**24 + 1), [0]),
    ],
)
@pytest.mark.parametrize("form", ["text", "nearest", "native"])
def test_numbers_of_other_types_compare_on_every_form(
    wide_numbers: LocalEngine, where: Any, expected: list[int], form: str
) -> None:
    # The SQL compares an integer with a float as Float64 and integers of either sign exactly;
    # the nearest-neighbour fast path and hybrid_search filter with a row mask that must agree.
    text = Bm25Search(table="w", column="body", query_text="fox")
    nearest = NearestNeighborSearch(table="w", column="emb", query_vector=[1.0, 0.5])
    source = {"text": text, "nearest": nearest, "native": None}[form]
    if source is None:
        plan = SearchPlan(
            source=ReciprocalRankFusion(branches=[text, nearest]), filter=where, columns=["id"]
        )
        keys = [row["id"] for row in wide_numbers.sql(to_sql(plan, HOTDATA_NATIVE)).to_pylist()]
    else:
        keys = wide_numbers.search(SearchPlan(source=source, filter=where, columns=["id"])).keys
    assert sorted(keys) == expected


# -- a key that is not unique ---------------------------------------------------------------


@pytest.fixture
def chunks() -> Iterator[LocalEngine]:
    with _engine() as engine:
        engine.load_table(
            "chunks",
            pa.table(
                {
                    "chunk_id": ["c1", "c2", "c3"],
                    "doc_id": ["X", "Y", "X"],
                    "body": ["fox one", "fox two", "fox three"],
                }
            ),
            key_column="chunk_id",
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield engine


def _chunk_plan(key: str) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="chunks", column="body", query_text="fox"),
                VectorSearch(table="chunks", column="body", query_text="fox"),
            ]
        ),
        key_column=key,
        columns=[key],
    )


def test_a_key_column_that_is_not_unique_is_refused_naming_both_columns(
    chunks: LocalEngine,
) -> None:
    with pytest.raises(EngineError) as caught:
        chunks.search(_chunk_plan("doc_id"))
    message = str(caught.value)
    assert "key column 'doc_id' is not unique" in message
    assert "the table's key is 'chunk_id'" in message
    assert chunks.search(_chunk_plan("chunk_id")).keys == ["c1", "c2", "c3"]
    # A unique column other than the loaded key is fine.
    assert sorted(chunks.search(_chunk_plan("body")).keys) == ["fox one", "fox three", "fox two"]


def test_the_native_form_refuses_a_repeated_key_too(chunks: LocalEngine) -> None:
    with pytest.raises(EngineError, match="key column 'doc_id' is not unique"):
        chunks.sql(to_sql(_chunk_plan("doc_id"), HOTDATA_NATIVE))


def test_the_retriever_and_tools_refuse_a_repeated_key(chunks: LocalEngine) -> None:
    retriever = HotdataRetriever(engine=chunks, table="chunks", key_column="doc_id")
    with pytest.raises(EngineError, match="not unique"):
        retriever.invoke("fox")
    toolkit = SearchToolkit(chunks, table="chunks", key_column="doc_id")
    with pytest.raises(ToolError, match="not unique"):
        toolkit.search_text("fox")


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        # SQL's = and Python's == take -0.0 and 0.0 for one key; Arrow's hash does not.
        ([0.0, -0.0, 1.0], r"key column 'id' is not unique: 0\.0 appears 2 times"),
        # NaN equals no key: the fusion would return its row once per branch.
        ([2.0, float("nan"), 1.0], r"key column 'id' holds NaN in row 2"),
    ],
)
def test_float_keys_that_sql_compares_differently_are_refused_at_load(
    keys: list[float], message: str
) -> None:
    with _engine() as engine, pytest.raises(EngineError, match=message):
        engine.load_table(
            "f",
            pa.table({"id": keys, "body": ["fox a", "fox b", "fox c"]}),
            text_columns=["body"],
            embed_columns=["body"],
        )


def test_a_search_keyed_on_a_column_holding_nan_is_refused() -> None:
    with _engine() as engine:
        engine.load_table(
            "f",
            pa.table(
                {
                    "id": [1, 2, 3],
                    "ref": [float("nan"), 2.0, 1.0],
                    "body": ["fox a", "fox b", "fox c"],
                }
            ),
            text_columns=["body"],
            embed_columns=["body"],
        )
        plan = SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table="f", column="body", query_text="fox"),
                    VectorSearch(table="f", column="body", query_text="fox"),
                ]
            ),
            key_column="ref",
            columns=["ref"],
        )
        with pytest.raises(EngineError, match="key column 'ref' is not unique in table"):
            engine.search(plan)
        with pytest.raises(EngineError, match="key column 'ref' is NaN in a candidate row"):
            engine.sql(to_sql(plan, HOTDATA_NATIVE))


def test_any_engine_refuses_a_key_that_comes_back_twice() -> None:
    plan = _chunk_plan("doc_id")
    debug = {"text_rank": 1, "text_score": 2.0, "semantic_rank": 1, "semantic_distance": 0.5}
    rows = [{"doc_id": key, "score": 0.1, **debug} for key in ["Y", "X", "X"]]
    with pytest.raises(EngineError, match="key 'X' of key column 'doc_id' came back twice"):
        search_result(plan, executed_plan(plan), rows, "SELECT ...")


# -- filtered searches never under-fill silently ---------------------------------------------


@pytest.fixture(scope="module")
def thousand() -> Iterator[LocalEngine]:
    with _engine() as engine:
        engine.load_table(
            "big",
            pa.table(
                {
                    "id": list(range(1000)),
                    "body": [f"fox {i % 53} den {i % 7}" for i in range(1000)],
                    "category": ["x" if i % 100 == 37 else "y" for i in range(1000)],
                }
            ),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield engine


def _expected_semantic(engine: LocalEngine, query: str) -> list[int]:
    """The x rows by the engine's own distance, nearest first, then by key."""
    rows = engine.sql(
        "SELECT id, _distance FROM vector_search('big', 'body', "
        f"'{query}', 1000) WHERE category = 'x'"
    ).to_pylist()
    return [row["id"] for row in sorted(rows, key=lambda row: (row["_distance"], row["id"]))]


def test_a_filtered_semantic_search_fills_its_page(thousand: LocalEngine) -> None:
    x = Comparison(column="category", operator="=", value="x")
    semantic = VectorSearch(table="big", column="body", query_text="fox 3 den 2")
    result = thousand.search(SearchPlan(source=semantic, filter=x, limit=10))
    assert result.keys == _expected_semantic(thousand, "fox 3 den 2")
    assert len(result) == 10 and result.underfilled is None
    assert "vector_distance(body, 'fox 3 den 2')" in result.sql
    short = thousand.search(SearchPlan(source=semantic, filter=x, limit=20))
    assert len(short) == 10
    assert short.underfilled == (
        "10 rows for a limit of 20: only 10 rows have a vector and pass the filter"
    )


def test_a_filtered_fusion_ranks_every_row_the_filter_keeps(thousand: LocalEngine) -> None:
    x = Comparison(column="category", operator="=", value="x")
    fused = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="big", column="body", query_text="fox 3"),
                VectorSearch(table="big", column="body", query_text="fox 3 den 2"),
            ]
        ),
        filter=x,
        limit=10,
    )
    result = thousand.search(fused)
    assert len(result) == 10
    # The whole filtered branch is ranked: all ten rows that pass, ties sharing a rank.
    distances = sorted(
        (hit.branches["semantic"].raw_score, hit.branches["semantic"].rank) for hit in result
    )
    assert [rank for _, rank in distances] == competition_ranks(
        [distance for distance, _ in distances], higher_is_better=False
    )
    native = thousand.sql(to_sql(fused, HOTDATA_NATIVE)).to_pylist()
    assert [row["id"] for row in native] == result.keys


def test_the_retriever_and_tools_fill_a_filtered_semantic_page(thousand: LocalEngine) -> None:
    x = Comparison(column="category", operator="=", value="x")
    retriever = HotdataRetriever(engine=thousand, table="big", mode="semantic", k=10, filter=x)
    documents = retriever.invoke("fox 3 den 2")
    assert [document.id for document in documents] == [
        str(key) for key in _expected_semantic(thousand, "fox 3 den 2")
    ]


def test_a_filtered_text_search_is_exact_past_any_bound() -> None:
    # 12,000 rows all match 'fox'; the 20 that pass the filter score lowest.
    count = 12_000
    bodies = [f"fox fox {'word ' * (i % 5)}" for i in range(count - 20)]
    bodies += ["fox " + "filler " * 40 for _ in range(20)]
    with _engine() as engine:
        engine.load_table(
            "many",
            pa.table(
                {
                    "id": list(range(count)),
                    "body": bodies,
                    "category": ["y"] * (count - 20) + ["x"] * 20,
                }
            ),
            text_columns=["body"],
        )
        text = Bm25Search(table="many", column="body", query_text="fox")
        x = Comparison(column="category", operator="=", value="x")
        result = engine.search(SearchPlan(source=text, filter=x, limit=10))
    assert result.keys == list(range(count - 20, count - 10))
    assert result.underfilled is None


def test_a_page_past_the_last_row_does_not_claim_a_count(thousand: LocalEngine) -> None:
    # Every row holds 'fox'; ten pass the filter.
    x = Comparison(column="category", operator="=", value="x")
    text = Bm25Search(table="big", column="body", query_text="fox")
    fused = ReciprocalRankFusion(
        branches=[text, VectorSearch(table="big", column="body", query_text="fox")]
    )
    past = thousand.search(SearchPlan(source=text, filter=x, limit=5, offset=40))
    assert past.keys == []
    assert past.underfilled == (
        "0 rows for a limit of 5 at offset 40: at most 40 rows match the query and pass the filter"
    )
    short = thousand.search(SearchPlan(source=text, filter=x, limit=5, offset=8))
    assert len(short) == 2
    assert short.underfilled == (
        "2 rows for a limit of 5: only 10 rows match the query and pass the filter"
    )
    empty = thousand.search(SearchPlan(source=fused, filter=x, limit=5, offset=60))
    assert empty.underfilled == (
        "0 rows for a limit of 5 at offset 60: the branches found at most 60 candidates in all "
        "and pass the filter"
    )


def test_hdq_search_says_when_a_page_is_short(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    rows = [{"id": str(i), "body": f"fox {i}" if i < 3 else f"sky {i}"} for i in range(8)]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    database = tmp_path / "db"
    runner = CliRunner()
    assert (
        runner.invoke(
            main, ["load", str(source), "--database", str(database), "--no-embed"]
        ).exit_code
        == 0
    )

    def notes(query: str, *options: str) -> str:
        arguments = ["search", query, "--table", "docs", "--mode", "text"]
        return runner.invoke(main, [*arguments, "--database", str(database), *options]).stderr

    assert "note: 3 rows for a limit of 10: only 3 rows match the query" in notes("fox")
    assert "note: 1 row for a limit of 10: only 3 rows match the query" in notes(
        "fox 2", "--offset", "2"
    )
    assert (
        "note: 1 row for a limit of 10: only 1 row matches the query and passes the filter"
        in notes("fox", "--filter", "id = '1'")
    )


@pytest.mark.parametrize(
    "keys", [pa.array([[1], [2]]), pa.array([{"a": 1}, {"a": 2}])], ids=["list", "struct"]
)
def test_a_nested_key_column_is_refused_with_its_type(keys: pa.Array) -> None:
    pattern = r"key column 'id' holds .* values; a key is a number"
    with LocalEngine() as engine, pytest.raises(EngineError, match=pattern):
        engine.load_table("t", pa.table({"id": keys}))


def test_a_nearest_search_of_a_column_that_holds_no_vectors_names_it() -> None:
    with LocalEngine() as engine:
        engine.load_table("t", pa.table({"id": [1, 2], "x": [1.0, 2.0]}))
        plan = SearchPlan(source=NearestNeighborSearch(table="t", column="x", query_vector=[1.0]))
        with pytest.raises(EngineError, match=r"column 'x' .* holds double, not vectors"):
            engine.search(plan)
