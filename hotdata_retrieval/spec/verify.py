"""Run the conformance cases on an engine, in both forms, and report every difference.

For each case the fixture table is loaded, then the plan runs twice:

- **cte**: compiled for the ``hotdata`` dialect (the CTE form every Hotdata engine runs);
- **native**: compiled for a dialect whose profile names the engine's native function (the
  engine's ``native_hybrid_search`` attribute), which emits one ``hybrid_search(...)`` call.
  An engine without the attribute reports the native form as not available.

Each form's rows are compared with the case's expected rows (the CTE form with its own
expected rows where the case declares that it cannot follow the spec), then the two forms are
compared with each other row for row, column for column. A case passes when every form that
ran matched its expectations and the forms differ only where the case declares it.

An engine needs ``sql(text)`` (returning an Arrow table, or anything with ``to_pylist()``, or a
sequence of row mappings). With ``load_table(name, data, key_column=..., text_columns=...)``
taking an Arrow table, as :class:`~hotdata_retrieval.engines.local.LocalEngine` has, each
case's table is loaded first; without it, the engine must already hold every case's table
(``spec_<case>``: the case file's rows, a BM25 index on ``body``, a cosine vector index on
``embedding``).
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.compile.compiler import native_hybrid_misfit
from hotdata_retrieval.errors import EngineUnavailableError as EngineUnavailableError
from hotdata_retrieval.plan.search import DistributionBasedScoreFusion, SearchPlan
from hotdata_retrieval.spec.cases import DIVERGENCES, Case, build_cases
from hotdata_retrieval.spec.native import native_profile

PASS = "pass"
FAIL = "fail"
NOT_AVAILABLE = "not available"
NOT_APPLICABLE = "not applicable"

HOTDATA_DATABASE_VARIABLE = "HOTDATA_DATABASE"
"""The database ``--engine hotdata`` verifies against (credentials: ``HOTDATA_API_KEY``...)."""

_SCORE_TOLERANCE = 1e-12
_DISTANCE_TOLERANCE = 1e-6


@attrs.frozen(kw_only=True)
class FormResult:
    """How one form of one case ran.

    Attributes:
        form: ``cte`` or ``native``.
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
        cte: the CTE form's result.
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
    def passed(self) -> bool:
        if self.error is not None or self.cte.status != PASS or self.native.status == FAIL:
            return False
        return not self.form_differences or bool(self.declared)

    @property
    def forms_agree(self) -> bool:
        """Both forms ran and returned the same rows."""
        return self.cte.status == PASS and self.native.status == PASS and not self.form_differences

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
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
    """The outcome of a verification run."""

    engine: str
    native_function: str | None
    cases: tuple[CaseReport, ...]

    @property
    def passed(self) -> bool:
        return all(case.passed for case in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "native_hybrid_search": self.native_function,
            "passed": self.passed,
            "cases": [case.to_dict() for case in self.cases],
        }

    def text(self) -> str:
        """The report as lines of text, one block per case, then a summary line."""
        native = self.native_function or "none (only the CTE form runs)"
        lines = [f"hybrid_search conformance: engine {self.engine}, native function {native}"]
        width = max((len(case.name) for case in self.cases), default=0)
        for case in self.cases:
            verdict = "PASS" if case.passed else "FAIL"
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
        failed = sum(not case.passed for case in self.cases)
        agree = sum(case.forms_agree for case in self.cases)
        declared = sum(bool(case.form_differences and case.declared) for case in self.cases)
        lines.append(
            f"{len(self.cases)} cases: {len(self.cases) - failed} passed, {failed} failed; "
            f"forms agree row for row on {agree}, differ as declared on {declared}"
        )
        return "\n".join(lines)


def _summary(result: FormResult) -> str:
    if result.status == PASS:
        against = f" ({result.note})" if result.note else ""
        return f"{result.form}: {len(result.rows)} rows ok{against}"
    if result.status == FAIL:
        return f"{result.form}: {len(result.differences)} differences"
    return f"{result.form}: {result.status} ({result.note})"


# -- running ---------------------------------------------------------------------------------


def corpus_table(case: Case) -> Any:
    """The case's fixture rows as an Arrow table (needs ``pyarrow``)."""
    import pyarrow as pa

    types = {"int64": pa.int64(), "string": pa.string(), "list<float32>": pa.list_(pa.float32())}
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


def _close(got: Any, want: float, tolerance: float) -> bool:
    return isinstance(got, (int, float)) and math.isclose(
        got, want, rel_tol=tolerance, abs_tol=tolerance * 1e-3
    )


def _against(
    plan: SearchPlan, expected: Mapping[str, Any], rows: list[dict[str, Any]]
) -> list[str]:
    """Each way ``rows`` differ from ``expected["rows"]``."""
    differences: list[str] = []
    wanted = expected["rows"]
    if len(rows) != len(wanted):
        differences.append(f"{len(rows)} rows, expected {len(wanted)}")
    key = plan.key_column
    assert key is not None  # spec cases are fusions, whose plans have a key
    for position, (row, want) in enumerate(zip(rows, wanted), start=1):
        got_key = row.get(key)
        if got_key != want["key"]:
            differences.append(f"row {position}: key {got_key!r}, expected {want['key']!r}")
            continue
        where = f"row {position} (key {got_key!r})"
        if not _close(row.get("score"), want["score"], _SCORE_TOLERANCE):
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
            elif not _close(got, value, _DISTANCE_TOLERANCE):
                differences.append(f"{where}: {name} distance {got!r}, expected {value!r}")
        for column, value in want["columns"].items():
            if row.get(column) != value:
                differences.append(f"{where}: {column} {row.get(column)!r}, expected {value!r}")
    for position, row in enumerate(rows[len(wanted) :], start=len(wanted) + 1):
        differences.append(f"row {position}: unexpected key {row.get(key)!r}")
    return differences


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
        differences.append(f"{len(cte)} rows (cte) vs {len(native)} rows (native)")
    for position, (left, right) in enumerate(zip(cte, native), start=1):
        unequal = [
            f"{column} {left.get(column)!r} vs {right.get(column)!r}"
            for column in (*left, *(column for column in right if column not in left))
            if not same(column, left.get(column), right.get(column))
        ]
        if unequal:
            differences.append(f"row {position} (cte vs native): " + "; ".join(unequal))
    return differences


def verify_case(engine: Any, case: Case) -> CaseReport:
    """Load ``case``'s table into ``engine`` and run both forms."""
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

    cte_sql = to_sql(plan, "hotdata")
    cte_rows, failure = _run(engine, cte_sql)
    ran = {"cte": failure is None, "native": False}
    cte_expected = case.cte_expected if declared and case.cte_expected else case.expected
    cte_differences = [failure] if failure else _against(plan, cte_expected, cte_rows)
    cte = FormResult(
        form="cte",
        status=FAIL if cte_differences else PASS,
        sql=cte_sql,
        rows=tuple(cte_rows),
        differences=tuple(cte_differences),
        note="its declared expectations" if declared else None,
    )

    function = getattr(engine, "native_hybrid_search", None)
    misfit = native_hybrid_misfit(plan)
    if function is None:
        native = FormResult(
            form="native", status=NOT_AVAILABLE, note="the engine declares no native_hybrid_search"
        )
    elif misfit is not None:
        native = FormResult(form="native", status=NOT_APPLICABLE, note=misfit)
    else:
        native_sql = to_sql(plan, native_profile(function))
        if f"{function}(" not in native_sql:
            native_rows: list[dict[str, Any]] = []
            native_differences = [f"the compiled statement does not call {function}"]
        else:
            native_rows, failure = _run(engine, native_sql)
            ran["native"] = failure is None
            native_differences = (
                [failure] if failure else _against(plan, case.expected, native_rows)
            )
        native = FormResult(
            form="native",
            status=FAIL if native_differences else PASS,
            sql=native_sql,
            rows=tuple(native_rows),
            differences=tuple(native_differences),
        )

    form_differences: list[str] = []
    if ran["cte"] and ran["native"]:
        form_differences = _between_forms(
            cte_rows,
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


def verify(
    engine: Any, cases: Sequence[Case] | None = None, *, engine_name: str = "engine"
) -> Report:
    """Run every case (default: :func:`~hotdata_retrieval.spec.cases.build_cases`) on
    ``engine`` in both forms and report each difference. Never raises for a failing case."""
    chosen = build_cases() if cases is None else list(cases)
    return Report(
        engine=engine_name,
        native_function=getattr(engine, "native_hybrid_search", None),
        cases=tuple(verify_case(engine, case) for case in chosen),
    )


# -- engines ---------------------------------------------------------------------------------


def _local() -> Any:
    from hotdata_retrieval.engines.local import LocalEngine

    return LocalEngine()


def _hotdata() -> Any:
    try:
        module = importlib.import_module("hotdata_retrieval.engines.hotdata")
        factory = module.HotdataEngine.from_env
    except (ImportError, AttributeError) as error:
        raise EngineUnavailableError(
            f"engine 'hotdata' is not available: no Hotdata engine adapter ({error})"
        ) from None
    database = os.environ.get(HOTDATA_DATABASE_VARIABLE)
    if not database:
        raise EngineUnavailableError(
            f"engine 'hotdata' is not available: set {HOTDATA_DATABASE_VARIABLE} to the "
            "database holding the fixture tables"
        )
    try:
        return factory(database)
    except Exception as error:
        raise EngineUnavailableError(f"engine 'hotdata' is not available: {error}") from None


_ENGINES: dict[str, Callable[[], Any]] = {"local": _local, "hotdata": _hotdata}


def open_engine(name: str) -> Any:
    """An engine by name: ``local``, ``hotdata``, or ``package.module:factory`` (called with no
    arguments).

    Raises:
        EngineUnavailableError: unknown name, missing adapter, or the engine failed to open.
    """
    if name in _ENGINES:
        return _ENGINES[name]()
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attribute)
            return factory()
        except Exception as error:
            raise EngineUnavailableError(f"engine {name!r} is not available: {error}") from None
    raise EngineUnavailableError(
        f"unknown engine {name!r}; use local, hotdata or package.module:factory"
    )
