"""The index catalog: reading, validating, writing, looking up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hotdata_retrieval import TableName
from hotdata_retrieval.lint import (
    CATALOG_JSON_SCHEMA,
    CatalogError,
    IndexCatalog,
    IndexEntry,
    IndexKind,
    IndexStatus,
)
from hotdata_retrieval.plan.search import DistanceMetric

DOCUMENT: dict[str, Any] = {
    "version": 1,
    "indexes": [
        {"table": "docs", "columns": ["body", "title"], "kind": "bm25"},
        {"table": "docs", "column": "embedding", "kind": "vector", "metric": "cosine"},
        {
            "table": "sales.Notes",
            "columns": ["body_embedding"],
            "kind": "vector",
            "metric": "euclidean",
            "source_column": "Body",
            "status": "pending",
            "name": "notes_body_vector",
        },
        {"table": "f1.public.results", "columns": ["race_date"], "kind": "sorted"},
    ],
    "tables": [
        {"table": "docs", "unique_keys": [["id"], "slug", ["tenant", "local_id"]]},
    ],
}

DOCS = TableName.parse("default.public.docs")
NOTES = TableName.parse("default.sales.notes")


def test_reads_a_document_and_completes_names() -> None:
    catalog = IndexCatalog.from_dict(DOCUMENT)
    assert [entry.table for entry in catalog.indexes] == [
        DOCS,
        DOCS,
        NOTES,
        TableName.parse("f1.public.results"),
    ]
    bm25 = catalog.bm25_index(DOCS, "Title")
    assert bm25 is not None and bm25.kind is IndexKind.BM25 and bm25.ready
    vector = catalog.vector_index(DOCS, "embedding")
    assert vector is not None and vector.metric is DistanceMetric.COSINE
    assert not vector.provider_backed
    provider = catalog.provider_index(NOTES, "body")
    assert provider is not None and provider.provider_backed
    assert provider.metric is DistanceMetric.L2 and provider.status is IndexStatus.PENDING
    assert catalog.vector_index(NOTES, "body_embedding") is provider
    assert catalog.bm25_index(NOTES, "body") is None
    assert catalog.provider_index(DOCS, "body") is None


def test_unique_keys() -> None:
    catalog = IndexCatalog.from_dict(DOCUMENT)
    assert catalog.is_unique(DOCS, ["id"])
    assert catalog.is_unique(DOCS, ["SLUG"])
    assert catalog.is_unique(DOCS, ["tenant", "local_id", "x"])
    assert not catalog.is_unique(DOCS, ["tenant"])
    assert not catalog.is_unique(NOTES, ["id"])
    assert catalog.unique_keys(DOCS) == {("id",), ("slug",), ("tenant", "local_id")}


def test_defaults_complete_short_names() -> None:
    catalog = IndexCatalog.from_dict(
        {"indexes": [{"table": "docs", "column": "body", "kind": "bm25"}]},
        default_catalog="f1",
        default_schema="main",
    )
    assert catalog.indexes[0].table == TableName.parse("f1.main.docs")


def test_round_trips_through_json(tmp_path: Path) -> None:
    catalog = IndexCatalog.from_dict(DOCUMENT)
    path = tmp_path / "indexes.json"
    catalog.save(path)
    again = IndexCatalog.load(path)
    assert again == catalog
    document = json.loads(path.read_text())
    assert document["version"] == 1
    assert document["indexes"][2] == {
        "table": "default.sales.notes",
        "columns": ["body_embedding"],
        "kind": "vector",
        "metric": "l2",
        "source_column": "body",
        "status": "pending",
        "name": "notes_body_vector",
    }
    assert IndexCatalog.loads(catalog.dumps()) == catalog


def test_a_ready_index_is_preferred() -> None:
    catalog = IndexCatalog(
        indexes=[
            IndexEntry(table="docs", columns=["body"], kind="bm25", status="pending"),
            IndexEntry(table="docs", columns=["body"], kind="bm25"),
        ]
    )
    found = catalog.bm25_index(DOCS, "body")
    assert found is not None and found.ready


def test_from_control_plane_records() -> None:
    catalog = IndexCatalog.from_index_records(
        "default.public.notes",
        [
            {
                "index_name": "notes_body_vector",
                "index_type": "vector",
                "columns": ["body_embedding"],
                "metric": "cosine",
                "source_column": "body",
                "status": "ready",
            },
            {"index_name": "notes_title_bm25", "index_type": "bm25", "columns": ["title"]},
        ],
        unique_keys=[["id"]],
    )
    table = TableName.parse("default.public.notes")
    assert catalog.provider_index(table, "body") is not None
    assert catalog.bm25_index(table, "title") is not None
    assert catalog.is_unique(table, ["id"])
    assert catalog.merged(IndexCatalog()).indexes == catalog.indexes


BAD = [
    ([], "JSON object"),
    ({"version": 2}, "version"),
    ({"indexes": {}}, "indexes must be an array"),
    ({"indexs": []}, "unknown field 'indexs'"),
    ({"indexes": [{"table": "docs", "columns": ["body"]}]}, "indexes[0].kind is required"),
    ({"indexes": [{"table": "docs", "columns": ["b"], "kind": "hnsw"}]}, "indexes[0].kind"),
    ({"indexes": [{"table": "docs", "columns": [], "kind": "bm25"}]}, "indexes[0].columns"),
    ({"indexes": [{"table": "docs", "columns": "body", "kind": "bm25"}]}, "indexes[0].columns"),
    (
        {"indexes": [{"table": "docs", "columns": ["a", "b"], "kind": "vector"}]},
        "exactly one column",
    ),
    (
        {"indexes": [{"table": "docs", "columns": ["b"], "kind": "bm25", "metric": "cosine"}]},
        "metric applies to vector indexes only",
    ),
    (
        {"indexes": [{"table": "docs", "columns": ["e"], "kind": "vector", "metric": "jaccard"}]},
        "indexes[0].metric",
    ),
    (
        {"indexes": [{"table": "docs", "columns": ["e"], "kind": "vector", "status": "building"}]},
        "indexes[0].status",
    ),
    ({"indexes": [{"table": "a.b.c.d", "columns": ["e"], "kind": "bm25"}]}, "indexes[0].table"),
    (
        {"indexes": [{"table": "docs", "column": "a", "columns": ["b"], "kind": "bm25"}]},
        "not both",
    ),
    ({"indexes": [{"table": "docs", "columns": ["b"], "kind": "bm25", "size": 3}]}, "size"),
    ({"tables": [{"unique_keys": [["id"]]}]}, "tables[0].table is required"),
    ({"tables": [{"table": "docs", "unique_keys": "id"}]}, "tables[0].unique_keys"),
]


@pytest.mark.parametrize(("document", "fragment"), BAD)
def test_malformed_documents_are_rejected_with_the_field(document: Any, fragment: str) -> None:
    with pytest.raises(CatalogError) as raised:
        IndexCatalog.from_dict(document)
    assert fragment in str(raised.value)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read"):
        IndexCatalog.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CatalogError, match="not valid JSON"):
        IndexCatalog.load(tmp_path / "bad.json")
    (tmp_path / "latin.json").write_bytes(b'{"indexes": [{"table": "caf\xe9"}]}')
    with pytest.raises(CatalogError, match="UTF-8"):
        IndexCatalog.load(tmp_path / "latin.json")


def test_schema_describes_every_field() -> None:
    index_fields = set(CATALOG_JSON_SCHEMA["properties"]["indexes"]["items"]["properties"])
    assert index_fields == {
        "table",
        "columns",
        "column",
        "kind",
        "metric",
        "source_column",
        "status",
        "name",
    }
    example = json.loads(json.dumps(IndexCatalog.from_dict(DOCUMENT).to_dict()))
    assert set(example) <= set(CATALOG_JSON_SCHEMA["properties"])


def test_from_a_local_engines_table_indexes() -> None:
    from hotdata_retrieval.routing import TableIndexes, VectorIndex

    catalog = IndexCatalog.from_table_indexes(
        [
            TableIndexes(
                table=DOCS,
                bm25_columns=("body", "title"),
                vectors=(VectorIndex(column="body_embedding", source_column="body"),),
                key_column="doc_id",
            )
        ]
    )
    provider = catalog.provider_index(DOCS, "body")
    assert provider is not None and provider.metric is DistanceMetric.COSINE
    assert catalog.vector_index(DOCS, "body_embedding") is provider
    assert catalog.bm25_index(DOCS, "title") is not None
    assert catalog.is_unique(DOCS, ["doc_id"])
    assert IndexCatalog.from_table_indexes([], keys_unique=False) == IndexCatalog()


def test_the_index_module_refuses_a_catalog_without_importing_the_linter() -> None:
    """``hotdata_retrieval.indexes`` is neutral: its error class is the library's (in
    ``errors``, where every public error is defined), and it imports nothing of ``lint`` (an
    engine or the router reading index metadata must not pull in the SQL analyzer)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hotdata_retrieval.indexes import CatalogError, IndexCatalog\n"
        "try:\n"
        "    IndexCatalog.loads('{\"version\": 7}')\n"
        "except CatalogError as error:\n"
        "    print(type(error).__module__, error.field)\n"
        "print(sorted(name for name in sys.modules if name.startswith('hotdata_retrieval.lint')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split("\n")[:2] == ["hotdata_retrieval.errors version", "[]"]
    from hotdata_retrieval import indexes

    assert CatalogError is indexes.CatalogError  # the linter's name for the same class
