"""The result envelope: one JSON-serializable shape, ``{metadata, rows}``, for every tool."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid

import numpy as np
import pytest

from hotdata_retrieval.adapters.envelope import ToolWarning, envelope, jsonable, to_json
from hotdata_retrieval.lint import lint

STANDARD_METADATA = ["tool", "row_count", "returned", "truncated", "warnings"]


def test_envelope_has_metadata_then_rows() -> None:
    document = envelope([{"id": 1, "score": 0.5}], tool="search")
    assert list(document) == ["metadata", "rows"]
    assert list(document["metadata"]) == STANDARD_METADATA
    assert document["rows"] == [{"id": 1, "score": 0.5}]


def test_envelope_counts_rows_unless_told_the_full_count() -> None:
    assert envelope([{"a": 1}, {"a": 2}], tool="t")["metadata"]["row_count"] == 2
    cut = envelope([{"a": 1}], tool="t", row_count=40, truncated=True)["metadata"]
    assert (cut["row_count"], cut["returned"], cut["truncated"]) == (40, 1, True)


def test_envelope_appends_tool_specific_metadata_after_the_standard_fields() -> None:
    metadata = envelope([], tool="t", k=5, ranked_by="score")["metadata"]
    assert list(metadata) == [*STANDARD_METADATA, "k", "ranked_by"]


def test_envelope_keeps_every_field_of_a_lint_finding() -> None:
    findings = lint("SELECT * FROM bm25_search('default.public.docs', 'body', 'x') LIMIT 3")
    warning = envelope([], tool="sql", warnings=findings)["metadata"]["warnings"][0]
    assert warning == findings[0].to_dict()
    assert {"code", "severity", "message", "suggestion", "line", "column"} <= set(warning)


def test_tool_warnings_have_code_severity_and_message() -> None:
    warning = ToolWarning(code="k_clamped", message="reduced")
    assert envelope([], tool="t", warnings=[warning])["metadata"]["warnings"] == [
        {"code": "k_clamped", "severity": "warning", "message": "reduced"}
    ]


def test_envelope_is_json_serializable_whatever_the_engine_returns() -> None:
    row = {
        "when": datetime.datetime(2024, 5, 1, 12, 30),
        "day": datetime.date(2024, 5, 1),
        "price": decimal.Decimal("9.90"),
        "uid": uuid.UUID(int=1),
        "blob": b"\x00\x01",
        "vector": np.array([0.5, 1.0], dtype=np.float32),
        "count": np.int64(3),
        "missing": float("nan"),
        "tags": ("a", "b"),
        "nested": {"inner": float("inf")},
    }
    document = envelope([row], tool="sql")
    text = to_json(document)
    assert json.loads(text) == document
    assert document["rows"][0] == {
        "when": "2024-05-01T12:30:00",
        "day": "2024-05-01",
        "price": "9.90",
        "uid": "00000000-0000-0000-0000-000000000001",
        "blob": "AAE=",
        "vector": [0.5, 1.0],
        "count": 3,
        "missing": None,
        "tags": ["a", "b"],
        "nested": {"inner": None},
    }


@pytest.mark.parametrize("value", [None, True, 3, "text", 1.5])
def test_plain_json_values_pass_through(value: object) -> None:
    assert jsonable(value) == value


def test_to_json_never_writes_nan() -> None:
    assert "NaN" not in to_json(envelope([{"x": float("nan")}], tool="t"))
