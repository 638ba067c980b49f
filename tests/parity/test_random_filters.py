"""Random filter trees keep exactly the rows SQL's three-valued logic keeps, on every engine.

Hypothesis draws trees of NOT, AND and OR (up to :data:`MAX_DEPTH` levels) over every leaf
operator — comparisons, ``BETWEEN``, ``IN`` / ``NOT IN``, ``IS [NOT] NULL``, prefixes and
suffixes, list tests — on a small table holding NULLs in every filterable column (integer,
float, text with the empty string, date, boolean, list of text). Literals come from small
domains holding the stored values, and a leaf is often paired with another on its column, so
contradictions (``x = c AND x <> c``, ``x IN (1) AND x IN (2)``) and tautologies (``x = c OR
x <> c``, ``x NOT IN (1) OR x NOT IN (2)``) are frequent: an optimizer that folds one to
FALSE or TRUE without regard to NULL keeps a NULL row under a ``NOT``, or under the
tautology itself, where SQL keeps none.

Each tree runs as the filter of a nearest-neighbour plan (its limit the table's size, so the
page is every row the filter keeps) on the local engine's native path and its statement on
DataFusion, SQLite, DuckDB, PostgreSQL, LanceDB, turbopuffer through its fake API and the
Hotdata engine through its fake API's SQL; the kept keys are compared with :func:`truth`, a
three-valued evaluator written here over the rows in plain Python (not the library's own
truth table or masks). SQLite has no list type (it refuses a list test with a typed error,
``test_filter_operators.py``), so its table has no list column and its trees no list test.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval.plan.filters import (
    And,
    Between,
    Comparison,
    ContainsAll,
    ContainsAny,
    EndsWith,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    StartsWith,
    filter_depth,
)
from tests.parity.engines import ENGINE_PATHS, bodies_table
from tests.parity.literal_engines import literal_engine, literal_keys, literal_plans

MAX_DEPTH = 3
"""The most AND/OR/NOT levels of a drawn tree (``filter_depth``)."""

DAY = datetime.date(2024, 3, 1)
DAYS = [DAY, DAY + datetime.timedelta(days=1), DAY + datetime.timedelta(days=2)]

COLUMNS: dict[str, list[Any]] = {
    "n": [1, None, 2, 0, None, 3, 1, -1, 2, None, 0, 3, 1, None, 2, -1, 0, 1, None, 3, 2, 0,
          None, 1, -1, 2, 3, 0],
    "f": [0.0, 1.5, None, -2.0, 1.5, None, 3.25, 0.0, None, 2.0, -2.0, 1.5, 0.0, None, 3.25,
          2.0, None, 0.0, -2.0, 1.5, None, 3.25, 0.0, 2.0, None, 1.5, -2.0, 0.0],
    "s": ["a", "", None, "ab", "b", None, "ba", "a", "", "b", None, "ab", "a", "ba", None, "",
          "b", "a", None, "ab", "ba", "", None, "b", "a", "ab", None, ""],
    "d": [DAYS[0], None, DAYS[1], DAYS[2], None, DAYS[0], DAYS[1], None, DAYS[2], DAYS[0],
          DAYS[1], None, DAYS[2], DAYS[0], None, DAYS[1], DAYS[2], DAYS[0], None, DAYS[1],
          DAYS[2], None, DAYS[0], DAYS[1], DAYS[2], None, DAYS[0], DAYS[1]],
    "b": [True, None, False, True, False, None, True, True, None, False, False, True, None,
          True, False, None, True, False, True, None, False, True, None, False, True, False,
          None, True],
    "tags": [["a"], None, [], ["a", "b"], ["b"], [None], ["c", "a"], None, ["b", "c"], [],
             ["a", None], ["c"], None, ["a"], ["b", "a"], [], None, ["c"], ["a", "b", "c"],
             ["b"], None, ["a"], [], ["c", "b"], None, ["a"], ["b"], ["a", "c"]],
}  # fmt: skip
"""The filterable columns, 28 rows, each with NULLs (and the empty string, empty lists and
lists holding NULL)."""

ROWS = len(COLUMNS["n"])
TYPES = {
    "n": pa.int64(),
    "f": pa.float64(),
    "s": pa.string(),
    "d": pa.date32(),
    "b": pa.bool_(),
    "tags": pa.list_(pa.string()),
}

DOMAINS: dict[str, list[Any]] = {
    "n": [-1, 0, 1, 2, 3, 5, 1.5],
    "f": [-2.0, 0.0, 1.5, 2.0, 3.25, 9.0, 2],
    "s": ["", "a", "ab", "b", "ba", "z"],
    "d": [*DAYS, DAY - datetime.timedelta(days=1)],
    "b": [True, False],
    "tags": ["a", "b", "c", "z"],
}
"""Each column's literals: its stored values, one beyond them, and for the numbers one of the
other kind (an integer column against 1.5, a float column against 2)."""

ORDERED = ["n", "f", "s", "d"]
SCALARS = [*ORDERED, "b"]


def _table(*, lists: bool) -> pa.Table:
    columns = {
        name: pa.array(values, TYPES[name])
        for name, values in COLUMNS.items()
        if lists or name != "tags"
    }
    return bodies_table(["crash report"] * ROWS, **columns)


# -- the reference: SQL's three-valued logic, in plain Python ----------------------------------

Truth = bool | None


def _compare(value: Any, operator: str, literal: Any) -> bool:
    if operator == "=":
        return bool(value == literal)
    if operator == "!=":
        return bool(value != literal)
    if operator == "<":
        return bool(value < literal)
    if operator == "<=":
        return bool(value <= literal)
    if operator == ">":
        return bool(value > literal)
    assert operator == ">="
    return bool(value >= literal)


def _all(truths: list[Truth]) -> Truth:
    if False in truths:
        return False
    return None if None in truths else True


def _any(truths: list[Truth]) -> Truth:
    if True in truths:
        return True
    return None if None in truths else False


def truth(predicate: Predicate, row: dict[str, Any]) -> Truth:
    """SQL's truth of ``predicate`` for ``row``: ``None`` is unknown. A NULL column makes
    every test of it unknown but ``IS NULL``; an empty ``IN`` list is FALSE and an empty
    ``NOT IN`` list TRUE whatever the column holds, an empty ``contains_all`` TRUE and an
    empty ``contains_any`` FALSE (``plan/filters.py``); a list holding NULL holds its other
    elements."""
    if isinstance(predicate, And):
        return _all([truth(operand, row) for operand in predicate.operands])
    if isinstance(predicate, Or):
        return _any([truth(operand, row) for operand in predicate.operands])
    if isinstance(predicate, Not):
        inner = truth(predicate.operand, row)
        return None if inner is None else not inner
    if isinstance(predicate, IsNull):
        return (row[predicate.column] is None) != predicate.negated
    if isinstance(predicate, InList) and not predicate.values:
        return predicate.negated
    if isinstance(predicate, ContainsAll) and not predicate.values:
        return True
    if isinstance(predicate, ContainsAny) and not predicate.values:
        return False
    value = row[predicate.column]
    if value is None:
        return None
    if isinstance(predicate, Comparison):
        return _compare(value, predicate.operator.value, predicate.value)
    if isinstance(predicate, Between):
        return bool(predicate.low <= value <= predicate.high)
    if isinstance(predicate, InList):
        return any(value == item for item in predicate.values) != predicate.negated
    if isinstance(predicate, StartsWith):
        return bool(value.startswith(predicate.prefix))
    if isinstance(predicate, EndsWith):
        return bool(value.endswith(predicate.suffix))
    if isinstance(predicate, ContainsAll):
        return all(item in value for item in predicate.values)
    assert isinstance(predicate, ContainsAny)
    return any(item in value for item in predicate.values)


def reference_keys(predicate: Predicate) -> set[int]:
    """The keys of the rows whose truth is TRUE."""
    kept = set()
    for key in range(ROWS):
        row = {name: values[key] for name, values in COLUMNS.items()}
        if truth(predicate, row) is True:
            kept.add(key)
    return kept


# -- the trees ---------------------------------------------------------------------------------


def _literal(column: str) -> st.SearchStrategy[Any]:
    return st.sampled_from(DOMAINS[column])


def _values(column: str, most: int) -> st.SearchStrategy[list[Any]]:
    """One to ``most`` distinct values from the column's domain, or now and then none (an
    empty list is a constant: ``IN ()`` FALSE, ``NOT IN ()`` TRUE)."""
    some = st.lists(_literal(column), min_size=1, max_size=most, unique_by=repr)
    return st.one_of(some, some, some, st.just([]))


def _leaf_kinds(column: str) -> dict[str, st.SearchStrategy[Predicate]]:
    """Each leaf operator that reads ``column``, by name, its values from the column's
    domain (the ones optimizers fold first, ``IS NULL`` last)."""
    kinds: dict[str, st.SearchStrategy[Predicate]] = {}
    if column == "tags":
        values = _values(column, 2)
        kinds["contains any"] = st.builds(ContainsAny, column=st.just(column), values=values)
        kinds["contains all"] = st.builds(ContainsAll, column=st.just(column), values=values)
    else:
        kinds["in"] = st.builds(
            InList, column=st.just(column), values=_values(column, 3), negated=st.booleans()
        )
        operators = ["=", "!="] if column == "b" else ["=", "!=", "<", "<=", ">", ">="]
        kinds["comparison"] = st.builds(
            Comparison,
            column=st.just(column),
            operator=st.sampled_from(operators),
            value=_literal(column),
        )
    if column in ORDERED:
        kinds["between"] = st.builds(
            Between, column=st.just(column), low=_literal(column), high=_literal(column)
        )
    if column == "s":
        kinds["prefix"] = st.builds(StartsWith, column=st.just(column), prefix=_literal(column))
        kinds["suffix"] = st.builds(EndsWith, column=st.just(column), suffix=_literal(column))
    kinds["is null"] = st.builds(IsNull, column=st.just(column), negated=st.booleans())
    return kinds


def _leaf_on(column: str) -> st.SearchStrategy[Predicate]:
    """Any leaf operator that reads ``column``."""
    return st.one_of(list(_leaf_kinds(column).values()))


def _leaf_and_its_foil(column: str) -> st.SearchStrategy[Predicate]:
    """Two leaves on ``column`` joined by AND or OR, the second often the first's negation
    (``NOT (x = c)`` or ``x <> c``) or a leaf of the same operator (``x IN (1) AND x IN
    (2)``): contradictions and tautologies."""
    kinds = _leaf_kinds(column)

    @st.composite
    def pair(draw: st.DrawFn) -> Predicate:
        # the lists and comparisons twice as often: optimizers fold those
        weighted = [*kinds, *[kind for kind in ("in", "comparison") if kind in kinds]]
        kind = draw(st.sampled_from(weighted))
        first = draw(kinds[kind])
        foils = [st.just(Not(operand=first)), kinds[kind], kinds[kind], _leaf_on(column)]
        if isinstance(first, (Comparison, InList, IsNull)):
            foils.append(st.just(_negated(first)))
        second = draw(st.one_of(foils))
        connective = draw(st.sampled_from([And, Or]))
        return connective(operands=(first, second))  # type: ignore[no-any-return]

    return pair()


def _negated(leaf: Comparison | InList | IsNull) -> Predicate:
    """The leaf's negation written as a leaf (``x <> c`` for ``x = c``)."""
    if isinstance(leaf, Comparison):
        opposite = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", "<=": ">", ">": "<="}
        return Comparison(
            column=leaf.column, operator=opposite[leaf.operator.value], value=leaf.value
        )
    if isinstance(leaf, InList):
        return InList(column=leaf.column, values=leaf.values, negated=not leaf.negated)
    return IsNull(column=leaf.column, negated=not leaf.negated)


def filters(columns: list[str]) -> st.SearchStrategy[Predicate]:
    """Trees over ``columns``, at most :data:`MAX_DEPTH` levels deep."""
    column = st.sampled_from(columns)
    pairs = column.flatmap(_leaf_and_its_foil)
    base = st.one_of(pairs, pairs, pairs, column.flatmap(_leaf_on))

    def extend(children: st.SearchStrategy[Predicate]) -> st.SearchStrategy[Predicate]:
        operands = st.lists(children, min_size=2, max_size=3).map(tuple)
        return st.one_of(
            operands.map(lambda items: And(operands=items)),
            operands.map(lambda items: Or(operands=items)),
            children.map(lambda operand: Not(operand=operand)),
        )

    return st.recursive(base, extend, max_leaves=4).filter(
        lambda tree: filter_depth(tree) <= MAX_DEPTH
    )


# -- the engines -------------------------------------------------------------------------------

EVERY_PATH = [*ENGINE_PATHS, "hotdata"]


@pytest.fixture(scope="module", params=EVERY_PATH)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    """Each way a plan runs, the table loaded as ``docs`` (no list column on SQLite)."""
    name = request.param
    if name != "hotdata":
        yield from literal_engine(
            request, tmp_path_factory, "random-filters", lambda path: _table(lists=path != "sqlite")
        )
        return
    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    with LocalEngine(tmp_path_factory.mktemp("random-filters-hotdata")) as local:
        local.load_table("docs", _table(lists=True), key_column="id", text_columns=["body"])
        with FakeHotdataApi(local, api_key="key", workspace_id="ws", database_id="db") as api:
            api.index_engine_table("docs")
            api.add_index("docs", index_type="vector", columns=["embedding"], metric="cosine")
            with HotdataEngine.connect(
                "db", api_key="key", workspace_id="ws", host=api.url
            ) as opened:
                yield name, opened


SOURCES = ("nearest", "text")
"""The plan's branch (:func:`~tests.parity.literal_engines.literal_plans`): a nearest-neighbour
search (every row has a vector), or a text search every row's body matches; both return every
row the filter keeps. The local engine answers a nearest-neighbour statement with its native
masks (its fast path) and a text search's statement on DataFusion, so the two reach each
engine's every filter path."""


def kept_keys(name: str, engine: Any, predicate: Predicate, source: str = "nearest") -> set[int]:
    """The keys engine path ``name`` keeps for a plan of ``source`` filtered by
    ``predicate`` (``local statement``: the compiled statement, run by the local engine)."""
    plan = literal_plans(predicate, ROWS)[SOURCES.index(source)]
    return literal_keys(name, engine, plan, _table(lists=True).schema)


_BUDGET = max(10, settings().max_examples // 6)
"""Examples per engine: a sixth of the profile's (16 in ``dev``, 50 in ``ci``), each two
searches."""


@settings(max_examples=_BUDGET, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_random_filter_keeps_the_rows_of_three_valued_logic(
    engine: tuple[str, Any], data: st.DataObject
) -> None:
    name, opened = engine
    readable = [*SCALARS] if name == "sqlite" else [*SCALARS, "tags"]
    # one or two columns a tree: its leaves meet on a column often
    columns = data.draw(st.lists(st.sampled_from(readable), min_size=1, max_size=2, unique=True))
    predicate = data.draw(filters(columns), label="filter")
    source = data.draw(st.sampled_from(SOURCES), label="source")
    assert kept_keys(name, opened, predicate, source) == reference_keys(predicate)
    # and its negation: a contradiction folded to FALSE keeps NULL rows only under NOT
    negation = Not(operand=predicate)
    assert kept_keys(name, opened, negation, source) == reference_keys(negation)


def _n(operator: str, value: Any) -> Comparison:
    return Comparison(column="n", operator=operator, value=value)


def _in(column: str, *values: Any, negated: bool = False) -> InList:
    return InList(column=column, values=values, negated=negated)


FOLDED: dict[str, Predicate] = {
    "IN lists of one column with no value in common, under NOT": ~(_in("n", 1, 2) & _in("n", 3)),
    "IN and NOT IN of one value, under NOT": ~(_in("n", -1) & ~_in("n", -1)),
    "NOT IN lists of one column joined by OR": _in("n", 1, negated=True)
    | _in("n", 2, negated=True),
    "equalities read as IN lists, under NOT": ~(
        (_n("=", 1) | _n("=", 2)) & (_n("=", 3) | _n("=", 0))
    ),
    "a float column equal and unequal to zero, under NOT": ~(
        Comparison(column="f", operator="=", value=0.0)
        & Comparison(column="f", operator="!=", value=0.0)
    ),
    "text IN and NOT IN, under NOT": ~(_in("s", "a") & _in("s", "a", negated=True)),
    "dates IN and NOT IN, under NOT": ~(_in("d", DAY) & ~_in("d", DAY)),
    "a contradiction under NOT, beside another column": ~(
        _in("n", 1) & Comparison(column="s", operator="=", value="a") & _in("n", 2)
    ),
    "a tautology under two NOTs": ~(
        ~(_in("n", 1, negated=True) | _in("n", 2, negated=True))
        & Comparison(column="b", operator="=", value=True)
    ),
    "x = c AND x <> c, under NOT": ~(_n("=", 1) & _n("!=", 1)),
    "x = c OR x <> c": _n("=", 1) | _n("!=", 1),
}
"""Same-column contradictions and tautologies that an engine folded to FALSE or TRUE with no
regard to NULL (``compile/_null_guards.py``): each kept the NULL rows of ``n`` (``f``, ``s``,
``d``) on LanceDB and on DataFusion (the local engine's statement of a text search, the
Hotdata engine's SQL) before the guard; the last two no engine folded."""


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("case", sorted(FOLDED))
def test_a_folded_contradiction_or_tautology_keeps_no_null_row(
    engine: tuple[str, Any], case: str, source: str
) -> None:
    name, opened = engine
    predicate = FOLDED[case]
    assert kept_keys(name, opened, predicate, source) == reference_keys(predicate)


def test_the_reference_is_not_trivial() -> None:
    """Each folded case keeps some rows but not every one, and each column's domain holds
    every value the column stores (so drawn literals equal stored ones)."""
    for predicate in FOLDED.values():
        assert 0 < len(reference_keys(predicate)) < ROWS
    for column, domain in DOMAINS.items():
        values = [value for value in COLUMNS[column] if value is not None]
        stored = {item for value in values for item in value} if column == "tags" else set(values)
        assert stored - {None} <= set(domain), column
