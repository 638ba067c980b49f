"""The agent's tools as LlamaIndex ``FunctionTool`` objects: built from the same settings as
the LangChain tools, they have the same names, descriptions and argument schemas, return the
same rows, and refuse a bad or invented argument with a one-line error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchSettings, ToolError
from hotdata_retrieval.adapters.langchain import make_search_tools as langchain_tools
from hotdata_retrieval.adapters.llamaindex import make_search_tools
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine

BODIES = ["red fox", "red car", "red sky", "blue fox", "green tea"]
RATINGS = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    directory = tmp_path_factory.mktemp("llamaindex-tools") / "db"
    table = pa.table({"id": [1, 2, 3, 4, 5], "body": BODIES, "rating": RATINGS})
    with LocalEngine(directory, embedder=HashingEmbedder()) as opened:
        opened.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
        yield opened


SETTINGS = SearchSettings(table="docs", k=5, max_rows=10, name_prefix="shop_")


def test_the_tools_are_the_langchain_tools(engine: LocalEngine) -> None:
    ours = make_search_tools(engine, SETTINGS)
    theirs = langchain_tools(engine, SETTINGS)
    assert [tool.metadata.name for tool in ours] == [tool.name for tool in theirs]
    for tool, twin in zip(ours, theirs):
        assert tool.metadata.description == twin.description
        schema = tool.metadata.get_parameters_dict()
        assert schema["properties"] == twin.args_schema.model_json_schema()["properties"]
        assert schema["required"] == twin.args_schema.model_json_schema()["required"]


def test_a_search_returns_the_rows_of_the_langchain_tool(engine: LocalEngine) -> None:
    text = make_search_tools(engine, SETTINGS)[0]
    twin = langchain_tools(engine, SETTINGS)[0]
    arguments = {"query": "red fox", "filter": "rating <= 2", "k": 3}
    output = text.call(**arguments)
    rows = json.loads(output.content)["rows"]
    assert rows == json.loads(twin.invoke(arguments))["rows"]
    assert {row["id"] for row in rows} <= {1, 2}


def test_bad_and_invented_arguments_are_one_line_errors(engine: LocalEngine) -> None:
    text = make_search_tools(engine, SETTINGS)[0]
    with pytest.raises(ToolError, match=r"^invalid arguments: k: Input should be greater"):
        text.call(query="red", k=0)
    with pytest.raises(ToolError, match=r"^invalid arguments: limit: Extra inputs"):
        text.call(query="red", limit=3)
    with pytest.raises(ToolError, match="the filter text does not read"):
        text.call(query="red", filter="rating <=")


def test_sql_and_semantic_follow_the_settings(engine: LocalEngine) -> None:
    names = [tool.metadata.name for tool in make_search_tools(engine, table="docs")]
    assert names[0] == "hotdata_search_text" and names[-1] == "hotdata_execute_sql"
    only = make_search_tools(engine, table="docs", sql=False, semantic=False)
    assert [tool.metadata.name for tool in only] == ["hotdata_search_text"]
    sql = make_search_tools(engine, table="docs")[-1]
    answer = json.loads(sql.call(sql="SELECT count(*) AS n FROM default.public.docs").content)
    assert answer["rows"] == [{"n": len(BODIES)}]
