"""A name is the same name however its accents are encoded: ``"cafe\\u0301"`` (decomposed, as
macOS file names and some keyboards give it) and ``"caf\\u00e9"`` (composed) look alike and
are one column everywhere (:func:`~hotdata_retrieval.plan.names.fold_identifier`).

Before: a document store declaring the filter column in one form kept NULL in it for
documents whose metadata spelled the key in the other, so a filter on that column silently
missed them; a table loaded with a decomposed column name could not be filtered, projected
or grouped by the composed one (an agent's usual spelling), and a table could hold both
forms as two columns that print alike.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchToolkit
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import EngineError, PlanError
from hotdata_retrieval.plan.names import fold_identifier, normalize_identifier

COMPOSED = unicodedata.normalize("NFC", "café")
DECOMPOSED = unicodedata.normalize("NFD", "café")
FORMS = [(COMPOSED, DECOMPOSED), (DECOMPOSED, COMPOSED)]


def test_both_forms_are_one_name() -> None:
    assert COMPOSED != DECOMPOSED
    assert normalize_identifier(DECOMPOSED) == normalize_identifier(COMPOSED) == COMPOSED
    assert fold_identifier("CAFE\u0301") == COMPOSED


@pytest.mark.parametrize(("declared", "written"), FORMS)
def test_a_store_fills_its_filter_column_from_either_form(declared: str, written: str) -> None:
    with LocalEngine() as engine:
        store = DocumentStore(engine, "notes", filter_columns={declared: "string"})
        store.add(
            ["a", "b"],
            ["red fox", "blue sky"],
            [[1.0, 0.0], [0.0, 1.0]],
            [{written: "paris"}, {written: "rome"}],
        )
        for spelled in (declared, written):
            hits = store.nearest([1.0, 0.0], k=2, filter={spelled: "paris"})
            assert [hit.document.id for hit in hits] == ["a"]
            assert store.ids_matching({spelled: "rome"}) == ["b"]
        assert store.get(["a"])[0].metadata == {written: "paris"}  # kept as written
        with pytest.raises(PlanError, match="twice"):
            store.add(["c"], ["x"], [[1.0, 1.0]], [{declared: "x", written: "y"}])


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=16)) as opened:
        rows = pa.table(
            {
                "id": [1, 2, 3],
                "body": ["red fox", "blue fox", "green sky"],
                DECOMPOSED: ["x", "y", "x"],
            }
        )
        opened.load_table("docs", rows, text_columns=["body"], embed_columns=["body"])
        yield opened


@pytest.mark.parametrize("spelled", [COMPOSED, DECOMPOSED])
def test_a_loaded_column_answers_to_either_form(engine: LocalEngine, spelled: str) -> None:
    toolkit = SearchToolkit(engine, table="docs", columns=["id", spelled])
    rows = toolkit.search_text("fox", k=3, filter={spelled: "x"})["rows"]
    assert sorted((row["id"], row[COMPOSED]) for row in rows) == [(1, "x"), (3, "x")]
    text = toolkit.search_text("fox", k=3, filter=f"{spelled} = 'y'")["rows"]
    assert [row["id"] for row in text] == [2]


def test_a_table_cannot_hold_both_forms() -> None:
    with LocalEngine() as local:
        rows = pa.table({"id": [1], "body": ["red fox"], COMPOSED: ["a"], DECOMPOSED: ["b"]})
        with pytest.raises(EngineError, match="accents are encoded"):
            local.load_table("docs", rows, text_columns=["body"])
        assert "docs" not in local.tables
