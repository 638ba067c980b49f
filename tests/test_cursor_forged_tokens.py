"""A forged ``after`` token (a real one with any JSON value in one of its fields) is refused
with a ``PlanError`` naming ``after``, or continues a ranking; it never reaches a comparison
or a statement it breaks, through a request and through an agent's search tool."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval import PlanError
from hotdata_retrieval.adapters.settings import SearchSettings
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.routing import SearchRequest

BODIES = [f"disk full {'again ' * (index % 3)}on host {index % 4}" for index in range(12)]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=16)) as opened:
        opened.load_table(
            "docs",
            pa.table({"id": list(range(len(BODIES))), "body": BODIES}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield opened


def _request(after: str | None, mode: str = "hybrid") -> SearchRequest:
    return SearchRequest(table="docs", query="disk", mode=mode, limit=3, after=after)


def _real(engine: LocalEngine, mode: str = "hybrid") -> dict[str, Any]:
    token = engine.search(engine.plan_search(_request(None, mode))).next_after
    assert token is not None
    document = json.loads(base64.urlsafe_b64decode(token))
    assert isinstance(document, dict)
    return document


def _encode(document: Any) -> str:
    text = json.dumps(document, allow_nan=True)
    return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")


@pytest.mark.parametrize("mode", ["text", "nearest", "hybrid"])
def test_a_text_key_against_whole_number_keys_is_refused(engine: LocalEngine, mode: str) -> None:
    forged = {**_real(engine, mode), "k": "x"}
    with pytest.raises(PlanError, match="after is not a cursor token") as refused:
        engine.search(engine.plan_search(_request(_encode(forged), mode)))
    assert refused.value.field == "after"


@pytest.mark.parametrize(
    ("field", "value"),
    [("v", 10**400), ("v", 2**1100), ("k", 2**70), ("k", "\ud800"), ("n", 10**30), ("n", 0),
     ("p", "x"), ("p", "0123456789ABCDEF"), ("k", True), ("n", 2.0)],
)  # fmt: skip
def test_a_field_out_of_type_or_range_is_refused(
    engine: LocalEngine, field: str, value: Any
) -> None:
    with pytest.raises(PlanError, match="after is not a cursor token"):
        SearchRequest(table="docs", query="disk", after=_encode({**_real(engine), field: value}))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(["v", "k", "n", "p"]), value=JSON_VALUES)
def test_a_forged_token_is_refused_or_continues(
    engine: LocalEngine, field: str, value: Any
) -> None:
    token = _encode({**_real(engine), field: value})
    try:
        result = engine.search(engine.plan_search(_request(token)))
    except PlanError as error:
        assert error.field == "after"
        return
    assert len(result.hits) <= 3


def test_an_agent_tool_refuses_a_forged_token_in_one_line(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.langchain import make_search_tools

    tool = make_search_tools(engine, SearchSettings(table="docs", k=3))[0]
    first = json.loads(tool.invoke({"query": "disk"}))
    document = json.loads(base64.urlsafe_b64decode(first["metadata"]["next_after"]))
    answer = tool.invoke({"query": "disk", "after": _encode({**document, "k": "x"})})
    assert answer.startswith("Error: after is not a cursor token"), answer
    assert "\n" not in answer


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_a_statement_engine_refuses_a_key_of_the_other_kind(kind: str, tmp_path: Any) -> None:
    from hotdata_retrieval.engines.duckdb import DuckdbEngine
    from hotdata_retrieval.engines.sqlite import SqliteEngine

    engine = SqliteEngine(tmp_path / "s.db") if kind == "sqlite" else DuckdbEngine(tmp_path / "d")
    engine.load_table(
        "docs", pa.table({"id": list(range(12)), "body": BODIES}), text_columns=["body"]
    )
    request = SearchRequest(table="docs", query="disk", mode="text", limit=3)
    token = engine.search(engine.plan_search(request)).next_after
    assert token is not None
    forged = {**json.loads(base64.urlsafe_b64decode(token)), "k": "x"}
    continued = SearchRequest(
        table="docs", query="disk", mode="text", limit=3, after=_encode(forged)
    )
    with pytest.raises(PlanError, match="its key 'x' is text, the key column 'id'"):
        engine.search(engine.plan_search(continued))
