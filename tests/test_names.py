"""Table-name parsing, completion, lower-casing, quoting and rejection."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hotdata_retrieval import TableName, TableNameError
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import normalize_identifier


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("docs", ("default", "public", "docs")),
        ("sales.docs", ("default", "sales", "docs")),
        ("f1.public.results", ("f1", "public", "results")),
        ("Default.Public.Docs", ("default", "public", "docs")),
        ('"default"."public"."docs"', ("default", "public", "docs")),
        ('analytics."Support Tickets"', ("default", "analytics", "support tickets")),
        ('"a.b".c', ("default", "a.b", "c")),
        ("DriverId", ("default", "public", "driverid")),
    ],
)
def test_parse_completes_and_lowercases(text: str, expected: tuple[str, str, str]) -> None:
    assert TableName.parse(text).parts == expected


def test_parse_uses_settable_defaults() -> None:
    name = TableName.parse("docs", default_catalog="F1", default_schema="Main")
    assert name.parts == ("f1", "main", "docs")
    assert TableName.parse("s.docs", default_catalog="f1").parts == ("f1", "s", "docs")


@pytest.mark.parametrize(
    "text",
    [
        "",
        ".",
        "a..b",
        "a.b.",
        ".a",
        "a.b.c.d",
        '"a""b"',
        '"unterminated',
        'a"b"',
        '"a"b',
        '""',
        "a\x00b",
        "a.\x01.c",
    ],
)
def test_parse_rejects_bad_references(text: str) -> None:
    with pytest.raises(TableNameError) as caught:
        TableName.parse(text)
    assert caught.value.value is not None


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(TableNameError, match="must be a string"):
        TableName.parse(42)  # type: ignore[arg-type]


def test_table_name_error_is_a_plan_error_and_value_error() -> None:
    with pytest.raises(PlanError):
        TableName.parse("a.b.c.d")
    with pytest.raises(ValueError):
        TableName.parse("a.b.c.d")


def test_four_parts_message_names_the_count() -> None:
    with pytest.raises(TableNameError, match="4 parts"):
        TableName.parse("a.b.c.d")


def test_str_quotes_only_parts_that_are_not_bare() -> None:
    assert str(TableName.parse("docs")) == "default.public.docs"
    assert str(TableName.parse('"my table"')) == 'default.public."my table"'
    assert str(TableName.parse('"1abc"')) == 'default.public."1abc"'


@pytest.mark.parametrize("bad", ["", 'a"b', "a\x00", "tab\there", None, 3])
def test_normalize_identifier_rejects(bad: object) -> None:
    with pytest.raises(PlanError):
        normalize_identifier(bad)


part = st.text(
    alphabet=st.characters(blacklist_characters='"\x00', blacklist_categories=("Cc", "Cs")),
    min_size=1,
    max_size=12,
)


@given(st.lists(part, min_size=1, max_size=3))
@example(["\uf900"])  # a compatibility ideograph: NFC makes it another code point
def test_normalization_is_idempotent(parts: list[str]) -> None:
    text = ".".join(f'"{p}"' for p in parts)
    name = TableName.parse(text)
    assert TableName.parse(str(name)) == name
    assert TableName.parse(name) is name
    assert all(p == p.lower() for p in name.parts)
    # a name is stored lower-cased and composed (NFC): U+F900, a compatibility ideograph,
    # is U+8C48 once composed
    assert name.name == unicodedata.normalize(
        "NFC", unicodedata.normalize("NFC", parts[-1]).lower()
    )
