"""A document's metadata nests at most ``MAX_JSON_NESTING`` (64) arrays and objects deep, on
every engine: deeper metadata raised ``RecursionError`` from ``json.dumps`` (about 1,000
levels), and metadata a little shallower than that was written and then raised
``RecursionError`` from ``json.loads`` in every read of the document made a few hundred
frames down the stack (a search from inside an agent framework's callbacks)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hotdata_retrieval
from hotdata_retrieval._json import MAX_JSON_NESTING
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.errors import PlanError
from tests.document_engines import fresh_table, open_document_engine


@pytest.fixture(scope="module", params=["local", "sqlite", "duckdb"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    yield opened
    opened.close()


def _nested(depth: int, kind: str) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = {f"k{level}": value} if kind == "object" or level % 2 else [value]
    return value


@pytest.mark.parametrize("kind", ["object", "mixed"])
@pytest.mark.parametrize("depth", [MAX_JSON_NESTING, MAX_JSON_NESTING + 1, 900, 100_000])
def test_metadata_past_the_nesting_limit_is_refused_and_nothing_written(
    engine: Any, kind: str, depth: int
) -> None:
    store = DocumentStore(engine, fresh_table("nesting"))
    store.add(["a"], ["first"], [[1.0, 0.0]])
    # the document's metadata is {"m": <value>}: one level more than the value
    metadata = {"m": _nested(depth - 1, kind)}
    if depth <= MAX_JSON_NESTING:
        store.add(["b"], ["second"], [[0.0, 1.0]], [metadata])

        # read back a few hundred frames down the stack, as a callback would
        def read(frames: int) -> Any:
            return store.get(["b"]) if frames == 0 else read(frames - 1)

        assert read(sys.getrecursionlimit() // 2)[0].metadata == metadata
        return
    with pytest.raises(PlanError, match="nested more than") as raised:
        store.add(["b", "c"], ["second", "third"], [[0.0, 1.0], [1.0, 1.0]], [None, metadata])
    assert raised.value.field == "metadatas"
    assert raised.value.value == "c"
    assert [document.id for document in store.get(["a", "b", "c"])] == ["a"]


def test_metadata_that_holds_itself_is_refused(engine: Any) -> None:
    store = DocumentStore(engine, fresh_table("nesting"))
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(PlanError) as raised:
        store.add(["a"], ["text"], [[1.0, 0.0]], [cyclic])
    assert raised.value.field == "metadatas"
    assert len(store) == 0


PACKAGE = Path(hotdata_retrieval.__file__).parent


def _modules_defining(name: str) -> list[str]:
    """The package's modules that assign ``name`` at their top level."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(target, ast.Name) and target.id == name for target in targets):
                found.append(path.relative_to(PACKAGE).as_posix())
    return found


def _imported_modules(relative: str) -> set[str]:
    tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
    return {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }


def test_the_nesting_bound_is_defined_once_where_both_readers_import_it() -> None:
    """The bound is one fact, in a module neither the document table nor the local engine's
    loader owns: the document table does not reach into an engine's loader for it."""
    assert _modules_defining("MAX_JSON_NESTING") == ["_json.py"]
    assert "hotdata_retrieval.engines.local.loading" not in _imported_modules("documents.py")
    assert {"hotdata_retrieval._json"} <= _imported_modules("documents.py")
    assert {"hotdata_retrieval._json"} <= _imported_modules("engines/local/loading.py")
