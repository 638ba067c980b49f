"""Score formulas: a fusion's final score as a typed expression over its fused score and the
row's numeric columns, with the decay functions Elasticsearch and Qdrant define.

A :class:`ScoreFormula` is a sum of :class:`FormulaTerm`; each term is a finite weight times
the product of its factors, and a factor is one of

- :class:`FusedScore`: the fusion's score of the row (RRF, min-max, DBSF);
- :class:`ColumnValue`: a numeric column of the row, read as Float64 (a NULL reads as the
  factor's ``missing`` value, default 0);
- :class:`Decay`: a decay function of a numeric column's distance from an ``origin``.

So ``score + 0.2 * exp_decay(price)`` is two terms, ``[FormulaTerm(factors=[FusedScore()]),
FormulaTerm(weight=0.2, factors=[Decay(...)])]``, and a multiplicative boost ``score *
gauss_decay(age)`` one term of two factors. The final score orders the rows, ``min_score``
applies to it, pages are slices of its ranking, and ties on it are broken by the plan's
tie-breakers, then the key. Each term is reported with every hit (its value, in term order),
so the terms add up to the final score.

**Decay** (``distance = max(0, |value - origin| - offset)``):

- ``exp``: ``decay ** (distance / scale)``;
- ``gauss``: ``decay ** ((distance / scale) ** 2)``;
- ``linear``: ``max(0, 1 - (1 - decay) * distance / scale)``.

Each is 1 within ``offset`` of the origin and exactly ``decay`` at ``offset + scale``. These
are Elasticsearch's ``function_score`` decay functions (``exp``: ``exp(λ · distance)`` with ``λ
= ln(decay) / scale``; ``gauss``: ``exp(-distance² / (2 · sigma²))`` with ``sigma² = -scale² / (2 ·
ln(decay))``; ``linear``: ``max(0, (s - distance) / s)`` with ``s = scale / (1 - decay)``;
https://www.elastic.co/guide/en/elasticsearch/reference/current/query-dsl-function-score-query.html#function-decay),
and with ``offset`` 0 Qdrant's ``exp_decay``, ``gauss_decay`` and ``lin_decay`` with
``midpoint = decay`` (https://qdrant.tech/documentation/concepts/hybrid-queries/#score-boosting).
``decay`` lies strictly between 0 and 1, ``scale`` is > 0, ``offset`` >= 0. A NULL value
decays to the factor's ``missing`` value (default 0).

The compiled SQL writes ``exp(c · distance)`` and ``exp(c · distance²)`` with ``c =
ln(decay) / scale`` (or ``/ scale²``) computed here, so a dialect needs ``EXP``, ``ABS`` and
``CASE`` only. This module imports no SQL library; :func:`formula_terms` is the reference the
engines that fuse in the library compute, and the tests' oracle.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import normalize_identifier

MAX_FORMULA_TERMS = 16
"""The most terms a formula sums (each is a select item of the statement)."""
MAX_TERM_FACTORS = 8
"""The most factors one term multiplies."""


def _finite(value: Any, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PlanError(
            f"{label} must be a finite number, got {value!r}", field="formula", value=value
        )
    return float(value)


def _decay(value: Any) -> float:
    return _finite(value, "decay")


def _missing(value: Any) -> float:
    return _finite(value, "missing")


def _offset(value: Any) -> float:
    return _finite(value, "offset")


def _origin(value: Any) -> float:
    return _finite(value, "origin")


def _scale(value: Any) -> float:
    return _finite(value, "scale")


def _weight(value: Any) -> float:
    return _finite(value, "weight")


def _column(value: Any) -> str:
    if not isinstance(value, str):
        raise PlanError(f"a formula column must be a column name, got {value!r}", field="formula")
    return normalize_identifier(value, label="formula column")


class DecayFunction(str, enum.Enum):
    """The shape of a :class:`Decay` (Elasticsearch's names; Qdrant's ``exp_decay``,
    ``gauss_decay``, ``lin_decay``)."""

    EXP = "exp"
    GAUSS = "gauss"
    LINEAR = "linear"

    @classmethod
    def parse(cls, value: Any) -> DecayFunction:
        """``value`` as a decay function (``"exp"``, ``"gauss"``, ``"linear"``).

        Raises:
            PlanError: anything else, naming the known ones.
        """
        if isinstance(value, DecayFunction):
            return value
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(repr(member.value) for member in cls)
            raise PlanError(
                f"decay function must be one of {known}, got {value!r}",
                field="formula",
                value=value,
            ) from None


def _decay_function(value: Any) -> DecayFunction:
    return DecayFunction.parse(value)


@attrs.frozen(kw_only=True)
class FusedScore:
    """The fusion's score of the row (higher is better)."""

    visit_name: ClassVar[str] = "fused_score"
    kind: ClassVar[str] = "score"


@attrs.frozen(kw_only=True)
class ColumnValue:
    """A numeric column of the row, as Float64.

    Attributes:
        column: the column (a number column of the table).
        missing: the value a NULL reads as (default 0).
    """

    visit_name: ClassVar[str] = "column_value"
    kind: ClassVar[str] = "column"
    column: str = attrs.field(converter=_column)
    missing: float = attrs.field(default=0.0, converter=_missing)


@attrs.frozen(kw_only=True)
class Decay:
    """A decay function of a numeric column's distance from ``origin`` (module docstring).

    Attributes:
        function: ``exp``, ``gauss`` or ``linear``.
        column: the numeric column.
        origin: the value scoring 1.
        scale: the distance past ``offset`` at which the value is ``decay`` (> 0).
        offset: the distance within which the value stays 1 (>= 0, default 0).
        decay: the value at ``offset + scale``, strictly between 0 and 1 (default 0.5).
        missing: the value of a row whose column is NULL (default 0).

    Raises:
        PlanError: a value out of those ranges.
    """

    visit_name: ClassVar[str] = "decay"
    kind: ClassVar[str] = "decay"
    function: DecayFunction = attrs.field(converter=_decay_function)
    column: str = attrs.field(converter=_column)
    origin: float = attrs.field(converter=_origin)
    scale: float = attrs.field(converter=_scale)
    offset: float = attrs.field(default=0.0, converter=_offset)
    decay: float = attrs.field(default=0.5, converter=_decay)
    missing: float = attrs.field(default=0.0, converter=_missing)

    def __attrs_post_init__(self) -> None:
        if self.scale <= 0:
            raise PlanError(f"a decay's scale must be > 0, got {self.scale!r}", field="formula")
        if self.offset < 0:
            raise PlanError(f"a decay's offset must be >= 0, got {self.offset!r}", field="formula")
        if not 0 < self.decay < 1:
            raise PlanError(
                f"a decay's decay must lie strictly between 0 and 1, got {self.decay!r}",
                field="formula",
            )
        try:
            rate = self.rate
        except ZeroDivisionError:
            rate = math.inf
        if not math.isfinite(rate):
            raise PlanError(
                f"a decay's scale {self.scale!r} is too small: its {self.function.value} "
                "decay's rate, the constant the SQL multiplies each distance by, is not a "
                "finite number; pass a larger scale",
                field="formula",
                value=self.scale,
            )

    @property
    def rate(self) -> float:
        """The constant of the exponent: ``ln(decay) / scale`` (``exp``) or ``ln(decay) /
        scale²`` (``gauss``); ``(1 - decay) / scale`` for ``linear``."""
        if self.function is DecayFunction.LINEAR:
            return (1.0 - self.decay) / self.scale
        if self.function is DecayFunction.EXP:
            return math.log(self.decay) / self.scale
        return math.log(self.decay) / (self.scale * self.scale)

    def value(self, raw: float | None) -> float:
        """The decay of one value (``None``: NULL), in Float64, as the SQL computes it."""
        if raw is None:
            return self.missing
        distance = abs(float(raw) - self.origin) - self.offset
        if distance < 0:
            distance = 0.0
        if self.function is DecayFunction.LINEAR:
            linear = 1.0 - self.rate * distance
            return linear if linear > 0 else 0.0
        if self.function is DecayFunction.EXP:
            return math.exp(self.rate * distance)
        return math.exp(self.rate * (distance * distance))


Factor = FusedScore | ColumnValue | Decay
_FACTORS = (FusedScore, ColumnValue, Decay)


def _factors(values: Iterable[Any]) -> tuple[Factor, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise PlanError("a term's factors must be a list", field="formula", value=values)
    factors = tuple(values)
    if not 1 <= len(factors) <= MAX_TERM_FACTORS:
        raise PlanError(
            f"a formula term multiplies 1 to {MAX_TERM_FACTORS} factors, got {len(factors)}",
            field="formula",
        )
    for factor in factors:
        if not isinstance(factor, _FACTORS):
            raise PlanError(
                f"a formula factor is a FusedScore, ColumnValue or Decay, got {factor!r}",
                field="formula",
            )
    return factors


@attrs.frozen(kw_only=True)
class FormulaTerm:
    """``weight * factor * ...``.

    Attributes:
        factors: one to :data:`MAX_TERM_FACTORS` factors.
        weight: a finite number (default 1).
    """

    factors: tuple[Factor, ...] = attrs.field(converter=_factors)
    weight: float = attrs.field(default=1.0, converter=_weight)


def _terms(values: Iterable[Any]) -> tuple[FormulaTerm, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise PlanError("a formula's terms must be a list", field="formula", value=values)
    terms = tuple(values)
    if not 1 <= len(terms) <= MAX_FORMULA_TERMS:
        raise PlanError(
            f"a formula sums 1 to {MAX_FORMULA_TERMS} terms, got {len(terms)}", field="formula"
        )
    for term in terms:
        if not isinstance(term, FormulaTerm):
            raise PlanError(f"a formula term is a FormulaTerm, got {term!r}", field="formula")
    return terms


@attrs.frozen(kw_only=True)
class ScoreFormula:
    """A fusion's final score: the sum of its terms, in order (module docstring).

    Attributes:
        terms: one to :data:`MAX_FORMULA_TERMS` terms.

    Raises:
        PlanError: no term, too many, or a bad factor.
    """

    visit_name: ClassVar[str] = "score_formula"
    terms: tuple[FormulaTerm, ...] = attrs.field(converter=_terms)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the formula reads, once each, in order."""
        return tuple(
            dict.fromkeys(
                factor.column
                for term in self.terms
                for factor in term.factors
                if isinstance(factor, (ColumnValue, Decay))
            )
        )


def describe_formula(formula: ScoreFormula) -> str:
    """The formula in one line, for people (``hdq explain``).

    >>> describe_formula(ScoreFormula(terms=[FormulaTerm(factors=[FusedScore()]),
    ...     FormulaTerm(weight=0.2, factors=[Decay(function="exp", column="age", origin=0,
    ...     scale=7)])]))
    '1.0 * score + 0.2 * exp_decay(age, origin 0.0, scale 7.0, offset 0.0, decay 0.5)'
    """
    parts = []
    for term in formula.terms:
        factors = [repr(term.weight)]
        for factor in term.factors:
            if isinstance(factor, FusedScore):
                factors.append("score")
            elif isinstance(factor, ColumnValue):
                factors.append(factor.column)
            else:
                factors.append(
                    f"{factor.function.value}_decay({factor.column}, origin {factor.origin!r}, "
                    f"scale {factor.scale!r}, offset {factor.offset!r}, decay {factor.decay!r})"
                )
        parts.append(" * ".join(factors))
    return " + ".join(parts)


def formula_terms(formula: ScoreFormula, fused_score: float, row: Mapping[str, Any]) -> list[float]:
    """Each term's value for one row, in term order, computed in Float64 as the SQL computes
    it (the weight first, then each factor multiplied in order); their sum, added in order,
    is the final score.

    Args:
        formula: the plan's formula.
        fused_score: the fusion's score of the row.
        row: the row's values of :attr:`ScoreFormula.columns` (``None``: NULL).
    """
    values: list[float] = []
    for term in formula.terms:
        value = term.weight
        for factor in term.factors:
            if isinstance(factor, FusedScore):
                value = value * fused_score
            elif isinstance(factor, ColumnValue):
                raw = row.get(factor.column)
                value = value * (factor.missing if raw is None else float(raw))
            else:
                value = value * factor.value(row.get(factor.column))
        values.append(value)
    return values


def formula_score(terms: Iterable[float]) -> float:
    """The final score of a row's term values: their sum, added in term order."""
    total: float | None = None
    for value in terms:
        total = value if total is None else total + value
    assert total is not None
    return total


def term_columns(formula: ScoreFormula) -> tuple[str, ...]:
    """The result columns of the terms: ``formula_term_1``, ``formula_term_2``, ..."""
    return tuple(f"formula_term_{index}" for index in range(1, len(formula.terms) + 1))


FUSED_SCORE_COLUMN = "fused_score"
"""The result column of the fusion's own score in a plan with a formula (``score`` being the
formula's)."""


# -- the JSON form ---------------------------------------------------------------------------

_NUMBER = {"type": "number"}
_DECAY_KEYS = ("column", "origin", "scale", "offset", "decay", "missing")

FORMULA_JSON_SCHEMA: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_FORMULA_TERMS,
    "description": "A fusion's final score: the sum of these terms, each weight times the "
    'product of its factors. A factor is "score" (the fused score), {"column": name, '
    '"missing": value of a NULL} (a numeric column) or {"exp" | "gauss" | "linear": '
    '{"column", "origin", "scale", "offset", "decay", "missing"}} (a decay of a '
    "numeric column, as Elasticsearch and Qdrant define it).",
    "items": {
        "type": "object",
        "properties": {
            "weight": {**_NUMBER, "default": 1},
            "factors": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_TERM_FACTORS,
                "items": {
                    "anyOf": [
                        {"const": "score"},
                        {
                            "type": "object",
                            "properties": {
                                "column": {"type": "string"},
                                "missing": {**_NUMBER, "default": 0},
                            },
                            "required": ["column"],
                            "additionalProperties": False,
                        },
                        *(
                            {
                                "type": "object",
                                "properties": {
                                    function.value: {
                                        "type": "object",
                                        "properties": {
                                            "column": {"type": "string"},
                                            "origin": _NUMBER,
                                            "scale": {**_NUMBER, "exclusiveMinimum": 0},
                                            "offset": {**_NUMBER, "minimum": 0, "default": 0},
                                            "decay": {
                                                **_NUMBER,
                                                "exclusiveMinimum": 0,
                                                "exclusiveMaximum": 1,
                                                "default": 0.5,
                                            },
                                            "missing": {**_NUMBER, "default": 0},
                                        },
                                        "required": ["column", "origin", "scale"],
                                        "additionalProperties": False,
                                    }
                                },
                                "required": [function.value],
                                "additionalProperties": False,
                            }
                            for function in DecayFunction
                        ),
                    ]
                },
            },
        },
        "required": ["factors"],
        "additionalProperties": False,
    },
}
"""The JSON Schema of a formula in a plan document (``"formula"``)."""


def formula_to_document(formula: ScoreFormula) -> list[dict[str, Any]]:
    """``formula`` in its JSON form (:data:`FORMULA_JSON_SCHEMA`), every key written.

    >>> formula_to_document(ScoreFormula(terms=[FormulaTerm(factors=[FusedScore()])]))
    [{'weight': 1.0, 'factors': ['score']}]
    """
    terms = []
    for term in formula.terms:
        factors: list[Any] = []
        for factor in term.factors:
            if isinstance(factor, FusedScore):
                factors.append("score")
            elif isinstance(factor, ColumnValue):
                factors.append({"column": factor.column, "missing": factor.missing})
            else:
                factors.append(
                    {factor.function.value: {name: getattr(factor, name) for name in _DECAY_KEYS}}
                )
        terms.append({"weight": term.weight, "factors": factors})
    return terms


def _fail(message: str, value: Any) -> PlanError:
    return PlanError(message, field="formula", value=value)


def formula_from_document(value: Any) -> ScoreFormula:
    """The formula a JSON form describes (:data:`FORMULA_JSON_SCHEMA`).

    Raises:
        PlanError: a form that does not read, naming the part at fault.
    """
    if not isinstance(value, list):
        raise _fail(f"formula must be an array of terms, got {value!r}", value)
    terms = []
    for index, item in enumerate(value):
        where = f"formula[{index}]"
        if not isinstance(item, dict) or not set(item) <= {"weight", "factors"}:
            raise _fail(f"{where} must be an object with 'factors' and an optional 'weight'", item)
        if "factors" not in item or not isinstance(item["factors"], list):
            raise _fail(f"{where} needs 'factors', an array", item)
        factors: list[Factor] = []
        for position, raw in enumerate(item["factors"]):
            at = f"{where}.factors[{position}]"
            if raw == "score":
                factors.append(FusedScore())
            elif isinstance(raw, dict) and "column" in raw:
                if not set(raw) <= {"column", "missing"}:
                    raise _fail(f"{at}: a column factor takes 'column' and 'missing'", raw)
                factors.append(ColumnValue(**raw))
            elif isinstance(raw, dict) and len(raw) == 1:
                ((function, options),) = raw.items()
                DecayFunction.parse(function)
                if not isinstance(options, dict) or not set(options) <= set(_DECAY_KEYS):
                    raise _fail(
                        f"{at}: a decay takes {', '.join(_DECAY_KEYS)}, got {options!r}", raw
                    )
                try:
                    factors.append(Decay(function=function, **options))
                except TypeError:
                    raise _fail(f"{at}: a decay needs column, origin and scale", raw) from None
            else:
                raise _fail(
                    f'{at} must be "score", {{"column": ...}} or '
                    f'{{"exp" | "gauss" | "linear": {{...}}}}, got {raw!r}',
                    raw,
                )
        terms.append(FormulaTerm(factors=factors, weight=item.get("weight", 1.0)))
    return ScoreFormula(terms=terms)
