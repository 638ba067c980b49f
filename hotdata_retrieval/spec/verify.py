"""Run the conformance cases on an engine, in both forms, and report every difference.

For each case the fixture table is loaded, then the plan runs twice:

- **cte**: compiled for the engine's own dialect (the registered engine's, from
  :mod:`hotdata_retrieval.engines.registry`: ``sqlite`` on SQLite, ``duckdb`` on DuckDB; the
  ``hotdata`` dialect, the CTE form every Hotdata engine runs, for the local engine, the
  Hotdata engine and any engine not registered). An engine that runs no SQL (LanceDB: its
  registered dialect is ``None``) runs the plan itself instead, through its ``search``: that
  form is named **search**, and its hits are read as the statement's rows would be;
- **native**: compiled for a dialect whose profile names the engine's native function (the
  engine's ``native_hybrid_search`` attribute), which emits one ``hybrid_search(...)`` call.
  An engine without the attribute reports the native form as not available.

Each form's rows are compared with the case's expected rows (the CTE form with its own
expected rows where the case declares that it cannot follow the spec), then the two forms are
compared with each other row for row, column for column. A case passes when every form that
ran matched its expectations and the forms differ only where the case declares it. A case whose
plan the engine's dialect cannot express (SQLite has no dot-product distance) is *not
applicable* there: reported with the dialect's reason, and no failure.

An engine needs ``sql(text)`` (returning an Arrow table, or anything with ``to_pylist()``, or a
sequence of row mappings), or ``search(plan)`` where it runs no SQL. With ``load_table(name,
data, key_column=..., text_columns=...)`` taking an Arrow table, as every registered engine
has, each case's table is loaded first; without it, the engine must already hold every case's
table (``spec_<case>``: the case file's rows, a BM25 index on ``body``, a cosine vector index on
``embedding``).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from hotdata_retrieval._words import counted
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.compile.compiler import native_hybrid_misfit
from hotdata_retrieval.engines.registry import engine_kind, engine_kinds, kind_of_engine
from hotdata_retrieval.errors import EngineUnavailableError as EngineUnavailableError
from hotdata_retrieval.errors import UnknownEngineError, UnsupportedFeatureError
from hotdata_retrieval.plan.search import (
    DistributionBasedScoreFusion,
    NearestNeighborSearch,
    NormalizedScoreFusion,
    SearchPlan,
)
from hotdata_retrieval.spec.cases import DIVERGENCES, Case, build_cases
from hotdata_retrieval.spec.native import native_profile

PASS = "pass"
FAIL = "fail"
NOT_AVAILABLE = "not available"
NOT_APPLICABLE = "not applicable"

HOTDATA_DATABASE_VARIABLE = "HOTDATA_DATABASE"
"""The database ``--engine hotdata`` verifies against (credentials: ``HOTDATA_API_KEY``...)."""

HOTDATA_DIALECT = "hotdata"
"""The dialect of the CTE form on an engine the registry does not name."""

SEARCH_FORM = "search"
"""The form an engine that runs no SQL reports instead of ``cte``: the plan through ``search``."""

_SCORE_TOLERANCE = 1e-12
_DISTANCE_TOLERANCE = 1e-6
"""A distance passes within this of the spec's, absolute up to 1 and relative beyond: the
scale the cases keep distinct distances apart by (``cases._check_separated``), and a Float32
engine's error on a cosine distance, ``1 - cos``, is absolute (DuckDB's, LanceDB's)."""


@attrs.frozen(kw_only=True)
class FormResult:
    """How one form of one case ran.

    Attributes:
        form: ``cte``, ``search`` (the plan run through ``search``, on an engine that runs
            no SQL) or ``native``.
        status: ``pass``, ``fail``, ``not available`` or ``not applicable``.
        sql: the statement run, if any.
        rows: the rows it returned (empty if it did not run).
        differences: each way the rows differ from the expected rows (or the error).
        note: why the form did not run, or what it was checked against.
    """

    form: str
    status: str
    sql: str | None = None
    rows: tuple[dict[str, Any], ...] = ()
    differences: tuple[str, ...] = ()
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "form": self.form,
            "status": self.status,
            "sql": self.sql,
            "rows": len(self.rows),
            "differences": list(self.differences),
            "note": self.note,
        }


@attrs.frozen(kw_only=True)
class CaseReport:
    """One case's outcome.

    Attributes:
        name: the case.
        cte: the CTE form's result (or the search form's, on an engine that runs no SQL).
        native: the native form's result.
        form_differences: each way the two forms' rows differ (only when both ran).
        declared: the divergences the case declares for the CTE form, by name.
        error: a failure before either form ran (loading the fixture table).
    """

    name: str
    cte: FormResult
    native: FormResult
    form_differences: tuple[str, ...] = ()
    declared: tuple[str, ...] = ()
    error: str | None = None

    @property
    def status(self) -> str:
        """``fail`` when a form failed (or the fixture did not load, or the forms differ
        undeclared), ``not applicable`` when the engine's dialect cannot express the plan,
        else ``pass``."""
        if self.error is not None or FAIL in (self.cte.status, self.native.status):
            return FAIL
        if self.form_differences and not self.declared:
            return FAIL
        if self.cte.status == NOT_APPLICABLE:
            return NOT_APPLICABLE
        return PASS if self.cte.status == PASS else FAIL

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def forms_agree(self) -> bool:
        """Both forms ran and returned the same rows."""
        return self.cte.status == PASS and self.native.status == PASS and not self.form_differences

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "passed": self.passed,
            "error": self.error,
            "cte": self.cte.to_dict(),
            "native": self.native.to_dict(),
            "forms_agree": self.forms_agree,
            "form_differences": list(self.form_differences),
            "declared_divergences": [
                {"name": name, "reason": DIVERGENCES[name]} for name in self.declared
            ],
        }


@attrs.frozen(kw_only=True)
class Report:
    """The outcome of a verification run.

    Attributes:
        engine: the engine's name, as given.
        native_function: the engine's native ``hybrid_search``, if it declares one.
        cases: each case's outcome, in order.
        dialect: the dialect the CTE form was compiled for, or ``None`` when each plan ran
            through the engine's ``search`` (an engine that runs no SQL).
    """

    engine: str
    native_function: str | None
    cases: tuple[CaseReport, ...]
    dialect: str | None = HOTDATA_DIALECT

    @property
    def passed(self) -> bool:
        """No case failed (a case the engine cannot express is not applicable, no failure)."""
        return all(case.status != FAIL for case in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "dialect": self.dialect,
            "native_hybrid_search": self.native_function,
            "passed": self.passed,
            "cases": [case.to_dict() for case in self.cases],
        }

    def text(self) -> str:
        """The report as lines of text, one block per case, then a summary line."""
        primary = "the CTE form" if self.dialect is not None else "the search form"
        native = self.native_function or f"none (only {primary} runs)"
        how = (
            f"dialect {self.dialect}"
            if self.dialect is not None
            else "no SQL (each plan runs through search)"
        )
        lines = [
            f"hybrid_search conformance: engine {self.engine}, {how}, native function {native}"
        ]
        width = max((len(case.name) for case in self.cases), default=0)
        for case in self.cases:
            verdict = _VERDICTS[case.status]
            if case.error is not None:
                lines.append(f"{verdict}  {case.name:<{width}}  {case.error}")
                continue
            parts = [_summary(case.cte), _summary(case.native)]
            if case.forms_agree:
                parts.append("forms agree row for row")
            elif case.form_differences:
                parts.append("forms differ" + (", as declared" if case.declared else ""))
            lines.append(f"{verdict}  {case.name:<{width}}  " + " · ".join(parts))
            for form in (case.cte, case.native):
                lines.extend(f"      {form.form}: {line}" for line in form.differences)
            lines.extend(f"      declared: {name}: {DIVERGENCES[name]}" for name in case.declared)
            lines.extend(f"      {line}" for line in case.form_differences)
        failed = sum(case.status == FAIL for case in self.cases)
        inapplicable = sum(case.status == NOT_APPLICABLE for case in self.cases)
        passed = len(self.cases) - failed - inapplicable
        agree = sum(case.forms_agree for case in self.cases)
        declared = sum(bool(case.form_differences and case.declared) for case in self.cases)
        beyond = f", {inapplicable} not applicable on this engine" if inapplicable else ""
        lines.append(
            f"{counted(len(self.cases), 'case')}: {passed} passed, {failed} failed{beyond}; "
            f"forms agree row for row on {agree}, differ as declared on {declared}"
        )
        return "\n".join(lines)


_VERDICTS = {PASS: "PASS", FAIL: "FAIL", NOT_APPLICABLE: "N/A "}


def _summary(result: FormResult) -> str:
    if result.status == PASS:
        against = f" ({result.note})" if result.note else ""
        return f"{result.form}: {counted(len(result.rows), 'row')} ok{against}"
    if result.status == FAIL:
        return f"{result.form}: {counted(len(result.differences), 'difference')}"
    return f"{result.form}: {result.status} ({result.note})"


# -- running ---------------------------------------------------------------------------------


def corpus_table(case: Case) -> Any:
    """The case's fixture rows as an Arrow table (needs ``pyarrow``).

    The vectors are a fixed-size ``list<float32>`` of the plan's query vector's length (the
    column's dimensions), so a store that declares a vector column's length (DuckDB's
    ``FLOAT[n]``, pgvector's ``vector(n)``) knows it even for a table with no row.
    """
    import pyarrow as pa

    lengths = {
        len(branch.query_vector)
        for branch in case.plan.branches
        if isinstance(branch, NearestNeighborSearch)
    }
    vector = pa.list_(pa.float32(), lengths.pop()) if len(lengths) == 1 else pa.list_(pa.float32())
    types = {"int64": pa.int64(), "string": pa.string(), "list<float32>": vector}
    return pa.table(
        {
            column: pa.array([row[column] for row in case.rows], type=types[kind])
            for column, kind in case.column_types.items()
        }
    )


def _row_dicts(result: Any) -> list[dict[str, Any]]:
    if hasattr(result, "to_pylist"):
        return [dict(row) for row in result.to_pylist()]
    if hasattr(result, "to_arrow_table"):
        return [dict(row) for row in result.to_arrow_table().to_pylist()]
    return [dict(row) for row in result]


def _run(engine: Any, sql: str) -> tuple[list[dict[str, Any]], str | None]:
    try:
        return _row_dicts(engine.sql(sql)), None
    except Exception as error:  # any engine failure is reported, never raised
        return [], f"the engine failed: {error}"


def search_rows(plan: SearchPlan, result: Any) -> list[dict[str, Any]]:
    """A search result's hits as the rows the plan's statement returns: the key column, the
    plan's columns, ``score``, and per branch ``<branch>_rank`` and its raw value
    (``<branch>_distance`` for a nearest-neighbour branch, ``<branch>_score`` otherwise)."""
    rows = []
    for hit in result.hits:
        row: dict[str, Any] = {**hit.columns}
        if plan.key_column is not None:
            row[plan.key_column] = hit.key
        row["score"] = hit.score
        for name, branch in zip(plan.branch_names, plan.branches):
            scored = hit.branches.get(name)
            raw = "distance" if isinstance(branch, NearestNeighborSearch) else "score"
            row[f"{name}_rank"] = None if scored is None else scored.rank
            row[f"{name}_{raw}"] = None if scored is None else scored.raw_score
        rows.append(row)
    return rows


def _close(got: Any, want: float, tolerance: float) -> bool:
    return isinstance(got, (int, float)) and math.isclose(
        got, want, rel_tol=tolerance, abs_tol=tolerance * 1e-3
    )


def _near(got: Any, want: float) -> bool:
    """``got`` is within the distance tolerance of ``want`` (absolute up to 1, relative
    beyond)."""
    return isinstance(got, (int, float)) and abs(got - want) <= _DISTANCE_TOLERANCE * max(
        1.0, abs(want)
    )


def _distance_error(
    plan: SearchPlan, expected: Mapping[str, Any], rows: list[dict[str, Any]]
) -> float:
    """The largest error of a distance ``rows`` report, against the spec's for the same key
    (absolute up to 1, relative beyond); 0 when every one is exact."""
    key = plan.key_column
    assert key is not None  # spec cases are fusions, whose plans have a key
    largest = 0.0
    for row, want in zip(rows, expected["rows"]):
        if row.get(key) != want["key"]:
            continue
        for name, value in want.get("distances", {}).items():
            got = row.get(f"{name}_distance")
            if value is not None and isinstance(got, (int, float)):
                largest = max(largest, abs(got - value) / max(1.0, abs(value)))
    return largest


def _against(
    plan: SearchPlan, expected: Mapping[str, Any], rows: list[dict[str, Any]]
) -> tuple[list[str], str | None]:
    """Each way ``rows`` differ from ``expected["rows"]``, and what the fused scores were held
    to when not the spec's 1e-12.

    A score-normalized fusion (min-max, distribution-based) computes its scores from the raw
    distances, which the cases make exact integers (squared L2); an engine whose distances
    come back rounded (SQLite and DuckDB square a Float32 Euclidean distance) carries that
    error into the scores, so there they are held to the distance tolerance instead, and the
    report says so. Keys and ranks are compared exactly either way.
    """
    differences: list[str] = []
    note = None
    rounded = 0.0
    if isinstance(plan.fusion, NormalizedScoreFusion):
        rounded = _distance_error(plan, expected, rows)
        if rounded > _SCORE_TOLERANCE:
            note = (
                f"scores within {_DISTANCE_TOLERANCE:g}, the engine's distances being rounded "
                f"by up to {rounded:.1e}"
            )

    def scores_close(got: Any, want: float) -> bool:
        if rounded > _SCORE_TOLERANCE:
            return _near(got, want)
        return _close(got, want, _SCORE_TOLERANCE)

    wanted = expected["rows"]
    if len(rows) != len(wanted):
        differences.append(f"{counted(len(rows), 'row')}, expected {len(wanted)}")
    key = plan.key_column
    assert key is not None  # spec cases are fusions, whose plans have a key
    for position, (row, want) in enumerate(zip(rows, wanted), start=1):
        got_key = row.get(key)
        if got_key != want["key"]:
            differences.append(f"row {position}: key {got_key!r}, expected {want['key']!r}")
            continue
        where = f"row {position} (key {got_key!r})"
        if not scores_close(row.get("score"), want["score"]):
            differences.append(f"{where}: score {row.get('score')!r}, expected {want['score']!r}")
        for name, rank in want["ranks"].items():
            got = row.get(f"{name}_rank")
            if (None if got is None else int(got)) != rank:
                differences.append(f"{where}: {name} rank {got!r}, expected {rank!r}")
            if name in want.get("distances", {}):
                continue  # a distance is checked below, NULL included
            raw = row.get(f"{name}_score")
            if (raw is None) != (rank is None):
                differences.append(f"{where}: {name} raw score {raw!r} with rank {rank!r}")
        for name, value in want.get("distances", {}).items():
            got = row.get(f"{name}_distance")
            if value is None or got is None:
                if (value is None) != (got is None) and want["ranks"].get(name) is not None:
                    differences.append(f"{where}: {name} distance {got!r}, expected {value!r}")
            elif not _near(got, value):
                differences.append(f"{where}: {name} distance {got!r}, expected {value!r}")
        for column, value in want["columns"].items():
            if row.get(column) != value:
                differences.append(f"{where}: {column} {row.get(column)!r}, expected {value!r}")
    for position, row in enumerate(rows[len(wanted) :], start=len(wanted) + 1):
        differences.append(f"row {position}: unexpected key {row.get(key)!r}")
    return differences, note


def _between_forms(
    cte: list[dict[str, Any]], native: list[dict[str, Any]], *, exact_scores: bool = True
) -> list[str]:
    """Each row and column where the two forms' results are not equal (the fused score
    within the score tolerance when not ``exact_scores``: distribution-based score fusion's
    mean and deviation are sums whose order each form chooses, spec R20)."""

    def same(column: str, left: Any, right: Any) -> bool:
        if column == "score" and not exact_scores and isinstance(right, (int, float)):
            return _close(left, right, _SCORE_TOLERANCE)
        return bool(left == right)

    differences = []
    if len(cte) != len(native):
        differences.append(
            f"{counted(len(cte), 'row')} (cte) vs {counted(len(native), 'row')} (native)"
        )
    for position, (left, right) in enumerate(zip(cte, native), start=1):
        unequal = [
            f"{column} {left.get(column)!r} vs {right.get(column)!r}"
            for column in (*left, *(column for column in right if column not in left))
            if not same(column, left.get(column), right.get(column))
        ]
        if unequal:
            differences.append(f"row {position} (cte vs native): " + "; ".join(unequal))
    return differences


def _primary_form(
    engine: Any,
    plan: SearchPlan,
    dialect: str | None,
    expected: Mapping[str, Any],
    note: str | None,
) -> tuple[FormResult, bool]:
    """The CTE form compiled for ``dialect`` and run by ``engine.sql``, or with no dialect
    the search form, ``engine.search(plan)``; checked against ``expected``. A plan the
    dialect (or the engine's search) cannot express is not applicable, with its reason.

    Returns:
        The form's result, and whether it ran (returned rows, right or wrong).
    """
    form = "cte" if dialect is not None else SEARCH_FORM
    statement = None
    try:
        if dialect is not None:
            statement = to_sql(plan, dialect)
            rows, failure = _run(engine, statement)
        else:
            rows, failure = search_rows(plan, engine.search(plan)), None
    except UnsupportedFeatureError as error:
        return FormResult(form=form, status=NOT_APPLICABLE, sql=statement, note=str(error)), False
    except Exception as error:  # the search's failure is reported, never raised
        rows, failure = [], f"the engine failed: {error}"
    if failure:
        differences, held = [failure], None
    else:
        differences, held = _against(plan, expected, rows)
    notes = "; ".join(part for part in (note, held) if part) or None
    result = FormResult(
        form=form,
        status=FAIL if differences else PASS,
        sql=statement,
        rows=tuple(rows),
        differences=tuple(differences),
        note=notes,
    )
    return result, failure is None


def verify_case(engine: Any, case: Case, *, dialect: str | None = HOTDATA_DIALECT) -> CaseReport:
    """Load ``case``'s table into ``engine`` and run both forms: the CTE form compiled for
    ``dialect`` (``None``: the plan through ``engine.search``, for an engine that runs no
    SQL) and, where the engine declares one, the native call."""
    plan = attrs.evolve(case.plan, include_branch_scores=True)
    declared = case.cte_divergences
    try:
        if hasattr(engine, "load_table"):  # otherwise the engine must already hold the table
            engine.load_table(
                case.table, corpus_table(case), key_column=plan.key_column, text_columns=["body"]
            )
    except Exception as error:  # reported per case
        absent = FormResult(form="cte", status=NOT_AVAILABLE, note="not run")
        return CaseReport(
            name=case.name,
            cte=absent,
            native=attrs.evolve(absent, form="native"),
            declared=declared,
            error=f"cannot load the fixture table {case.table}: {error}",
        )

    cte_expected = case.cte_expected if declared and case.cte_expected else case.expected
    cte, cte_ran = _primary_form(
        engine, plan, dialect, cte_expected, "its declared expectations" if declared else None
    )

    function = getattr(engine, "native_hybrid_search", None)
    misfit = native_hybrid_misfit(plan)
    native_ran = False
    if function is None:
        native = FormResult(
            form="native", status=NOT_AVAILABLE, note="the engine declares no native_hybrid_search"
        )
    elif misfit is not None:
        native = FormResult(form="native", status=NOT_APPLICABLE, note=misfit)
    else:
        native_sql = to_sql(plan, native_profile(function))
        held = None
        if f"{function}(" not in native_sql:
            native_rows: list[dict[str, Any]] = []
            native_differences = [f"the compiled statement does not call {function}"]
        else:
            native_rows, failure = _run(engine, native_sql)
            native_ran = failure is None
            if failure:
                native_differences = [failure]
            else:
                native_differences, held = _against(plan, case.expected, native_rows)
        native = FormResult(
            form="native",
            status=FAIL if native_differences else PASS,
            sql=native_sql,
            rows=tuple(native_rows),
            differences=tuple(native_differences),
            note=held,
        )

    form_differences: list[str] = []
    if cte_ran and native_ran:
        form_differences = _between_forms(
            list(cte.rows),
            list(native.rows),
            exact_scores=not isinstance(plan.fusion, DistributionBasedScoreFusion),
        )
    return CaseReport(
        name=case.name,
        cte=cte,
        native=native,
        form_differences=tuple(form_differences),
        declared=declared,
    )


class _FromEngine:
    """:func:`verify`'s default dialect: the engine's own (:func:`engine_dialect`)."""


FROM_ENGINE = _FromEngine()


def engine_dialect(engine: Any) -> str | None:
    """The dialect the CTE form is compiled for on ``engine``: its registered kind's
    (:func:`~hotdata_retrieval.engines.registry.kind_of_engine`; ``None`` for an engine that
    runs no SQL), else ``hotdata``.

    >>> engine_dialect(object())
    'hotdata'
    """
    kind = kind_of_engine(engine)
    return HOTDATA_DIALECT if kind is None else kind.dialect


def verify(
    engine: Any,
    cases: Sequence[Case] | None = None,
    *,
    engine_name: str = "engine",
    dialect: str | _FromEngine | None = FROM_ENGINE,
) -> Report:
    """Run every case (default: :func:`~hotdata_retrieval.spec.cases.build_cases`) on
    ``engine`` in both forms and report each difference. Never raises for a failing case.

    Args:
        dialect: what the CTE form is compiled for; default the engine's own
            (:func:`engine_dialect`). ``None`` runs each plan through ``engine.search``.
    """
    chosen = build_cases() if cases is None else list(cases)
    target = engine_dialect(engine) if isinstance(dialect, _FromEngine) else dialect
    return Report(
        engine=engine_name,
        native_function=getattr(engine, "native_hybrid_search", None),
        cases=tuple(verify_case(engine, case, dialect=target) for case in chosen),
        dialect=target,
    )


# -- engines ---------------------------------------------------------------------------------


def _hotdata(database: str | None) -> Any:
    try:
        module = importlib.import_module("hotdata_retrieval.engines.hotdata")
        factory = module.HotdataEngine.from_env
    except (ImportError, AttributeError) as error:
        raise EngineUnavailableError(
            f"engine 'hotdata' is not available: no Hotdata engine adapter ({error})"
        ) from None
    database = database or os.environ.get(HOTDATA_DATABASE_VARIABLE)
    if not database:
        raise EngineUnavailableError(
            f"engine 'hotdata' is not available: set {HOTDATA_DATABASE_VARIABLE} to the "
            "database holding the fixture tables"
        )
    try:
        return factory(database)
    except Exception as error:
        raise EngineUnavailableError(f"engine 'hotdata' is not available: {error}") from None


def engine_names() -> tuple[str, ...]:
    """The engines :func:`open_engine` opens by name: the registered ones (``hotdata`` among
    them)."""
    return tuple(kind.name for kind in engine_kinds())


def open_engine(name: str, database: str | None = None) -> Any:
    """An engine by name: a registered engine (:func:`engine_names`: ``local``, ``sqlite``,
    ``postgres``, ``duckdb``, ``lancedb``) on ``database``, ``hotdata``, or
    ``package.module:factory`` (called with no arguments).

    Args:
        database: where a registered engine's tables live (its registry ``location``: a
            file, a directory, a ``postgresql://`` URL); the local engine defaults to a
            temporary directory, deleted when it is closed; a store needs one (or use
            :func:`opened_engine`). For ``hotdata``, the database (default
            ``$HOTDATA_DATABASE``).

    Raises:
        EngineUnavailableError: unknown name, a store without ``database``, a missing extra
            or adapter, or the engine failed to open.
    """
    if name == "hotdata":
        return _hotdata(database)
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attribute)
            return factory()
        except Exception as error:
            raise EngineUnavailableError(f"engine {name!r} is not available: {error}") from None
    try:
        kind = engine_kind(name)
    except UnknownEngineError:
        raise EngineUnavailableError(
            f"unknown engine {name!r}; use {', '.join(engine_names())} or package.module:factory"
        ) from None
    if database is None and not kind.embedded:
        raise EngineUnavailableError(
            f"engine {name!r} needs a database to load the fixture tables into: {kind.location}"
        )
    try:
        return kind.load_class()() if database is None else kind.open(database)
    except Exception as error:
        raise EngineUnavailableError(f"engine {name!r} is not available: {error}") from None


@contextlib.contextmanager
def opened_engine(name: str, database: str | None = None) -> Iterator[Any]:
    """:func:`open_engine` for a ``with`` block, closed at its end. A store whose location is
    a file or directory (SQLite, DuckDB, LanceDB) and is given no ``database`` gets a
    temporary one, removed at the end; a server's (PostgreSQL) must be given.

    Raises:
        EngineUnavailableError: as :func:`open_engine`.
    """
    with contextlib.ExitStack() as stack:
        if database is None and name in engine_names():
            kind = engine_kind(name)
            if not kind.embedded and kind.location_is_path:
                directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="hdq-spec-"))
                database = str(Path(directory) / f"spec-{kind.name}")
        engine = open_engine(name, database)
        close = getattr(engine, "close", None)
        if callable(close):
            stack.callback(close)
        yield engine
