"""The highlight step on every engine path: the matched words' offsets slice exactly the
words as stored — a stemmed form, a decomposed accent, a CJK run, after a character outside
the Basic Multilingual Plane — and every engine gives the same offsets and snippets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, PlanError, SearchPlan
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.results import executed_plan, search_result
from hotdata_retrieval.plan.steps import Highlight
from tests.parity.engines import ENGINE_PATHS, missing_column_message, open_engine

QUERY = "running CAFÉ 天安门"
BODIES = [
    "She Runs every morning, then runs again",  # stemmed forms
    "a cafe\u0301 near the station",  # é as e + a combining accent
    "\U0001d4b3 参观 天安门 广场",  # a CJK run after an astral character
    "nothing to see here",
]
MATCHED = {1: ["Runs", "runs"], 2: ["cafe\u0301"], 3: ["天安门"]}
"""Per row key, the words the query matches, as stored."""


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    name = request.param
    opened = open_engine(name, tmp_path_factory.mktemp(f"hl-{name.replace(' ', '-')}"), request)
    table = pa.table(
        {
            "id": list(range(1, len(BODIES) + 1)),
            "body": BODIES,
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(len(BODIES))], pa.list_(pa.float32(), 2)
            ),
        }
    )
    opened.load_table("docs", table, key_column="id", text_columns=["body"])
    yield name, opened
    opened.close()


def _hits(name: str, engine: Any, plan: SearchPlan) -> Any:
    if name == "local statement":
        executed = executed_plan(plan)
        statement = to_sql(executed)
        return search_result(plan, executed, engine.sql(statement).to_pylist(), statement).hits
    return engine.search(plan).hits


def _plan(**options: Any) -> SearchPlan:
    return SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text=QUERY),
        steps=[Highlight(**options)],
    )


def test_offsets_slice_the_matched_words_as_stored(engine: tuple[str, Any]) -> None:
    name, opened = engine
    hits = _hits(name, opened, _plan(fragment_size=12, fragments=2))
    assert {hit.key for hit in hits} == set(MATCHED)
    for hit in hits:
        text = hit.columns["body"]
        found = hit.highlights["body"]
        assert [text[start:end] for start, end in found["matches"]] == MATCHED[hit.key]
        for fragment in found["fragments"]:
            assert fragment["text"] == text[fragment["start"] : fragment["end"]]
            assert len(fragment["text"]) <= 12
            for start, end in fragment["matches"]:
                assert fragment["start"] <= start < end <= fragment["end"]
        assert len(found["fragments"]) <= 2


_SEEN: dict[str, Any] = {}


def test_every_engine_gives_the_same_highlights(engine: tuple[str, Any]) -> None:
    name, opened = engine
    hits = _hits(name, opened, _plan(fragment_size=20, fragments=1))
    shown = {hit.key: hit.highlights for hit in hits}
    first = _SEEN.setdefault("highlights", shown)
    assert shown == first


def test_bounds_are_refused() -> None:
    with pytest.raises(PlanError, match="fragment_size must be at most 2000"):
        Highlight(fragment_size=10_000)
    with pytest.raises(PlanError, match="fragments must be at most 20"):
        Highlight(fragments=100)


def test_a_request_and_hdq_search_take_highlight(tmp_path: Any) -> None:
    import json

    from click.testing import CliRunner

    from hotdata_retrieval.cli import main
    from hotdata_retrieval.engines.local import LocalEngine
    from hotdata_retrieval.routing import SearchRequest

    table = pa.table({"id": list(range(1, len(BODIES) + 1)), "body": BODIES})
    with LocalEngine(tmp_path / "db") as local:
        local.load_table("docs", table, text_columns=["body"])
        plan = local.plan_search(
            SearchRequest(table="docs", query=QUERY, mode="text", highlight=True, fragments=2)
        )
        hits = local.search(plan).hits
    assert {hit.key: [hit.columns["body"][s:e] for s, e in hit.highlights["body"]["matches"]]
            for hit in hits} == MATCHED  # fmt: skip
    result = CliRunner().invoke(
        main,
        ["search", QUERY, "--table", "docs", "--database", str(tmp_path / "db"), "--mode",
         "text", "--highlight", "--fragment-size", "30", "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    shown = {hit["key"]: hit["highlights"]["body"] for hit in json.loads(result.stdout)["hits"]}
    assert {key: value["matches"] for key, value in shown.items()} == {
        hit.key: hit.highlights["body"]["matches"] for hit in hits
    }
    assert all(len(value["fragments"][0]["text"]) <= 30 for value in shown.values())
    alone = CliRunner().invoke(
        main,
        ["search", QUERY, "--table", "docs", "--database", str(tmp_path / "db"),
         "--fragments", "2"],
    )  # fmt: skip
    assert "give highlight too" in alone.stderr


def test_an_unknown_highlight_column_is_named_with_the_table_columns(
    engine: tuple[str, Any],
) -> None:
    """A highlight column the table lacks is named with the table's columns, as an unknown
    projected column is."""
    _, opened = engine
    with pytest.raises(EngineError, match=missing_column_message(opened, "nope")):
        opened.search(_plan(columns=["nope"]))


def test_a_highlight_column_that_holds_no_text_is_refused(engine: tuple[str, Any]) -> None:
    """A highlight column that holds no text (the integer key) is refused naming it, not
    highlighted as nothing."""
    _, opened = engine
    with pytest.raises(PlanError, match=r"highlight column 'id' of table .* holds integer") as no:
        opened.search(_plan(columns=["id"]))
    assert no.value.field == "highlight"
    assert no.value.value == "id"
