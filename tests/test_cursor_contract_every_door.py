"""The cursor contract of every door that pages, on one ranking: the DDN function's last hit's
``after``, the tools' ``metadata.next_after`` (the envelope the MCP server, the LangChain and
LlamaIndex tools share) and ``hdq search``'s ``next_after`` are ``null`` exactly when the page
is short (the ranking has ended: fewer hits than asked for), and otherwise a token which
continues the ranking (the same for the DDN function and the tools, which search one route).
A full page that happens to end the ranking still carries one, whose page is empty
(``docs/adapters.md``: "null on the last hit of a short page").

The reference is a plain count of the rows that match: ``MATCHING`` rows hold the word."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval.adapters.ddn import AFTER_FIELD, SearchDocuments
from hotdata_retrieval.adapters.toolkit import SearchToolkit
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_OK
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine

BODIES = [f"fox {'fox ' * index}den {index}" for index in range(5)] + ["owl", "owl nest"]
MATCHING = sum("fox" in body.split() for body in BODIES)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, LocalEngine]]:
    path = str(tmp_path_factory.mktemp("cursor-contract") / "db")
    with LocalEngine(path) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": list(range(len(BODIES))), "body": BODIES}),
            text_columns=["body"],
        )
        yield path, engine


def _ddn(engine: LocalEngine, k: int, after: str | None = None) -> tuple[list[Any], str | None]:
    function = SearchDocuments(engine, table="docs")
    hits = function.search({"query": "fox", "top_k": k, **({"after": after} if after else {})})
    return [hit["id"] for hit in hits], (hits[-1][AFTER_FIELD] if hits else None)


def _tool(engine: LocalEngine, k: int, after: str | None = None) -> tuple[list[Any], str | None]:
    envelope = SearchToolkit(engine, table="docs").search_text(query="fox", k=k, after=after)
    return [row["id"] for row in envelope["rows"]], envelope["metadata"]["next_after"]


def _cli(path: str, k: int, after: str | None = None) -> tuple[list[Any], str | None]:
    result = CliRunner().invoke(
        main,
        [
            "search", "fox", "--table", "docs", "--database", path, "--format", "json",
            "-k", str(k), *(["--after", after] if after else []),
        ],
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    document = json.loads(result.stdout)
    return [hit["key"] for hit in document["hits"]], document["next_after"]


@pytest.mark.parametrize("k", range(1, MATCHING + 3))
def test_the_last_hit_carries_a_cursor_exactly_when_the_page_is_full(
    database: tuple[str, LocalEngine], k: int
) -> None:
    path, engine = database
    answers = {"ddn": _ddn(engine, k), "tools": _tool(engine, k), "cli": _cli(path, k)}
    for door, (keys, token) in answers.items():
        assert len(keys) == min(k, MATCHING), door
        assert (token is None) == (k > MATCHING), door  # null: a short page, the ranking ended
    assert len({tuple(keys) for keys, _ in answers.values()}) == 1
    # the DDN function and the tools search one route: one token for one page
    assert answers["ddn"][1] == answers["tools"][1]


@pytest.mark.parametrize("k", [1, 2, MATCHING])
def test_every_door_s_token_continues_the_ranking(
    database: tuple[str, LocalEngine], k: int
) -> None:
    path, engine = database
    everything, _ = _tool(engine, MATCHING + 1)
    for door, page in (
        ("ddn", lambda after: _ddn(engine, k, after)),
        ("tools", lambda after: _tool(engine, k, after)),
        ("cli", lambda after: _cli(path, k, after)),
    ):
        walked: list[Any] = []
        after: str | None = None
        pages = 0
        while True:
            keys, after = page(after)
            walked += keys
            pages += 1
            if after is None:
                break
        assert walked == everything, door
        # a full last page carries a token; the page it continues is empty and ends it
        assert pages == -(-MATCHING // k) + (MATCHING % k == 0), door


@pytest.mark.parametrize("first", ["cli", "tools"])
def test_a_token_from_hdq_search_and_one_from_the_tools_continue_each_other(
    database: tuple[str, LocalEngine], first: str
) -> None:
    # The CLI refuses a query with no word and the tools answer it with no rows (allow_empty):
    # a query with a word ranks the same either way, so either door continues the other's
    # token, and the two pages are the first four rows of the one ranking.
    path, engine = database
    whole, _ = _tool(engine, 4)
    if first == "cli":
        keys, token = _cli(path, 2)
        rest, _ = _tool(engine, 2, after=token)
    else:
        keys, token = _tool(engine, 2)
        rest, _ = _cli(path, 2, after=token)
    assert keys + rest == whole


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, LocalEngine]]:
    """A local database whose ``body`` the engine embedded (the hashing embedder, which
    downloads nothing), searched by meaning."""
    path = str(tmp_path_factory.mktemp("cursor-contract-semantic") / "db")
    with LocalEngine(path, embedder=HashingEmbedder()) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": list(range(len(BODIES))), "body": BODIES}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield path, engine


def _semantic_tool(
    engine: LocalEngine, k: int, after: str | None = None
) -> tuple[list[Any], str | None]:
    envelope = SearchToolkit(engine, table="docs").search_semantic(query="fox", k=k, after=after)
    return [row["id"] for row in envelope["rows"]], envelope["metadata"]["next_after"]


def _semantic_cli(path: str, k: int, after: str | None = None) -> tuple[list[Any], str | None]:
    result = CliRunner().invoke(
        main,
        [
            "search", "fox", "--table", "docs", "--database", path, "--format", "json",
            "--mode", "semantic", "-k", str(k), *(["--after", after] if after else []),
        ],
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    document = json.loads(result.stdout)
    return [hit["key"] for hit in document["hits"]], document["next_after"]


@pytest.mark.parametrize("first", ["cli", "tools"])
def test_a_semantic_token_from_hdq_search_and_one_from_the_tools_continue_each_other(
    embedded: tuple[str, LocalEngine], first: str
) -> None:
    # hdq search --mode semantic and the tools' semantic search rank the same rows by the
    # same model (the engine's): either door continues the other's token, and the two pages
    # are the first four rows of the one ranking, as one page of four has them.
    path, engine = embedded
    whole, _ = _semantic_cli(path, 4)
    assert whole == _semantic_tool(engine, 4)[0]
    if first == "cli":
        keys, token = _semantic_cli(path, 2)
        rest, _ = _semantic_tool(engine, 2, after=token)
    else:
        keys, token = _semantic_tool(engine, 2)
        rest, _ = _semantic_cli(path, 2, after=token)
    assert token is not None
    assert keys + rest == whole
