"""An integer column compared with a floating-point literal keeps exactly the rows the
mathematically exact comparison keeps, on every engine: the local engine's native paths (the
nearest-neighbour mask and the filter inside its BM25 index) and its statement on DataFusion,
SQLite, DuckDB, PostgreSQL, LanceDB and turbopuffer through its fake API. DataFusion casts the
column to float64 (so 2**53 + 1 equals 2.0**53 there) where SQLite compares exactly; the plan
now says one thing everywhere. Values sit at 2**53 +- 1 and at both ends of 64 bits, literals
are integral and not, inside and past the column's range; NULL rows follow SQL's
three-valued logic (never kept, and ``NOT`` of an unknown comparison stays unknown).

The reference is written here with exact rational arithmetic (:class:`fractions.Fraction`),
not with the library's own truth.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, PlanError, SearchPlan
from hotdata_retrieval.plan.filters import Between, Comparison, InList, Not, Predicate
from tests.parity.engines import ENGINE_PATHS
from tests.parity.literal_engines import literal_engine, literal_keys, literal_plans

SIGNED: list[int | None] = [
    None, 0, 1, -1, 2, 3, -2, -3,
    2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, -(2**53) - 1, -(2**53),
    2**62, 2**63 - 1, 2**63 - 2, 2**63 - 1024, -(2**63), -(2**63) + 1, None,
]  # fmt: skip
"""The values of column ``n`` (BIGINT on every store)."""

UNSIGNED: list[int | None] = [
    None, 0, 1, 2, 3, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1,
    2**64 - 2048, 2**64 - 1, 10**19, None,
]  # fmt: skip
"""The values of an unsigned 64-bit column ``u``, on the engines that hold them (the SQL
stores refuse an unsigned value past the largest signed one: test_unsigned_integers.py)."""

SIGNED_RANGE_UNSIGNED = [
    None if value is not None and value >= 2**63 else value for value in UNSIGNED
]
"""Column ``u`` as the SQL stores hold it: its values past INT64_MAX NULL."""

LITERALS = [
    2.0**53, 2.0**53 + 2, -(2.0**53), 2.5, -2.5, 0.5, -0.5, 0.0, 3.0,
    2.0**63, -(2.0**63), 2.0**63 - 1024, 2.0**62, 1e19, -1e19, 1e300, -1e300, 5e-324,
    2.0**64, 2.0**64 - 2048,
]  # fmt: skip
"""Integral floats at and past 2**53 and both 64-bit ends (2.0**63 is above INT64_MAX,
-(2.0**63) is INT64_MIN itself), non-integral ones, and magnitudes no integer column holds."""

OPERATORS = ["=", "!=", "<", "<=", ">", ">="]
_PYTHON: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

Truth = Callable[[int | None], "bool | None"]


def _compare(op: str, literal: float) -> Truth:
    exact = Fraction(literal)
    return lambda value: None if value is None else _PYTHON[op](Fraction(value), exact)


def _between(low: float, high: float) -> Truth:
    return lambda value: (
        None if value is None else Fraction(low) <= Fraction(value) <= Fraction(high)
    )


def _in(literals: list[float]) -> Truth:
    def truth(value: int | None) -> bool | None:
        if not literals:
            return False
        if value is None:
            return None
        return any(Fraction(value) == Fraction(literal) for literal in literals)

    return truth


def _not(truth: Truth) -> Truth:
    return lambda value: None if truth(value) is None else not truth(value)


def _cases() -> dict[str, tuple[Callable[[str], Predicate], Truth]]:
    cases: dict[str, tuple[Callable[[str], Predicate], Truth]] = {}
    for op in OPERATORS:
        for literal in LITERALS:
            cases[f"{op} {literal!r}"] = (
                lambda column, op=op, literal=literal: Comparison(
                    column=column, operator=op, value=literal
                ),
                _compare(op, literal),
            )
    ranges = [
        (2.5, 2.0**53), (-2.5, 2.5), (0.5, 0.5), (3.0, 2.0**53 + 2), (2.0**53, 2.0**63),
        (-(2.0**63), -(2.0**53)), (-1e19, 1e19), (2.0**63, 2.0**64), (2.5, 2.0),
        (-1e300, 1e300), (2.0**63 - 1024, 2.0**64 - 2048),
    ]  # fmt: skip
    for low, high in ranges:
        cases[f"between {low!r} and {high!r}"] = (
            lambda column, low=low, high=high: Between(column=column, low=low, high=high),
            _between(low, high),
        )
    lists = [
        [2.0**53], [2.5, 0.5], [2.5, 3.0, 2.0**53 + 2], [2.0**63, -(2.0**63)], [1e19, 2.0**64],
        [2.0**53, 2.0**53 + 2, 0.0, 1.0, 2.5, 2.0**62],
    ]  # fmt: skip
    for values in lists:
        cases[f"in {values!r}"] = (
            lambda column, values=values: InList(column=column, values=values),
            _in(values),
        )
    return cases


CASES = _cases()


def _unsigned(name: str) -> list[int | None]:
    """Column ``u``'s values on engine ``name``."""
    return UNSIGNED if name in UNSIGNED_ENGINES else SIGNED_RANGE_UNSIGNED


NARROW = {"i8": pa.int8(), "u8": pa.uint8(), "i16": pa.int16(), "u32": pa.uint32()}
"""Integer columns narrower than 64 bits, of both signs."""


def _narrow_values(kind: pa.DataType) -> list[int | None]:
    """A narrow column's values, one a row: NULL at both ends, the type's own ends and a
    few values near zero between."""
    bits = kind.bit_width
    low, high = (
        (0, 2**bits - 1)
        if pa.types.is_unsigned_integer(kind)
        else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    )
    inner = [low, high, low + 1, high - 1, 0, 1, 2, 3, 7]
    if low < 0:
        inner += [-1, -2, -3]
    return [None, *(inner * 3)[: len(SIGNED) - 2], None]


NARROW_VALUES = {name: _narrow_values(kind) for name, kind in NARROW.items()}
"""The values of each narrow column, on every engine."""


def _table(name: str = "local") -> pa.Table:
    rows = len(SIGNED)
    unsigned = _unsigned(name) + [None] * (rows - len(UNSIGNED))
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "body": ["crash report"] * rows,
            "n": pa.array(SIGNED, pa.int64()),
            "u": pa.array(unsigned, pa.uint64()),
            **{column: pa.array(NARROW_VALUES[column], kind) for column, kind in NARROW.items()},
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(rows)], pa.list_(pa.float32(), 2)
            ),
        }
    )


UNSIGNED_ENGINES = ("local", "local statement", "lancedb", "turbopuffer")
"""The engines holding an unsigned 64-bit value past the largest signed one."""


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    yield from literal_engine(request, tmp_path_factory, "intlit", _table)


def _plans(predicate: Predicate) -> list[SearchPlan]:
    return literal_plans(predicate, len(SIGNED))


def _keys(name: str, engine: Any, plan: SearchPlan) -> set[int]:
    return literal_keys(name, engine, plan, _table().schema)


def _reference(column: str, truth: Truth, name: str = "local") -> set[int]:
    values = (
        SIGNED if column == "n" else NARROW_VALUES[column] if column in NARROW else _unsigned(name)
    )
    return {key for key, value in enumerate(values) if truth(value) is True}


def _unspellable(column: str, predicate: Predicate) -> bool:
    """Whether the comparison may be refused: on the unsigned column, a literal in [2**63,
    2**64), where the exact comparison may need an integer past the largest signed one,
    which no plan literal is."""
    values = getattr(predicate, "values", None) or [
        getattr(predicate, name) for name in ("value", "low", "high") if hasattr(predicate, name)
    ]
    return column == "u" and any(2**63 <= Fraction(value) < 2**64 for value in values)


def _check(name: str, engine: Any, column: str, case: str) -> None:
    build, truth = CASES[case]
    predicate = build(column)
    for negated in (False, True):
        used = Not(operand=predicate) if negated else predicate
        expected = _reference(column, _not(truth) if negated else truth, name)
        for plan in _plans(used):
            try:
                keys = _keys(name, engine, plan)
            except PlanError as error:
                assert name in UNSIGNED_ENGINES and _unspellable(column, predicate), error
                assert "no exact spelling" in str(error)
                continue
            assert keys == expected, (name, column, negated, case)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_signed_column_keeps_the_exact_rows(engine: tuple[str, Any], case: str) -> None:
    name, opened = engine
    _check(name, opened, "n", case)


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unsigned_column_keeps_the_exact_rows(engine: tuple[str, Any], case: str) -> None:
    """Up to 2**64 - 1 where the engine holds it; a comparison whose exact form needs an
    integer past INT64_MAX is refused there with a PlanError (no plan literal is one)."""
    name, opened = engine
    _check(name, opened, "u", case)


def _integer_cases() -> dict[str, tuple[Callable[[str], Predicate], Callable[[str], Truth]]]:
    """Integer literals against a narrow column, each case's literals taken from the
    column's type: inside its range, just past either end and far past it."""

    def ends(column: str) -> tuple[int, int]:
        values = [value for value in NARROW_VALUES[column] if value is not None]
        return min(values), max(values)

    literals: dict[str, Callable[[int, int], int]] = {
        "low - 1": lambda low, high: low - 1,
        "high + 1": lambda low, high: high + 1,
        "-40000": lambda low, high: -40000,
        "300": lambda low, high: 300,
        "-1": lambda low, high: -1,
        "INT64_MAX": lambda low, high: 2**63 - 1,
        "INT64_MIN": lambda low, high: -(2**63),
        "high": lambda low, high: high,
        "2": lambda low, high: 2,
    }
    cases: dict[str, tuple[Callable[[str], Predicate], Callable[[str], Truth]]] = {}
    for op in OPERATORS:
        for label, pick in literals.items():
            cases[f"{op} {label}"] = (
                lambda column, op=op, pick=pick: Comparison(
                    column=column, operator=op, value=pick(*ends(column))
                ),
                lambda column, op=op, pick=pick: _compare(op, pick(*ends(column))),
            )
    spans: list[tuple[str, str]] = [
        ("-1", "300"), ("low - 1", "2"), ("2", "high + 1"), ("low - 1", "high + 1"),
        ("INT64_MIN", "-1"), ("high + 1", "INT64_MAX"), ("300", "-40000"), ("-40000", "high"),
    ]  # fmt: skip
    for start, end in spans:
        cases[f"between {start} and {end}"] = (
            lambda column, start=start, end=end: Between(
                column=column,
                low=literals[start](*ends(column)),
                high=literals[end](*ends(column)),
            ),
            lambda column, start=start, end=end: _between(
                literals[start](*ends(column)), literals[end](*ends(column))
            ),
        )
    members: list[list[str]] = [
        ["2", "300"],
        ["300", "-40000"],
        ["low - 1", "high + 1", "high"],
        ["-1", "high", "INT64_MAX"],
    ]
    for labels in members:
        cases[f"in {labels}"] = (
            lambda column, labels=labels: InList(
                column=column, values=[literals[label](*ends(column)) for label in labels]
            ),
            lambda column, labels=labels: _in([literals[label](*ends(column)) for label in labels]),
        )
    return cases


INTEGER_CASES = _integer_cases()


@pytest.mark.parametrize("case", sorted(INTEGER_CASES))
def test_a_narrow_column_keeps_the_exact_rows_for_an_integer_past_its_type(
    engine: tuple[str, Any], case: str
) -> None:
    """An integer literal no value of a narrow column's type equals (``i8 <= 300``,
    ``u8 < -1``, ``i16 > -40000``, an ``IN`` list or ``BETWEEN`` partly past the type) keeps
    the rows exact arithmetic keeps, under ``NOT`` too, on every engine: LanceDB, which
    refuses a literal its column's type cannot hold, is given the equivalent one within it."""
    name, opened = engine
    build, truth = INTEGER_CASES[case]
    for column in NARROW:
        predicate = build(column)
        for negated in (False, True):
            used = Not(operand=predicate) if negated else predicate
            expected = _reference(column, _not(truth(column)) if negated else truth(column), name)
            for plan in _plans(used):
                assert _keys(name, opened, plan) == expected, (name, column, negated, case)


def test_the_reference_is_not_trivial() -> None:
    """The cases tell exact from float64 comparison: each named one keeps other rows than
    the comparison in float64 would."""

    def in_float(op: str, literal: float) -> set[int]:
        return {
            key
            for key, value in enumerate(SIGNED)
            if value is not None and _PYTHON[op](float(value), literal)
        }

    for op, literal in (("=", 2.0**53), (">=", 2.0**63), ("<", 2.0**63), ("<=", 2.0**53)):
        assert _reference("n", _compare(op, literal)) != in_float(op, literal)
    sizes = [len(_reference("n", truth)) for _, truth in CASES.values()]
    assert 0 in sizes and len(SIGNED) - 2 in sizes
    assert sum(0 < size < len(SIGNED) - 2 for size in sizes) > len(sizes) // 2


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from hotdata_retrieval.engines.local import LocalEngine

    with LocalEngine(tmp_path_factory.mktemp("intlit-property")) as opened:
        opened.load_table("docs", _table(), key_column="id", text_columns=["body"])
        yield opened


_NEAR = st.sampled_from([0, 2**53, 2**62, 2**63, -(2**63), 2**64]).flatmap(
    lambda center: st.integers(min_value=-4096, max_value=4096).map(lambda d: center + d)
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    column=st.sampled_from(["n", "u"]),
    op=st.sampled_from(OPERATORS),
    literal=st.one_of(
        _NEAR.map(float),
        st.floats(allow_nan=False, allow_infinity=False),
        _NEAR.map(lambda n: n + 0.5).map(float),
    ),
)
def test_any_float_literal_keeps_the_exact_rows_on_the_local_engine(
    local: Any, column: str, op: str, literal: float
) -> None:
    expected = _reference(column, _compare(op, literal))
    predicate = Comparison(column=column, operator=op, value=literal)
    for plan in _plans(predicate):
        try:
            keys = set(local.search(plan).keys)
        except PlanError as error:
            assert _unspellable(column, predicate), error
            continue
        assert keys == expected


def test_a_narrow_column_on_lancedb_compares_a_float_past_its_type(tmp_path: Any) -> None:
    """LanceDB refuses an integer literal its column's type cannot hold (``i8 <= 300``), so
    a float compared with a narrow column is rewritten within the type's own range: a
    literal past it (``i8 < 200.5``, ``u8 = 300.0``, ``u8 <= 1e19``) keeps every row or
    none, as exact arithmetic says, never an engine error."""
    from hotdata_retrieval.engines.lancedb import LancedbEngine

    values: dict[str, list[int | None]] = {
        "i8": [None, -128, -1, 0, 2, 127],
        "u8": [None, 0, 1, 2, 255, 7],
        "i16": [None, -32768, -3, 0, 3, 32767],
        "u32": [None, 0, 1, 2, 2**32 - 1, 9],
    }
    rows = len(values["i8"])
    data = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "body": ["crash report"] * rows,
            **{name: pa.array(values[name], kind) for name, kind in NARROW.items()},
        }
    )
    literals = [200.5, 300.0, -300.5, 1000.0, 65536.5, -0.5, 2.5, 1e19, 2.0**63, -1e19]
    opened = LancedbEngine(str(tmp_path / "lance"))
    try:
        opened.load_table("docs", data, key_column="id", text_columns=["body"])
        for column in NARROW:
            for op in OPERATORS:
                for literal in literals:
                    truth = _compare(op, literal)
                    present = {key for key in range(rows) if values[column][key] is not None}
                    expected = {key for key in present if truth(values[column][key])}
                    predicate = Comparison(column=column, operator=op, value=literal)
                    for negated in (False, True):
                        plan = SearchPlan(
                            source=Bm25Search(table="docs", column="body", query_text="crash"),
                            limit=rows,
                            filter=Not(operand=predicate) if negated else predicate,
                        )
                        kept = present - expected if negated else expected
                        assert set(opened.search(plan).keys) == kept, (column, op, literal)
    finally:
        opened.close()


NARROW_UNSIGNED = {"u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32()}
"""Unsigned columns narrower than 64 bits: every value in the signed 64-bit range."""


def test_a_narrow_unsigned_column_compares_any_float_exactly(tmp_path: Any) -> None:
    """A uint8, uint16 or uint32 column holds no value past INT64_MAX, so a float literal
    past it (``1e19``, ``2.0**63``) keeps every row or none on the local engine (its native
    text and nearest-neighbour paths): it is answered, never refused for want of an int64
    spelling."""
    from hotdata_retrieval.engines.local import LocalEngine

    values: dict[str, list[int | None]] = {
        name: [None, 0, 1, 2, 2 ** (8 * kind.byte_width) - 1, 7]
        for name, kind in NARROW_UNSIGNED.items()
    }
    rows = len(values["u8"])
    data = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "body": ["crash report"] * rows,
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(rows)], pa.list_(pa.float32(), 2)
            ),
            **{name: pa.array(values[name], kind) for name, kind in NARROW_UNSIGNED.items()},
        }
    )
    literals = [1e19, 2.0**63, 2.0**64, -1e19, 2.5, 255.5, 65535.0, 4294967295.5]
    with LocalEngine(tmp_path / "narrow") as opened:
        opened.load_table("docs", data, key_column="id", text_columns=["body"])
        for column in NARROW_UNSIGNED:
            for op in OPERATORS:
                for literal in literals:
                    truth = _compare(op, literal)
                    expected = {key for key, value in enumerate(values[column]) if truth(value)}
                    predicate = Comparison(column=column, operator=op, value=literal)
                    for negated in (False, True):
                        used = Not(operand=predicate) if negated else predicate
                        kept = (
                            {key for key in range(rows) if values[column][key] is not None}
                            - expected
                            if negated
                            else expected
                        )
                        for source in (
                            Bm25Search(table="docs", column="body", query_text="crash"),
                            NearestNeighborSearch(
                                table="docs", column="embedding", query_vector=[1.0, 0.0]
                            ),
                        ):
                            plan = SearchPlan(source=source, limit=rows, filter=used)
                            assert set(opened.search(plan).keys) == kept, (column, op, literal)


UNION_TYPES: list[tuple[pa.DataType, pa.DataType]] = [
    (pa.uint8(), pa.uint8()),
    (pa.uint8(), pa.int64()),
    (pa.int8(), pa.uint8()),
    (pa.uint16(), pa.uint32()),
    (pa.int64(), pa.uint64()),
    (pa.uint64(), pa.uint64()),
]
"""Column ``x``'s type in the two tables of a plan: narrow and 64-bit, of one sign and of
both."""


def _union_values(kind: pa.DataType) -> list[int | None]:
    """Column ``x``'s values in a table where it has type ``kind``: its type's ends, a few
    small values and NULL."""
    bits = kind.bit_width
    if pa.types.is_unsigned_integer(kind):
        return [None, 0, 1, 2, 7, 2**bits - 1]
    return [None, -(2 ** (bits - 1)), -3, -1, 2, 2 ** (bits - 1) - 1]


@pytest.mark.parametrize("types", UNION_TYPES, ids=lambda pair: f"{pair[0]}-{pair[1]}")
def test_a_plan_over_tables_compares_a_float_as_each_table_alone_does(
    tmp_path: Any, types: tuple[pa.DataType, pa.DataType]
) -> None:
    """A plan over two tables whose column ``x`` has other integer types answers a float
    literal (``x <= 1e19``, ``x != 2.5``, past a narrow type) exactly wherever a plan over
    each table alone does, and is refused with the same PlanError where one of them is (an
    unsigned 64-bit column and a literal whose exact form needs an integer past INT64_MAX).
    A column signed in one table and unsigned in the other keeps its negative rows."""
    from hotdata_retrieval import TableUnion
    from hotdata_retrieval.engines.local import LocalEngine

    columns = {"a": _union_values(types[0]), "b": _union_values(types[1])}
    offsets = {"a": 0, "b": 100}
    literals = [1e19, -1e19, 2.0**63, 2.5, -0.5, 300.0, 65536.5, 2.0**64, 4294967295.0]
    with LocalEngine(tmp_path / "union") as opened:
        for table, kind in zip(columns, types):
            rows = len(columns[table])
            data = pa.table(
                {
                    "id": pa.array(range(offsets[table], offsets[table] + rows), pa.int64()),
                    "body": ["crash report"] * rows,
                    "x": pa.array(columns[table], kind),
                }
            )
            opened.load_table(table, data, key_column="id", text_columns=["body"])

        def answer(tables: list[str], predicate: Predicate) -> set[int] | PlanError:
            table = TableUnion(tables) if len(tables) > 1 else tables[0]
            source = Bm25Search(table=table, column="body", query_text="crash")
            try:
                return set(
                    opened.search(SearchPlan(source=source, limit=20, filter=predicate)).keys
                )
            except PlanError as error:
                assert "no exact spelling" in str(error) and error.field == "filter", error
                return error

        for op in OPERATORS:
            for literal in literals:
                truth = _compare(op, literal)
                comparison = Comparison(column="x", operator=op, value=literal)
                for negated in (False, True):
                    predicate = Not(operand=comparison) if negated else comparison
                    alone = [answer([table], predicate) for table in columns]
                    together = answer(list(columns), predicate)
                    case = (op, literal, negated)
                    if any(isinstance(one, PlanError) for one in alone):
                        assert isinstance(together, PlanError), case
                        continue
                    expected = {
                        offsets[table] + row
                        for table, values in columns.items()
                        for row, value in enumerate(values)
                        if value is not None and truth(value) is not negated
                    }
                    assert together == expected, case


def test_turbopuffer_refuses_a_narrow_unsigned_column_as_the_uint64_it_holds(
    tmp_path: Any,
) -> None:
    """turbopuffer has one unsigned attribute type, 64-bit: a uint8 column loaded there reads
    back as uint64 and takes any such value at upsert, so a float whose exact comparison
    needs an integer past INT64_MAX (``u8 <= 1e19``) has no exact form there, and is refused
    with the PlanError the local engine gives for a uint64 column, word for word; a literal
    with an exact form is answered as on the local engine's uint8 column."""
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.turbopuffer_api import fake_backed_engine

    values = [None, 0, 1, 2, 255, 7]

    def data(kind: pa.DataType) -> pa.Table:
        rows = len(values)
        return pa.table(
            {
                "id": pa.array(range(rows), pa.int64()),
                "body": ["crash report"] * rows,
                "u8": pa.array(values, kind),
            }
        )

    def outcome(engine: Any, predicate: Predicate) -> set[int] | str:
        source = Bm25Search(table="docs", column="body", query_text="crash")
        try:
            return set(engine.search(SearchPlan(source=source, limit=10, filter=predicate)).keys)
        except PlanError as error:
            assert error.field == "filter" and "no exact spelling" in str(error), error
            return str(error)

    puffer = fake_backed_engine(tmp_path / "turbopuffer")
    try:
        puffer.load_table("docs", data(pa.uint8()), key_column="id", text_columns=["body"])
        assert puffer.read_table("docs", ["u8"]).schema.field("u8").type == pa.uint64()
        with (
            LocalEngine(tmp_path / "wide") as wide,
            LocalEngine(tmp_path / "narrow") as narrow,
        ):
            wide.load_table("docs", data(pa.uint64()), key_column="id", text_columns=["body"])
            narrow.load_table("docs", data(pa.uint8()), key_column="id", text_columns=["body"])
            kinds = set()
            for op in OPERATORS:
                for literal in (1e19, 2.0**63, 2.0**64 - 2048, 2.5, 300.0, -1e19):
                    comparison = Comparison(column="u8", operator=op, value=literal)
                    for predicate in (comparison, Not(operand=comparison)):
                        on_puffer = outcome(puffer, predicate)
                        kinds.add(type(on_puffer))
                        assert on_puffer == outcome(wide, predicate), (op, literal)
                        if not isinstance(on_puffer, str):
                            assert on_puffer == outcome(narrow, predicate), (op, literal)
            assert kinds == {set, str}  # some plans answered, some refused
    finally:
        puffer.close()
