"""The drop-in builders: hotdata-langchain's names, signatures, defaults and error words,
with every statement compiled by the library and run on the local engine; its SQL helpers
under its names with its contract exactly."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval import PlanError, builders
from hotdata_retrieval.engines.local import LocalEngine

TABLE = "default.public.listings"
WORDS = ("cozy", "apartment", "loft", "garden", "quiet", "sunny")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> LocalEngine:
    rng = random.Random(5)
    rows = 40
    data = pa.table(
        {
            "id": [f"l{index:02d}" for index in range(rows)],
            "description": [" ".join(rng.choices(WORDS, k=5)) for _ in range(rows)],
            "city": [("sf", "la")[index % 2] for index in range(rows)],
            "embedding": pa.array(
                [[rng.uniform(-1, 1) for _ in range(4)] for _ in range(rows)],
                type=pa.list_(pa.float32()),
            ),
        }
    )
    opened = LocalEngine(tmp_path_factory.mktemp("builders"))
    opened.load_table("listings", data, text_columns=["description"])
    return opened


def test_the_bm25_builder_writes_the_hand_built_statement() -> None:
    assert builders.bm25_search_sql(
        table=TABLE, column="description", query="cozy apartment", k=5
    ) == (
        "SELECT description, score FROM bm25_search('default.public.listings', "
        "'description', 'cozy apartment', 5) ORDER BY score DESC LIMIT 5"
    )
    assert builders.bm25_search_sql(
        table=TABLE, column="description", query="q", columns=["id", "score", "city"]
    ).startswith("SELECT id, city, score FROM")


def test_the_vector_distance_builder_keeps_the_fast_path_shape_and_names_the_alias() -> None:
    sql = builders.vector_distance_sql(
        table=TABLE,
        column="embedding",
        vector=[0.5, 0.25],
        k=3,
        columns=["id", "description", "embedding"],
        where={"city": "sf"},
        distance_alias="dist",
    )
    assert sql == (
        "SELECT id, description, cosine_distance(embedding, ARRAY[0.5, 0.25]) AS dist "
        "FROM \"default\".public.listings WHERE city = 'sf' ORDER BY dist ASC LIMIT 3"
    )


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (
            lambda: builders.bm25_search_sql(table=TABLE, column="description", query="q", k=0),
            "k must be >= 1",
        ),
        (
            lambda: builders.bm25_search_sql(table=TABLE, column="description", query="a\x00b"),
            "null bytes",
        ),
        (
            lambda: builders.bm25_search_sql(table="listings", column="description", query="q"),
            r"catalog\.schema\.table",
        ),
        (
            lambda: builders.bm25_search_sql(table=TABLE, column="desc ription", query="q"),
            "bare SQL identifier",
        ),
        (
            lambda: builders.vector_distance_sql(
                table=TABLE, column="embedding", vector=[], columns=["id"]
            ),
            "must not be empty",
        ),
        (
            lambda: builders.vector_distance_sql(
                table=TABLE, column="embedding", vector=[1.0], columns=["id"], metric="manhattan"
            ),
            "metric must be one of cosine, dot, l2",
        ),
        (
            lambda: builders.hybrid_search_sql(
                table=TABLE,
                column="description",
                vector_column="embedding",
                query="q",
                vector=[1.0],
                rrf_k=0,
            ),
            "rrf_k must be >= 1",
        ),
        (
            lambda: builders.hybrid_search_sql(
                table=TABLE,
                column="description",
                vector_column="embedding",
                query="q",
                vector=[1.0],
                columns=["embedding"],
            ),
            "floods the result",
        ),
    ],
)
def test_bad_input_is_a_value_error_in_the_callers_words(call: object, words: str) -> None:
    with pytest.raises(ValueError, match=words) as raised:
        call()  # type: ignore[operator]
    assert isinstance(raised.value, PlanError)


def test_the_bm25_statement_ranks_by_score_on_the_engine(engine: LocalEngine) -> None:
    rows = engine.sql(
        builders.bm25_search_sql(
            table=TABLE, column="description", query="cozy loft", k=8, columns=["id"]
        )
    ).to_pylist()
    scores = [row["score"] for row in rows]
    assert 0 < len(rows) <= 8 and scores == sorted(scores, reverse=True)


def test_the_vector_distance_statement_is_the_exact_top_k(engine: LocalEngine) -> None:
    query = [0.3, -0.2, 0.9, 0.1]
    rows = engine.sql(
        builders.vector_distance_sql(
            table=TABLE, column="embedding", vector=query, k=6, columns=["id"], where={"city": "la"}
        )
    ).to_pylist()
    data = engine.read_table("listings").to_pylist()
    kept = [row for row in data if row["city"] == "la"]
    matrix = np.asarray([row["embedding"] for row in kept], dtype=np.float64)
    distances = 1.0 - matrix @ np.asarray(query) / (
        np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    )
    expected = [kept[index]["id"] for index in np.argsort(distances, kind="stable")[:6]]
    assert [row["id"] for row in rows] == expected


def test_the_hybrid_statement_fuses_at_the_fetch_depth(engine: LocalEngine) -> None:
    sql = builders.hybrid_search_sql(
        table=TABLE,
        column="description",
        vector_column="embedding",
        query="quiet garden",
        vector=[0.1, 0.2, 0.3, 0.4],
        k=4,
    )
    assert sql.count("LIMIT 20") == 2  # max(4k, 20) candidates per branch
    rows = engine.sql(sql).to_pylist()
    assert len(rows) == 4 and [row["score"] for row in rows] == sorted(
        (row["score"] for row in rows), reverse=True
    )


# -- hotdata-langchain's SQL helpers: its contract, exactly --------------------------------
#
# Each reference below restates the contract of ``hotdata_langchain._sql`` 0.17.0 as
# docs/integrations.md and the engine contract (§4) describe it: the bytes a caller gets.

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAMES = st.one_of(
    st.from_regex(_BARE, fullmatch=True),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.sampled_from(["x; DROP TABLE y", "a b", "1a", "", "é", "\u212a", "a\nb", "Mixed_Case"]),
)


@given(_NAMES)
def test_validate_identifier_passes_a_bare_name_unchanged_and_refuses_the_rest(
    name: str,
) -> None:
    if _BARE.fullmatch(name):
        assert builders.validate_identifier(name, label="column") == name
        return
    with pytest.raises(ValueError) as raised:
        builders.validate_identifier(name, label="column")
    assert str(raised.value) == f"column must be a bare SQL identifier, got {name!r}"


def test_a_validated_name_cannot_carry_a_statement() -> None:
    for name in ("x; DROP TABLE y", "id) OR 1=1 --", 'a"b', "a.b", "Id "):
        with pytest.raises(PlanError, match="bare SQL identifier"):
            builders.validate_identifier(name, label="table")
    assert builders.validate_identifier("Listings", label="table") == "Listings"  # case kept


@given(_NAMES)
def test_quote_identifier_quotes_verbatim_or_refuses_what_ends_the_name(name: str) -> None:
    if '"' in name or "\x00" in name:
        with pytest.raises(ValueError) as raised:
            builders.quote_identifier(name)
        assert str(raised.value) == (
            f"a quoted identifier may not contain a double quote or a null byte, got {name!r}"
        )
    elif name == "":
        with pytest.raises(PlanError, match="must not be empty"):
            builders.quote_identifier(name)
    else:
        assert builders.quote_identifier(name) == f'"{name}"'


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=20))
def test_quote_literal_doubles_quotes_and_keeps_every_other_character(value: str) -> None:
    if "\x00" in value:
        with pytest.raises(ValueError) as raised:
            builders.quote_literal(value)
        assert str(raised.value) == "SQL string literals may not contain null bytes"
    else:
        assert builders.quote_literal(value) == "'" + value.replace("'", "''") + "'"


@given(
    st.lists(
        st.one_of(
            st.floats(min_value=-3e38, max_value=3e38, allow_nan=False),
            st.integers(min_value=-(10**6), max_value=10**6),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_vector_literal_writes_each_number_as_its_repr(values: list[float]) -> None:
    expected = "ARRAY[" + ", ".join(repr(float(value)) for value in values) + "]"
    assert builders.vector_literal(values) == expected


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ([], "a vector literal needs at least one value"),
        ([1.0, float("nan")], "finite numbers; position 2 of 2 is nan"),
        ([float("inf")], "finite numbers; position 1 of 1 is inf"),
        ([1e39], "Float32"),
        (["a"], "position 1 of 1 is 'a', a text"),
    ],
)
def test_vector_literal_refuses_what_no_engine_reads(values: list[Any], words: str) -> None:
    with pytest.raises(PlanError, match=words):
        builders.vector_literal(values)


@pytest.mark.parametrize(
    "value", ["it's", "back\\slash", "line\nbreak", "日本", "", "x') OR 1=1 --"]
)
def test_a_quoted_literal_reads_back_as_the_same_text_on_the_engine(
    engine: LocalEngine, value: str
) -> None:
    rows = engine.sql(f"SELECT {builders.quote_literal(value)} AS v").to_pylist()
    assert rows == [{"v": value}]


@pytest.mark.parametrize("name", ["list price", "all", "order", "x; DROP TABLE y", "café"])
def test_a_quoted_identifier_names_exactly_that_column_on_the_engine(
    engine: LocalEngine, name: str
) -> None:
    table = engine.sql(f"SELECT 1 AS {builders.quote_identifier(name)}")
    assert table.column_names == [name]


def test_the_librarys_own_helpers_carry_other_names() -> None:
    from hotdata_retrieval import sql

    assert not hasattr(sql, "validate_identifier") and not hasattr(sql, "quote_identifier")
    assert sql.quote_column("Order") == '"order"'  # lower-cased, as plans write names


# -- tables, text, ranking --------------------------------------------------------------


@pytest.mark.parametrize(
    "quoted",
    [
        '"default"."public"."listings"',
        '"default".public.listings',
        'default."public"."Listings"',
        "DEFAULT.Public.LISTINGS",
    ],
)
def test_a_quoted_three_part_table_is_the_same_table(quoted: str) -> None:
    for build in (
        lambda table: builders.bm25_search_sql(table=table, column="description", query="q"),
        lambda table: builders.vector_distance_sql(
            table=table, column="embedding", vector=[1.0], columns=["id"]
        ),
    ):
        assert build(quoted) == build(TABLE)


@pytest.mark.parametrize(
    "table",
    [
        '"default"."public"',
        '"default"."public"."a"."b"',
        '"default"."public"."list ings"',
        '"default"."public"."x"; DROP TABLE y',
        '"default"."public".""',
        '"default"."public"."a""b"',
        "'default'.public.listings",
    ],
)
def test_a_table_that_is_not_three_bare_parts_is_refused(table: str) -> None:
    with pytest.raises(PlanError, match=r"catalog\.schema\.table"):
        builders.bm25_search_sql(table=table, column="description", query="q")


@pytest.mark.parametrize("query", ["!!", "", "a:b (", "it's"])
def test_the_text_is_sent_as_written(query: str) -> None:
    literal = builders.quote_literal(query)
    assert f"'description', {literal}, 5)" in builders.bm25_search_sql(
        table=TABLE, column="description", query=query
    )
    assert f"'description', {literal}, 20)" in builders.hybrid_search_sql(
        table=TABLE, column="description", vector_column="embedding", query=query, vector=[1.0]
    )


def test_a_wordless_text_finds_no_rows_on_the_engine(engine: LocalEngine) -> None:
    sql = builders.bm25_search_sql(table=TABLE, column="description", query="!!")
    assert engine.sql(sql).num_rows == 0


def test_building_statements_loads_no_text_analysis() -> None:
    """tantivy is made unimportable; every builder and helper still works."""
    script = (
        "import sys\n"
        "sys.modules['tantivy'] = None\n"
        "from hotdata_retrieval import builders as b\n"
        't = \'"default"."public"."t"\'\n'
        "b.bm25_search_sql(table=t, column='c', query='!!')\n"
        "b.vector_search_sql(table=t, column='c', query='q')\n"
        "b.vector_distance_sql(table=t, column='e', vector=[1.0], columns=['id'])\n"
        "b.hybrid_search_sql(table=t, column='c', vector_column='e', query='q', vector=[1.0])\n"
        "b.quote_literal('x'); b.quote_identifier('x'); b.vector_literal([1.0])\n"
        "b.validate_identifier('x', label='column')\n"
        "assert 'hotdata_retrieval.analysis' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)


def _reciprocal_rank_fusion(
    rankings: list[list[tuple[float, str]]], k: int, *, consecutive: bool
) -> list[str]:
    """RRF (rank constant 60) of branches given as (raw score, key) with the best first:
    competition ranks (tied raw scores share the rank of the first of them) or consecutive
    ranks, then the fused score descending, the key ascending."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for position, (raw, key) in enumerate(ranking):
            first = next(index for index, (other, _) in enumerate(ranking) if other == raw)
            rank = position + 1 if consecutive else first + 1
            fused[key] = fused.get(key, 0.0) + 1.0 / (60 + rank)
    return sorted(fused, key=lambda key: (-fused[key], key))[:k]


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> LocalEngine:
    """Rows in pairs with the same text and the same vector: every raw score is tied."""
    rows = 24
    rng = random.Random(11)
    texts = [" ".join(rng.choices(WORDS, k=4)) for _ in range(rows // 2)]
    vectors = [[rng.uniform(-1, 1) for _ in range(4)] for _ in range(rows // 2)]
    data = pa.table(
        {
            "id": [f"t{index:02d}" for index in range(rows)],
            "description": [texts[index // 2] for index in range(rows)],
            "embedding": pa.array(
                [vectors[index // 2] for index in range(rows)], type=pa.list_(pa.float32())
            ),
        }
    )
    opened = LocalEngine(tmp_path_factory.mktemp("tied"))
    opened.load_table("listings", data, text_columns=["description"])
    return opened


@pytest.mark.parametrize("ranking", ["competition", "row_number"])
def test_the_ranking_choice_fuses_tied_branches_as_its_reference(
    tied: LocalEngine, ranking: str
) -> None:
    query, vector, k = "quiet garden loft", [0.2, -0.4, 0.6, 0.1], 6
    text_rows = tied.sql(
        builders.bm25_search_sql(
            table=TABLE, column="description", query=query, k=24, columns=["id"]
        )
    ).to_pylist()  # every match, so the cut at 20 is the reference's own
    data = tied.read_table("listings").to_pylist()
    matrix = np.asarray([row["embedding"] for row in data], dtype=np.float32)
    cosine = 1.0 - (matrix @ np.asarray(vector, dtype=np.float32)) / (
        np.linalg.norm(matrix, axis=1) * np.linalg.norm(np.asarray(vector, dtype=np.float32))
    )
    text = sorted((-row["score"], row["id"]) for row in text_rows)[:20]
    nearest = sorted(((float(cosine[index]), row["id"]) for index, row in enumerate(data)))[:20]
    expected = _reciprocal_rank_fusion([text, nearest], k, consecutive=ranking == "row_number")
    sql = builders.hybrid_search_sql(
        table=TABLE,
        column="description",
        vector_column="embedding",
        query=query,
        vector=vector,
        k=k,
        ranking=ranking,
    )
    assert ("ROW_NUMBER() OVER" in sql) == (ranking == "row_number")
    assert [row["id"] for row in tied.sql(sql).to_pylist()] == expected


def test_the_rankings_differ_on_tied_scores(tied: LocalEngine) -> None:
    def top(ranking: str) -> list[str]:
        sql = builders.hybrid_search_sql(
            table=TABLE,
            column="description",
            vector_column="embedding",
            query="quiet garden loft",
            vector=[0.2, -0.4, 0.6, 0.1],
            k=6,
            ranking=ranking,
        )
        return [row["id"] for row in tied.sql(sql).to_pylist()]

    assert top("competition") != top("row_number")


def test_an_unknown_ranking_is_refused() -> None:
    with pytest.raises(PlanError, match="ranking must be one of 'competition', 'row_number'"):
        builders.hybrid_search_sql(
            table=TABLE,
            column="description",
            vector_column="embedding",
            query="q",
            vector=[1.0],
            ranking="dense",
        )
