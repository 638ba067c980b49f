"""The DDN connector (``hotdata_retrieval.adapters.ddn``, ``hdq ddn``): its NDC endpoints on a
real port and through starlette's TestClient, its rows against ``hdq search`` on the same
local table, its refusals, and the HML ``hdq ddn metadata`` prints."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml
from click.testing import CliRunner
from starlette.testclient import TestClient

from hotdata_retrieval.adapters.ddn import FUNCTION_NAME, HIT_TYPE, create_app
from hotdata_retrieval.adapters.toolkit import FORBIDDEN_DESCRIPTION_WORDS
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli._local import embedder_for_model
from hotdata_retrieval.engines.local import LocalEngine

ROWS = [
    {"id": 1, "body": "the upgrade failed with error E1234", "status": "open", "tier": 1},
    {"id": 2, "body": "login works after the upgrade", "status": "closed", "tier": 2},
    {"id": 3, "body": "billing page is slow after the upgrade", "status": "open", "tier": 2},
    {"id": 4, "body": "error on the billing page after login", "status": "open", "tier": 1},
    {"id": 5, "body": "error E1234 again on login", "status": "closed", "tier": 1},
    {"id": 6, "body": "the export to csv is missing a column", "status": "open", "tier": 3},
]

FILTERS = ["--filter-column", "status", "--filter-column", "tier"]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ddn")
    source = root / "tickets.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    loaded = CliRunner().invoke(
        main, ["load", str(source), "--database", str(root / "db"), "--embedder", "hashing"]
    )
    assert loaded.exit_code == 0, loaded.output
    return root / "db"


@pytest.fixture(scope="module")
def engine(database: Path) -> Iterator[LocalEngine]:
    with LocalEngine(database) as opened:
        (vector,) = opened.tables["tickets"].vector_columns
        opened.embedder = embedder_for_model(vector.model)
        yield opened


@pytest.fixture(scope="module")
def client(engine: LocalEngine) -> TestClient:
    return TestClient(create_app(engine, table="tickets", filter_columns=["status", "tier"]))


def request(arguments: dict[str, Any], **query: Any) -> dict[str, Any]:
    return {
        "collection": FUNCTION_NAME,
        "arguments": {name: {"type": "literal", "value": v} for name, v in arguments.items()},
        "query": query or {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }


def hdq_search(database: Path, query: str, limit: int, *filters: str) -> list[dict[str, Any]]:
    """``hdq search --format json`` hits as SearchHit rows (an independent filter: SQL text)."""
    arguments = ["search", query, "--table", "tickets", "--database", str(database)]
    for condition in filters:
        arguments += ["--filter", condition]
    found = CliRunner().invoke(
        main, [*arguments, "-k", str(limit), "--columns", "id,body,status,tier", "--format", "json"]
    )
    assert found.exit_code == 0, found.output
    document = json.loads(found.stdout)
    return [
        {
            "id": hit["key"],
            "text": hit["columns"]["body"],
            "score": hit["score"],
            **{f"{name}_rank": hit["branches"][name]["rank"] for name in document["branches"]},
            "status": hit["columns"]["status"],
            "tier": hit["columns"]["tier"],
        }
        for hit in document["hits"]
    ]


def hits(answer: list[dict[str, Any]], *, cursors: bool = False) -> list[dict[str, Any]]:
    """The hits of a one-row answer; without their ``after`` cursor tokens unless
    ``cursors``."""
    (row_set,) = answer
    (row,) = row_set["rows"]
    value: list[dict[str, Any]] = row["__value"]
    if cursors:
        return value
    return [{name: field for name, field in hit.items() if name != "after"} for hit in value]


@pytest.mark.parametrize("page", [1, 2, 3])
def test_a_hits_after_field_pages_on_as_one_longer_search(
    client: TestClient, database: Path, page: int
) -> None:
    """Each hit's ``after``, passed back, gives the hits ranked after it: pages of ``page``
    hits chained by their last hit's token, and a page continued from a middle hit, are the
    longer search's hits (``hdq search`` with a larger ``-k``), to the end of the ranking,
    whose last hit has no token."""
    everything = hdq_search(database, "error login", 12)
    assert 3 < len(everything) < 12
    chained: list[dict[str, Any]] = []
    after = None
    while True:
        arguments = {"query": "error login", "top_k": page, **({"after": after} if after else {})}
        answer = client.post("/query", json=request(arguments))
        assert answer.status_code == 200, answer.text
        found = hits(answer.json(), cursors=True)
        assert all(hit["after"] for hit in found[:-1])
        chained += found
        after = found[-1]["after"] if found else None
        if after is None:
            break
    assert [{k: v for k, v in hit.items() if k != "after"} for hit in chained] == everything
    middle = client.post(
        "/query", json=request({"query": "error login", "top_k": 2, "after": chained[1]["after"]})
    )
    assert hits(middle.json()) == everything[2:4]


# -- a real port -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(engine: LocalEngine) -> Iterator[str]:
    app = create_app(engine, table="tickets", filter_columns=["status", "tier"])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    started = threading.Event()
    while not started.wait(0.02):
        if server.started:
            started.set()
        assert thread.is_alive(), "the connector stopped before it served"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def test_on_a_port_the_query_rows_equal_hdq_search_with_the_same_filter(
    served: str, database: Path
) -> None:
    with httpx.Client(base_url=served) as http:
        health = http.get("/health")
        assert health.status_code == 200 and health.content == b""
        capabilities = http.get("/capabilities").json()
        schema = http.get("/schema").json()
        answer = http.post(
            "/query",
            json=request({"query": "error after the upgrade", "top_k": 4, "status": "open"}),
        )
    assert capabilities["version"] == "0.2.0"
    (function,) = schema["functions"]
    assert function["name"] == FUNCTION_NAME
    assert answer.status_code == 200, answer.text
    found = hits(answer.json())
    assert found == hdq_search(database, "error after the upgrade", 4, "status = 'open'")
    assert found and {hit["status"] for hit in found} == {"open"}


@pytest.mark.parametrize(
    ("arguments", "condition"),
    [
        ({"tier": 1}, "tier = 1"),
        ({"status": "closed", "tier": 1}, "status = 'closed' AND tier = 1"),
        ({}, None),
    ],
)
def test_each_filter_argument_narrows_as_hdq_search_does(
    client: TestClient, database: Path, arguments: dict[str, Any], condition: str | None
) -> None:
    answer = client.post("/query", json=request({"query": "error login", "top_k": 6, **arguments}))
    assert answer.status_code == 200, answer.text
    filters = () if condition is None else (condition,)
    assert hits(answer.json()) == hdq_search(database, "error login", 6, *filters)


def test_the_schema_types_the_arguments_and_the_hit_fields(client: TestClient) -> None:
    schema = client.get("/schema").json()
    (function,) = schema["functions"]
    arguments = function["arguments"]
    assert list(arguments) == [
        "query",
        "top_k",
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
        "status",
        "tier",
    ]
    assert arguments["query"]["type"] == {"type": "named", "name": "String"}
    for name in ("filter", "fusion"):  # any JSON value, read by the option's row
        assert arguments[name]["type"]["underlying_type"] == {"type": "named", "name": "JSON"}
    assert schema["scalar_types"]["JSON"]["representation"] == {"type": "json"}
    assert arguments["tier"]["type"]["underlying_type"] == {"type": "named", "name": "Int64"}
    assert arguments["status"]["type"]["underlying_type"] == {"type": "named", "name": "String"}
    assert function["result_type"] == {
        "type": "array",
        "element_type": {"type": "named", "name": HIT_TYPE},
    }
    fields = schema["object_types"][HIT_TYPE]["fields"]
    assert {"id", "text", "score", "status", "tier"} <= set(fields)
    assert any(name.endswith("_rank") for name in fields)
    for field in fields.values():  # flat scalar fields, each a declared scalar type
        named = field["type"].get("underlying_type", field["type"])
        assert named["type"] == "named" and named["name"] in schema["scalar_types"]
    assert schema["collections"] == [] and schema["procedures"] == []


def test_the_description_names_the_capability_not_the_mechanism(client: TestClient) -> None:
    (function,) = client.get("/schema").json()["functions"]
    text = function["description"].lower()
    assert "search documents by text and meaning" in text
    for word in (*FORBIDDEN_DESCRIPTION_WORDS, "sql"):
        assert word not in text


def test_nested_fields_select_and_rename_hit_columns(client: TestClient, database: Path) -> None:
    selection = {
        "fields": {
            "hits": {
                "type": "column",
                "column": "__value",
                "fields": {
                    "type": "array",
                    "fields": {
                        "type": "object",
                        "fields": {"key": {"type": "column", "column": "id"}},
                    },
                },
            }
        }
    }
    answer = client.post("/query", json=request({"query": "billing", "top_k": 3}, **selection))
    assert answer.status_code == 200, answer.text
    (row_set,) = answer.json()
    expected = [{"key": hit["id"]} for hit in hdq_search(database, "billing", 3)]
    assert row_set["rows"] == [{"hits": expected}]


def test_each_variable_set_gets_its_row_set(client: TestClient) -> None:
    body = request({"query": "error", "top_k": 3})
    body["arguments"]["status"] = {"type": "variable", "name": "wanted"}
    body["variables"] = [{"wanted": "open"}, {"wanted": "closed"}]
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    one, two = answer.json()
    for row_set, status in ((one, "open"), (two, "closed")):
        alone = client.post(
            "/query", json=request({"query": "error", "top_k": 3, "status": status})
        )
        assert row_set == alone.json()[0]
        assert {hit["status"] for hit in row_set["rows"][0]["__value"]} == {status}


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"query": "error", "top_k": 0}, "'top_k' must be 1 to 50, got 0"),
        ({"query": "error", "top_k": 51}, "got 51"),
        ({"query": "error", "top_k": "5"}, "'top_k' takes an Int32, got \"5\""),
        ({"query": "error", "top_k": True}, "got true"),
        ({"query": "error", "tier": "one"}, "'tier' takes an Int64, got \"one\""),
        ({"query": "error", "status": 3}, "'status' takes a String, got 3"),
        ({"query": "error", "colour": "red"}, "no argument 'colour'"),
        ({"top_k": 3}, "'query' must be non-empty text, got null"),
        ({"query": "   "}, "'query' must be non-empty text"),
        ({"query": "word " * 2000}, "max_query_characters"),
    ],
)
def test_bad_arguments_are_a_400_naming_the_value(
    client: TestClient, arguments: dict[str, Any], named: str
) -> None:
    answer = client.post("/query", json=request(arguments))
    assert answer.status_code == 400
    body = answer.json()
    assert set(body) == {"message", "details"} and named in body["message"]


def test_bad_requests_are_ndc_errors_never_tracebacks(client: TestClient) -> None:
    not_json = client.post("/query", content=b"{not json")
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["message"]
    other = request({"query": "error"})
    other["collection"] = "delete_everything"
    wrong = client.post("/query", json=other)
    assert wrong.status_code == 400 and "'delete_everything'" in wrong.json()["message"]
    filtered = request({"query": "error"})
    filtered["query"]["predicate"] = {"type": "and", "expressions": []}
    assert client.post("/query", json=filtered).status_code == 501
    huge = client.post("/query", content=b" " * (64 * 1024 + 1))
    assert huge.status_code == 400 and "65,536" in huge.json()["message"]
    missing = client.post("/query", json={"collection": FUNCTION_NAME})
    assert missing.status_code == 400 and "query" in missing.json()["message"]


def test_deeply_nested_json_within_the_body_bound_is_a_400(client: TestClient) -> None:
    # 40,000 bytes: under the 64 KiB bound, deeper than Python's JSON decoder recurses.
    nested = client.post("/query", content=b"[" * 20_000 + b"]" * 20_000)
    assert nested.status_code == 400 and "too deeply" in nested.json()["message"]


# -- hdq ddn metadata --------------------------------------------------------------------------


def test_hdq_ddn_metadata_is_hml_naming_the_command_type_and_relationship(database: Path) -> None:
    common = ["--table", "tickets", "--database", str(database), *FILTERS]
    printed = CliRunner().invoke(main, ["ddn", "metadata", *common, "--model", "Accounts"])
    assert printed.exit_code == 0, printed.output
    documents = list(yaml.safe_load_all(printed.stdout))
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for document in documents:
        by_kind.setdefault(document["kind"], []).append(document["definition"])
    (command,) = by_kind["Command"]
    assert command["name"] == "SearchDocuments"
    assert command["source"]["dataConnectorCommand"] == {"function": FUNCTION_NAME}
    names = [a["name"] for a in command["arguments"]]
    assert names == [
        "query",
        "topK",
        "filter",
        "fusion",
        "diversity",
        "candidates",
        "queries",
        "explainScores",
        "groupBy",
        "groupSize",
        "after",
        "highlight",
        "status",
        "tier",
    ]
    (json_scalar,) = by_kind["ScalarType"]
    assert json_scalar == {"name": "Json", "graphql": {"typeName": "Json"}}
    assert {a["name"]: a["type"] for a in command["arguments"]}["filter"] == "Json"
    assert command["source"]["argumentMapping"]["topK"] == "top_k"
    assert command["outputType"] == f"[{HIT_TYPE}!]!"
    (hit,) = by_kind["ObjectType"]
    assert hit["name"] == HIT_TYPE
    (mapping,) = hit["dataConnectorTypeMapping"]
    assert mapping["dataConnectorObjectType"] == HIT_TYPE
    assert {"id", "text", "score", "status", "tier"} <= {field["name"] for field in hit["fields"]}
    (relationship,) = by_kind["Relationship"]
    assert relationship["sourceType"] == HIT_TYPE  # the return type, never the command
    assert relationship["target"]["model"]["name"] == "Accounts"
    (joined,) = relationship["mapping"]
    assert joined["source"]["fieldPath"] == [{"fieldName": "id"}]
    as_json = CliRunner().invoke(
        main, ["ddn", "metadata", *common, "--model", "Accounts", "--format", "json"]
    )
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == documents


def test_hdq_ddn_names_a_bad_filter_column_in_one_line(database: Path) -> None:
    refused = CliRunner().invoke(
        main,
        [
            "ddn",
            "metadata",
            "--table",
            "tickets",
            "--database",
            str(database),
            "--filter-column",
            "colour",
        ],
    )
    assert refused.exit_code == 1
    assert refused.stderr.startswith("hdq ddn") and "'colour'" in refused.stderr
    assert "Traceback" not in refused.output


def test_hdq_ddn_serve_on_a_port_in_use_says_so_in_one_line(database: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = CliRunner().invoke(
            main,
            ["ddn", "serve", "--table", "tickets", "--database", str(database),
             "--port", str(port)],
        )  # fmt: skip
    assert refused.exit_code == 1
    assert refused.stderr.splitlines() == [
        f"hdq ddn serve: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]  # and no "serving ... on" line before it


@pytest.mark.parametrize(
    ("bounds", "rows"), [({}, 1), ({"limit": 1}, 1), ({"limit": 0}, 0), ({"offset": 1}, 0)]
)
def test_the_function_row_honours_limit_and_offset(
    client: TestClient, bounds: dict[str, int], rows: int
) -> None:
    fields = {"__value": {"type": "column", "column": "__value"}}
    body = request({"query": "error", "top_k": 2}, fields=fields, **bounds)
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    assert len(answer.json()[0]["rows"]) == rows


def test_a_negative_bound_is_a_400(client: TestClient) -> None:
    fields = {"__value": {"type": "column", "column": "__value"}}
    answer = client.post("/query", json=request({"query": "error"}, fields=fields, offset=-1))
    assert answer.status_code == 400
    assert "query.offset must be >= 0, got -1" in answer.json()["message"]
