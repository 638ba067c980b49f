"""LangChain tools and retriever on the local engine: descriptions, routing, k clamping, the
envelope, SQL lint warnings, and errors as tool errors (the standard suites are in
``test_adapters_langchain_standard.py``)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import attrs
import pyarrow as pa
import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document
from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool

from hotdata_retrieval import to_sql
from hotdata_retrieval.adapters import (
    FORBIDDEN_DESCRIPTION_WORDS,
    SearchToolkit,
    ToolError,
)
from hotdata_retrieval.adapters.langchain import (
    HotdataRetriever,
    make_search_tools,
    make_semantic_search_tool,
    make_sql_tool,
    make_text_search_tool,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.lint import IndexCatalog
from hotdata_retrieval.plan.search import SearchPlan
from hotdata_retrieval.routing import SearchRequest, TableIndexes, VectorIndex, plan_search

BODIES = [
    "the app crashes on start",
    "charged twice for one order",
    "password reset mail never arrives",
    "sync fails with error E1234",
    "refund for a cancelled plan",
    "login loops back to the start page",
    "the disk is full after the upgrade",
    "timeout when uploading large files",
    "billing address cannot be changed",
    "dark mode request",
    "export to csv is broken",
    "crash when opening the settings page",
]
BRIEF_SQL = "SELECT * FROM bm25_search('default.public.docs','body','x') LIMIT 3"


def _rows() -> pa.Table:
    return pa.table(
        {
            "id": list(range(1, len(BODIES) + 1)),
            "title": [f"ticket {i}" for i in range(1, len(BODIES) + 1)],
            "lang": ["en", "de"] * (len(BODIES) // 2),
            "body": BODIES,
        }
    )


def _engine() -> LocalEngine:
    engine = LocalEngine(embedder=HashingEmbedder(dimensions=64))
    engine.load_table("docs", _rows(), text_columns=["body"], embed_columns=["body"])
    engine.load_table("words", _rows(), text_columns=["body"])
    engine.load_table("meanings", _rows(), embed_columns=["body"])
    engine.load_table("plain", _rows())
    return engine


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    local = _engine()
    yield local
    local.close()


class SpyEngine:
    """The local engine, recording what the adapters ask of it."""

    def __init__(self, engine: LocalEngine) -> None:
        self.engine = engine
        self.plans: list[SearchPlan] = []
        self.statements: list[str] = []

    def search(self, plan: SearchPlan) -> Any:
        self.plans.append(plan)
        return self.engine.search(plan)

    def sql(self, text: str) -> Any:
        self.statements.append(text)
        return self.engine.sql(text)

    def indexes(self, table: Any) -> Any:
        return self.engine.indexes(table)

    def embedder_for(self, table: Any) -> Any:
        return self.engine.embedder_for(table)


@pytest.fixture
def spy(engine: LocalEngine) -> SpyEngine:
    return SpyEngine(engine)


def _tools(engine: Any, table: str = "docs", **options: Any) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in make_search_tools(engine, table=table, **options)}


def _call(tool: BaseTool, **args: Any) -> ToolMessage:
    message = tool.invoke(ToolCall(name=tool.name, args=args, id="call-1", type="tool_call"))
    assert isinstance(message, ToolMessage)
    return message


def _result(tool: BaseTool, **args: Any) -> dict[str, Any]:
    message = _call(tool, **args)
    assert message.status == "success", message.content
    assert isinstance(message.content, str)
    document = json.loads(message.content)
    assert document == message.artifact
    return document  # type: ignore[no-any-return]


# -- the tool set ----------------------------------------------------------------------------


def test_a_table_with_words_and_meaning_gets_three_tools(engine: LocalEngine) -> None:
    assert list(_tools(engine)) == [
        "hotdata_search_text",
        "hotdata_search_semantic",
        "hotdata_execute_sql",
    ]


def test_a_words_only_table_gets_no_semantic_tool(engine: LocalEngine) -> None:
    assert list(_tools(engine, "words")) == ["hotdata_search_text", "hotdata_execute_sql"]


def test_a_meaning_only_table_answers_text_search_by_meaning_without_a_second_tool(
    engine: LocalEngine,
) -> None:
    tools = _tools(engine, "meanings")
    assert list(tools) == ["hotdata_search_text", "hotdata_execute_sql"]
    assert _result(tools["hotdata_search_text"], query="crash")["metadata"]["ranked_by"] == (
        "_distance"
    )


def test_a_table_with_nothing_to_search_gets_the_sql_tool_only(engine: LocalEngine) -> None:
    assert list(_tools(engine, "plain")) == ["hotdata_execute_sql"]
    with pytest.raises(ToolError, match="no searchable text column"):
        make_text_search_tool(engine, table="plain")


def test_tools_can_be_left_out_and_renamed(engine: LocalEngine) -> None:
    assert list(_tools(engine, semantic=False, sql=False)) == ["hotdata_search_text"]
    assert list(_tools(engine, name_prefix="support_", semantic=False)) == [
        "support_search_text",
        "support_execute_sql",
    ]


def test_search_tools_take_query_k_filter_and_fusion_and_the_sql_tool_takes_sql(
    engine: LocalEngine,
) -> None:
    tools = _tools(engine)
    assert SearchToolkit(engine, table="docs").offers_fusion
    assert set(tools["hotdata_search_text"].args) == {
        "query",
        "k",
        "filter",
        "fusion",
        "diversity",
        "candidates",
        "queries",
        "explain_scores",
        "group_by",
        "group_size",
        "after",
        "highlight",
        "facets",
    }
    assert set(tools["hotdata_search_semantic"].args) == {
        "query",
        "k",
        "filter",
        "diversity",
        "candidates",
        "queries",
        "group_by",
        "group_size",
        "after",
        "highlight",
        "facets",
    }
    assert set(tools["hotdata_execute_sql"].args) == {"sql"}
    assert "1 to 50" in tools["hotdata_search_text"].args["k"]["description"]


def test_an_unknown_table_fails_at_construction(engine: LocalEngine) -> None:
    with pytest.raises(Exception, match="not found"):
        make_search_tools(engine, table="nope")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 0}, "k must be"),
        ({"max_rows": 0}, "max_rows must be"),
        ({"k": 60, "max_rows": 50}, r"k \(60\) must not exceed max_rows \(50\)"),
        ({"k": True}, "k must be"),
    ],
)
def test_bad_limits_fail_at_construction(
    engine: LocalEngine, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolError, match=message):
        make_search_tools(engine, table="docs", **options)


def test_the_default_k_stays_under_a_low_ceiling(engine: LocalEngine) -> None:
    assert SearchToolkit(engine, table="docs").k == 5
    assert SearchToolkit(engine, table="docs", max_rows=3).k == 3


# -- descriptions ------------------------------------------------------------------------------


def _all_descriptions(engine: LocalEngine) -> list[str]:
    descriptions: list[str] = []
    for table in ("docs", "words", "meanings", "plain"):
        descriptions.extend(tool.description for tool in make_search_tools(engine, table=table))
    bare = LocalEngine(engine.root)  # the same tables, no embedder: no fusion
    descriptions.extend(tool.description for tool in make_search_tools(bare, table="docs"))
    return descriptions


def test_no_description_names_the_mechanism(engine: LocalEngine) -> None:
    for description in _all_descriptions(engine):
        for word in FORBIDDEN_DESCRIPTION_WORDS:
            assert word not in description.lower(), (word, description)


def test_no_description_says_sql_cannot_rank(engine: LocalEngine) -> None:
    for description in _all_descriptions(engine):
        assert "cannot rank" not in description.lower()


def test_text_search_says_the_score_runs_highest_first(engine: LocalEngine) -> None:
    description = _tools(engine)["hotdata_search_text"].description
    assert "`score`: higher is more relevant, and rows come highest first" in description


def test_semantic_search_says_the_distance_runs_smallest_first(engine: LocalEngine) -> None:
    description = _tools(engine)["hotdata_search_semantic"].description
    assert "`_distance`: smaller is closer in meaning, and rows come smallest first" in description


def test_search_descriptions_state_the_k_ceiling(engine: LocalEngine) -> None:
    tools = _tools(engine, k=3, max_rows=7)
    for name in ("hotdata_search_text", "hotdata_search_semantic"):
        description = tools[name].description
        assert "1 to 7, default 3" in description
        assert "A larger k is reduced to 7" in description


def test_search_descriptions_name_the_columns_a_row_carries(engine: LocalEngine) -> None:
    assert (
        "the columns `id`, `body` and `score`" in _tools(engine)["hotdata_search_text"].description
    )
    custom = make_text_search_tool(engine, table="docs", columns=["title", "lang"])
    assert "the columns `title`, `lang` and `score`" in custom.description


def test_search_descriptions_steer_away_from_like_and_send_counting_to_sql(
    engine: LocalEngine,
) -> None:
    tools = _tools(engine)
    for name in ("hotdata_search_text", "hotdata_search_semantic"):
        description = tools[name].description
        assert "LIKE" in description and "ILIKE" in description
        assert "how many rows" in description
        assert "use hotdata_execute_sql" in description
    assert "use hotdata_search_text instead of LIKE" in tools["hotdata_execute_sql"].description


def test_text_search_describes_what_its_route_matches(engine: LocalEngine) -> None:
    fused = _tools(engine)["hotdata_search_text"].description
    assert "both the words of the query and what it means" in fused
    words = _tools(engine, "words")["hotdata_search_text"].description
    assert "matches the words of the query" in words and "what it means" not in words
    meaning = _tools(engine, "meanings")["hotdata_search_text"].description
    assert "matches what the query means" in meaning
    assert "`_distance`: smaller is closer" in meaning


def test_without_vectors_text_search_does_not_fuse(engine: LocalEngine) -> None:
    tool = make_text_search_tool(engine, table="words")
    assert "matches the words of the query" in tool.description
    assert _result(tool, query="crash")["metadata"]["ranked_by"] == "score"


def test_an_engine_opened_without_an_embedder_uses_the_model_recorded_at_load(
    engine: LocalEngine,
) -> None:
    bare = LocalEngine(engine.root)
    assert bare.embedder_for("docs").name == engine.embedder.name
    tool = make_text_search_tool(bare, table="docs")
    assert "matches the words of the query" not in tool.description
    fused = _result(tool, query="crash", k=3)["rows"]
    expected = _result(make_text_search_tool(engine, table="docs"), query="crash", k=3)["rows"]
    assert fused == expected


def test_sql_description_states_the_ceiling_and_the_full_name(engine: LocalEngine) -> None:
    description = _tools(engine, max_rows=20)["hotdata_execute_sql"].description
    assert "At most 20 rows come back" in description
    assert "default.public.docs" in description
    assert "metadata.warnings" in description


# -- search calls ------------------------------------------------------------------------------


def test_text_search_fuses_and_returns_the_envelope(engine: LocalEngine) -> None:
    document = _result(_tools(engine)["hotdata_search_text"], query="crash", k=3)
    metadata = document["metadata"]
    assert isinstance(metadata.pop("next_after"), str)  # a full page: the next one follows
    assert metadata == {
        "tool": "hotdata_search_text",
        "row_count": 3,
        "returned": 3,
        "truncated": False,
        "warnings": [],
        "table": "default.public.docs",
        "k": 3,
        "ranked_by": "score",
        "order": "descending",
    }
    assert [list(row) for row in document["rows"]] == [["id", "body", "score"]] * 3
    assert {row["id"] for row in document["rows"][:2]} == {1, 12}
    scores = [row["score"] for row in document["rows"]]
    assert scores == sorted(scores, reverse=True)


def test_text_search_builds_a_fused_plan_and_writes_no_sql(spy: SpyEngine) -> None:
    _result(_tools(spy)["hotdata_search_text"], query="crash")
    (plan,) = spy.plans
    assert plan.fusion is not None
    assert [branch.kind for branch in plan.branches] == ["text", "nearest"]
    assert spy.statements == []


def test_semantic_search_returns_the_engines_distance_smallest_first(
    engine: LocalEngine,
) -> None:
    document = _result(_tools(engine)["hotdata_search_semantic"], query="crash", k=4)
    assert document["metadata"]["ranked_by"] == "_distance"
    assert document["metadata"]["order"] == "ascending"
    distances = [row["_distance"] for row in document["rows"]]
    assert distances == sorted(distances)
    assert document["rows"][0]["id"] == 12
    assert "distance" not in document["rows"][0]


def test_the_constructor_k_applies_when_the_model_gives_none(spy: SpyEngine) -> None:
    document = _result(_tools(spy, k=2)["hotdata_search_text"], query="crash")
    assert spy.plans[-1].limit == 2
    assert document["metadata"]["k"] == 2 and len(document["rows"]) == 2


def test_the_model_can_choose_k_up_to_the_ceiling(spy: SpyEngine) -> None:
    document = _result(_tools(spy)["hotdata_search_text"], query="crash", k=7)
    assert spy.plans[-1].limit == 7
    assert document["metadata"]["warnings"] == []
    assert "k_requested" not in document["metadata"]


def test_a_larger_k_is_clamped_before_the_query_runs_and_the_result_says_so(
    spy: SpyEngine,
) -> None:
    document = _result(_tools(spy, k=2, max_rows=4)["hotdata_search_text"], query="crash", k=500)
    assert spy.plans[-1].limit == 4
    metadata = document["metadata"]
    assert (metadata["k"], metadata["k_requested"], metadata["truncated"]) == (4, 500, True)
    (warning,) = metadata["warnings"]
    assert warning["code"] == "k_clamped"
    assert "k=500" in warning["message"] and "ceiling of 4" in warning["message"]
    assert "hotdata_execute_sql" in warning["message"]
    assert "page" not in warning["message"]


def test_a_clamp_that_cut_nothing_is_not_reported_as_truncated(engine: LocalEngine) -> None:
    metadata = _result(_tools(engine, "words")["hotdata_search_text"], query="crash", k=99)[
        "metadata"
    ]
    assert metadata["k"] == 50 and metadata["warnings"][0]["code"] == "k_clamped"
    assert metadata["row_count"] < 50 and metadata["truncated"] is False


def test_the_semantic_tool_clamps_too(spy: SpyEngine) -> None:
    document = _result(_tools(spy, k=2, max_rows=3)["hotdata_search_semantic"], query="crash", k=9)
    assert spy.plans[-1].limit == 3
    assert document["metadata"]["warnings"][0]["code"] == "k_clamped"


@pytest.mark.parametrize("k", [0, -3, "many", 2.5])
def test_a_bad_k_is_a_tool_error_not_a_crash(spy: SpyEngine, k: Any) -> None:
    message = _call(_tools(spy)["hotdata_search_text"], query="crash", k=k)
    assert message.status == "error"
    assert isinstance(message.content, str)
    assert message.content.startswith("Error: invalid arguments: k:")
    assert spy.plans == []


def test_a_missing_or_empty_query_is_a_tool_error(engine: LocalEngine) -> None:
    tool = _tools(engine)["hotdata_search_text"]
    assert _call(tool, k=3).status == "error"
    assert _call(tool, query="").status == "error"
    blank = _call(tool, query="   ")
    assert blank.status == "error" and "query must be non-empty text" in str(blank.content)


def test_explicit_columns_are_returned_exactly_as_given(engine: LocalEngine) -> None:
    tool = make_text_search_tool(engine, table="docs", columns=["title"])
    row = _result(tool, query="crash")["rows"][0]
    assert list(row) == ["title", "score"]


def test_an_engine_failure_comes_back_as_a_tool_error(engine: LocalEngine) -> None:
    tool = make_text_search_tool(engine, table="docs")
    message = _call(tool, query="crash", filter={"nope": "x"})
    assert message.status == "error"
    assert "column 'nope' not found" in str(message.content)


def test_a_column_the_table_lacks_is_refused_when_the_tool_is_made(engine: LocalEngine) -> None:
    with pytest.raises(ToolError, match="column 'nope' not found"):
        make_text_search_tool(engine, table="docs", columns=["nope"])


def test_async_calls_report_errors_the_same_way(engine: LocalEngine) -> None:
    tool = _tools(engine)["hotdata_execute_sql"]
    call = ToolCall(name=tool.name, args={"sql": "SELECT nope FROM docs"}, id="1", type="tool_call")
    message = asyncio.run(tool.ainvoke(call))
    assert message.status == "error"
    assert "nope" in message.content


# -- the SQL tool ------------------------------------------------------------------------------


def test_a_pattern_match_on_the_searchable_column_warns_with_the_search_to_use(
    engine: LocalEngine,
) -> None:
    sql = "SELECT id FROM docs WHERE body ILIKE '%disk%'"
    document = _result(_tools(engine)["hotdata_execute_sql"], sql=sql)
    (warning,) = document["metadata"]["warnings"]
    assert warning["code"] == "HDQ025" and warning["severity"] == "warning"
    assert "bm25_search('default.public.docs', 'body', 'disk', k)" in warning["suggestion"]


def test_agent_sql_runs_and_its_lint_findings_come_back_as_warnings(spy: SpyEngine) -> None:
    document = _result(_tools(spy)["hotdata_execute_sql"], sql=BRIEF_SQL)
    assert spy.statements == [BRIEF_SQL]
    warnings = document["metadata"]["warnings"]
    assert [warning["code"] for warning in warnings] == ["HDQ010"]
    assert warnings[0]["severity"] == "error"
    assert warnings[0]["suggestion"] == "add ORDER BY score DESC"
    assert document["metadata"]["row_count"] == len(document["rows"]) == 0


def test_agent_sql_returns_rows_under_the_engines_column_names(engine: LocalEngine) -> None:
    sql = (
        "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'crash', 5) "
        "ORDER BY score DESC LIMIT 5"
    )
    document = _result(_tools(engine)["hotdata_execute_sql"], sql=sql)
    assert document["metadata"]["warnings"] == []
    assert [row["id"] for row in document["rows"]] == [1, 12]
    assert list(document["rows"][0]) == ["id", "score"]


def test_a_long_sql_result_is_cut_to_the_ceiling_and_says_so(engine: LocalEngine) -> None:
    document = _result(
        _tools(engine, k=2, max_rows=3)["hotdata_execute_sql"],
        sql="SELECT id FROM default.public.docs ORDER BY id",
    )
    metadata = document["metadata"]
    assert (metadata["row_count"], metadata["returned"], metadata["truncated"]) == (12, 3, True)
    assert document["rows"] == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert metadata["warnings"][-1]["code"] == "rows_truncated"


def test_aggregates_come_back_whole(engine: LocalEngine) -> None:
    document = _result(
        _tools(engine)["hotdata_execute_sql"],
        sql="SELECT lang, COUNT(*) AS n FROM default.public.docs GROUP BY lang ORDER BY lang",
    )
    assert document["rows"] == [{"lang": "de", "n": 6}, {"lang": "en", "n": 6}]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DROP TABLE docs", "only read-only queries (SELECT) run here, got DROP"),
        ("INSERT INTO docs (id) VALUES (99)", "got INSERT"),
        ("COPY (SELECT 1) TO '/tmp/hdq-out.csv'", "got COPY"),
        ("SELECT 1 INTO t2", "got SELECT ... INTO"),
        ("SELECT 1; SELECT 2", "one query at a time"),
        ("SELEC id FROM docs", "does not parse"),
        ("SELECT nope FROM default.public.docs", "No field named nope"),
    ],
)
def test_refused_or_failed_sql_is_a_tool_error(spy: SpyEngine, sql: str, message: str) -> None:
    reply = _call(_tools(spy)["hotdata_execute_sql"], sql=sql)
    assert reply.status == "error"
    assert message in str(reply.content)
    if "No field" not in message:
        assert spy.statements == []


def test_read_only_can_be_turned_off(engine: LocalEngine) -> None:
    tool = make_sql_tool(engine, table="docs", read_only=False)
    assert "one SQL statement" in tool.description
    document = _result(tool, sql="SHOW TABLES")
    assert document["metadata"]["row_count"] > 0


def test_tools_share_one_toolkit(engine: LocalEngine) -> None:
    kit = SearchToolkit(engine, table="docs", max_rows=9)
    tools = [
        make_text_search_tool(toolkit=kit),
        make_semantic_search_tool(toolkit=kit),
        make_sql_tool(toolkit=kit),
    ]
    assert [tool.metadata for tool in tools] == [
        {"table": "default.public.docs", "max_rows": 9}
    ] * 3


# -- the retriever -----------------------------------------------------------------------------


def test_retriever_documents_carry_the_fused_score_and_each_branch_rank(
    engine: LocalEngine,
) -> None:
    documents = HotdataRetriever(engine=engine, table="docs", k=3).invoke("crash")
    assert len(documents) == 3
    first = documents[0]
    assert first.page_content in {BODIES[0], BODIES[11]}
    assert first.id in {"1", "12"}
    assert set(first.metadata) == {
        "id",
        "score",
        "text_rank",
        "text_score",
        "nearest_rank",
        "nearest_distance",
    }
    ranks = {(d.metadata["text_rank"], d.metadata["nearest_rank"]) for d in documents[:2]}
    assert ranks == {(1, 2), (2, 1)}
    assert documents[2].metadata["text_rank"] is None
    scores = [d.metadata["score"] for d in documents]
    assert scores == sorted(scores, reverse=True)


def test_retriever_takes_k_at_call_time(engine: LocalEngine) -> None:
    retriever = HotdataRetriever(engine=engine, table="docs", k=5)
    assert len(retriever.invoke("crash", k=2)) == 2
    assert len(retriever.invoke("crash")) == 5


def test_retriever_semantic_mode_reports_the_engines_distance(engine: LocalEngine) -> None:
    documents = HotdataRetriever(engine=engine, table="docs", mode="semantic", k=2).invoke("crash")
    assert set(documents[0].metadata) == {"id", "_distance", "semantic_rank", "semantic_distance"}
    assert documents[0].metadata["semantic_rank"] == 1


def test_retriever_filters_and_carries_extra_columns(engine: LocalEngine) -> None:
    retriever = HotdataRetriever(
        engine=engine, table="docs", k=3, filter="lang = 'de'", columns=["lang", "title"]
    )
    documents = retriever.invoke("crash")
    assert {d.metadata["lang"] for d in documents} == {"de"}
    assert documents[0].id == "12"
    assert documents[0].metadata["title"] == "ticket 12"


def test_retriever_shows_the_plan_it_runs(engine: LocalEngine) -> None:
    plan = HotdataRetriever(engine=engine, table="words", k=2).plan("crash")
    assert "bm25_search('default.public.docs'" not in to_sql(plan)
    assert "bm25_search('default.public.words', 'body', 'crash', 2)" in to_sql(plan)


def test_retriever_content_column_can_be_chosen(engine: LocalEngine) -> None:
    documents = HotdataRetriever(engine=engine, table="docs", k=1, content_column="title").invoke(
        "crash"
    )
    assert documents[0].page_content.startswith("ticket ")
    assert "body" in documents[0].metadata


def test_documents_are_langchain_documents(engine: LocalEngine) -> None:
    documents = HotdataRetriever(engine=engine, table="words", k=2).invoke("crash")
    assert all(isinstance(document, Document) for document in documents)
    assert re.fullmatch(r"\d+", documents[0].id or "")


# -- other engines ------------------------------------------------------------------------------


class PlanningEngine(SpyEngine):
    """An engine with its own routing (as the Hotdata engine has): the tools use it."""

    def __init__(self, engine: LocalEngine) -> None:
        super().__init__(engine)
        self.routed: list[dict[str, Any]] = []

    def plan_search(self, request: SearchRequest, **options: Any) -> SearchPlan:
        self.routed.append(
            {
                "table": str(request.table),
                "query": request.query,
                "mode": request.mode.value,
                "limit": request.limit,
                "key_column": request.key_column,
            }
        )
        indexes = self.engine.indexes(request.table)
        embedder = self.engine.embedder
        return plan_search(
            indexes, request, embed_query=None if embedder is None else embedder.embed_query
        )


def test_an_engine_with_its_own_routing_plans_the_searches(engine: LocalEngine) -> None:
    planning = PlanningEngine(engine)
    tool = _tools(planning, k=3)["hotdata_search_text"]
    routed_at_construction = len(planning.routed)
    document = _result(tool, query="crash")
    call = planning.routed[routed_at_construction]
    assert call["query"] == "crash"
    assert (call["table"], call["mode"], call["limit"]) == ("default.public.docs", "auto", 3)
    assert call["key_column"] == "id"
    assert planning.plans[-1].fusion is not None
    assert document["metadata"]["ranked_by"] == "score"


class PlainIndexEngine(SpyEngine):
    """A table whose only vector index is plain (queries embedded by the caller) and no
    embedder at hand: searching by meaning is impossible, searching by words is not."""

    def indexes(self, table: Any) -> TableIndexes:
        indexes = self.engine.indexes(table)
        return attrs.evolve(indexes, vectors=(VectorIndex(column="body_embedding"),))

    def embedder_for(self, table: Any) -> Any:
        return None


def test_a_plain_index_without_an_embedder_offers_no_semantic_tool(engine: LocalEngine) -> None:
    tools = _tools(PlainIndexEngine(engine))
    assert list(tools) == ["hotdata_search_text", "hotdata_execute_sql"]
    assert "matches the words of the query" in tools["hotdata_search_text"].description


def test_sql_on_another_table_is_linted_against_that_tables_indexes(engine: LocalEngine) -> None:
    sql = (
        "SELECT id, score FROM bm25_search('default.public.words', 'body', 'crash', 5) "
        "ORDER BY score DESC LIMIT 5"
    )
    document = _result(_tools(engine)["hotdata_execute_sql"], sql=sql)
    assert document["metadata"]["warnings"] == []
    unindexed = sql.replace("'body'", "'title'")
    reply = _call(_tools(engine)["hotdata_execute_sql"], sql=unindexed)
    assert reply.status == "error"  # the engine refuses it, and the linter says why
    assert "No BM25 index found on column 'title'" in str(reply.content)
    assert "HDQ020" in str(reply.content)


def test_without_a_table_list_catalog_findings_about_other_tables_are_dropped(
    spy: SpyEngine,
) -> None:
    sql = (
        "SELECT id, score FROM bm25_search('default.public.words', 'body', 'crash', 5) "
        "ORDER BY score DESC LIMIT 5"
    )
    assert _result(_tools(spy)["hotdata_execute_sql"], sql=sql)["metadata"]["warnings"] == []
    reply = _call(_tools(spy)["hotdata_execute_sql"], sql=sql.replace("words", "docs", 1))
    assert reply.status == "success"
    unindexed = _call(_tools(spy)["hotdata_execute_sql"], sql=sql.replace("'body'", "'title'"))
    assert "HDQ020" not in str(unindexed.content)  # about words, which the catalog lacks
    own = sql.replace("words", "docs", 1).replace("'body'", "'title'")
    assert "HDQ020" in str(_call(_tools(spy)["hotdata_execute_sql"], sql=own).content)


def test_an_explicit_catalog_is_used_whole(engine: LocalEngine) -> None:
    catalog = IndexCatalog()  # knows no index at all
    kit = SearchToolkit(engine, table="docs", catalog=catalog)
    sql = (
        "SELECT id, score FROM bm25_search('default.public.words', 'body', 'crash', 5) "
        "ORDER BY score DESC LIMIT 5"
    )
    warnings = kit.execute_sql(sql)["metadata"]["warnings"]
    assert [warning["code"] for warning in warnings] == ["HDQ020"]
