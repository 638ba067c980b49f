"""Steps a search runs on its statement's rows, after the statement.

The one statement stays the contract with the engine: it ranks, filters and fuses. Some things
users ask of a retrieval engine happen on its rows afterwards: diversity (maximal marginal
relevance over the candidates' vectors) and reranking (a cross-encoder's scores). A plan carries
them as data — frozen attrs nodes, validated at construction, written in the plan document —
in :attr:`~hotdata_retrieval.plan.search.SearchPlan.steps`.

How a plan with steps runs (``docs/plans.md``, "Steps after the statement"):

1. The statement fetches the candidates the steps need (:func:`statement_rows`): the first
   step's candidate count, never fewer than ``limit + offset``. Its ``limit`` is that count,
   its ``offset`` 0; a step reading vectors has them returned (``include_vectors``).
2. The steps run in the stated order of :func:`step_kinds` (diversity, then reranking),
   each on the rows the one before it left.
3. ``offset`` and ``limit`` then cut the page from the last step's rows, so pages are slices
   of one ordering of one candidate list.

Every step class is registered (:func:`register_step`) under its ``kind``, the key a plan
document names it by, with its options' JSON Schema in each field's ``metadata["schema"]``,
as the fusion methods are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs

from hotdata_retrieval._words import counted
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import normalize_identifier
from hotdata_retrieval.plan.values import check_finite_number, check_positive_int

if TYPE_CHECKING:
    from hotdata_retrieval.plan.search import SearchPlan

MAX_STEP_CANDIDATES = 1000
"""The most statement rows a plan's steps may read.

Why 1,000: diversity compares every candidate with every chosen one (up to a million cosine
similarities at the cap, a few tens of milliseconds in NumPy for 384-dimension vectors), and
a reranker runs its model once per candidate; past a thousand, an agent's mistaken value would
cost seconds to minutes for rows no page shows. Elasticsearch bounds its reranking window
likewise (``rank_window_size``), and Qdrant's MMR ``candidates_limit`` is a count of the same
kind."""

DIVERSITY_CANDIDATE_FACTOR = 4
"""Without ``candidates``, diversity reads this many times ``limit + offset`` rows (at most
:data:`MAX_STEP_CANDIDATES`): LlamaIndex's MMR prefetch default (``mmr_prefetch_k``, 4 times
top-k)."""

_KIND = re.compile(r"[a-z][a-z0-9_]*")


@attrs.frozen(kw_only=True)
class PlanStep:
    """What every step shares. A step is abstract: each kind is a subclass with a ``kind``
    (its name in plan documents), an ``order`` (its place among the kinds: steps always run
    in ascending order), its options as attrs fields (each with ``metadata["schema"]``) and
    :func:`register_step`.
    """

    kind: ClassVar[str] = ""
    order: ClassVar[int] = 0

    def input_rows(self, plan: SearchPlan, following: int) -> int:
        """Rows the step reads in ``plan``, when the steps after it (or the page) need
        ``following`` rows from it."""
        return following

    def output_rows(self, given: int) -> int:
        """Rows the step leaves when given ``given``."""
        return given

    def needs_vectors(self) -> bool:
        """Whether the step reads the candidates' vectors (the statement then returns them,
        ``include_vectors``)."""
        return False

    def read_columns(self, plan: SearchPlan) -> tuple[str, ...]:
        """Table columns the step reads from each row, beyond the vectors."""
        return ()

    def check(self, plan: SearchPlan) -> None:
        """Refuse a plan the step cannot run on.

        Raises:
            PlanError: naming the bad value.
        """

    def describe(self, plan: SearchPlan) -> str:
        """One line saying what the step does, for ``hdq explain``."""
        return self.kind


S = TypeVar("S", bound=type[PlanStep])

_STEPS: dict[str, type[PlanStep]] = {}


def register_step(cls: S) -> S:
    """Make a step kind known to plans and plan documents by its ``kind``; returns the class,
    so it decorates one.

    Raises:
        PlanError: ``cls`` is not a :class:`PlanStep` subclass, its ``kind`` is not a
            lower-case name, an option has no ``metadata["schema"]``, or another class has the
            kind or the order.
    """
    if not (isinstance(cls, type) and issubclass(cls, PlanStep)) or cls is PlanStep:
        raise PlanError(f"{cls!r} is not a PlanStep subclass", field="steps", value=cls)
    kind = cls.__dict__.get("kind")
    if not isinstance(kind, str) or _KIND.fullmatch(kind) is None:
        raise PlanError(
            f"{cls.__name__} must set its own kind, a name matching [a-z][a-z0-9_]*; got {kind!r}",
            field="kind",
            value=kind,
        )
    for field in step_options(cls):
        if not isinstance(field.metadata.get("schema"), dict):
            raise PlanError(
                f"{cls.__name__}.{field.name} has no JSON Schema (metadata['schema'])",
                field=field.name,
                value=cls,
            )
    for known in _STEPS.values():
        if known is not cls and (known.kind == kind or known.order == cls.order):
            raise PlanError(
                f"step kind {kind!r} (order {cls.order}) collides with {known.__name__}",
                field="kind",
                value=kind,
            )
    _STEPS[kind] = cls
    return cls


def step_kinds() -> tuple[str, ...]:
    """The registered step kinds, in the order steps run."""
    return tuple(cls.kind for cls in sorted(_STEPS.values(), key=lambda cls: cls.order))


def step_class(kind: str) -> type[PlanStep]:
    """The step class registered under ``kind``.

    Raises:
        PlanError: no step of that kind is registered (naming the known ones).
    """
    try:
        return _STEPS[kind]
    except (KeyError, TypeError):
        known = ", ".join(repr(name) for name in step_kinds())
        raise PlanError(
            f"unknown step kind {kind!r}; known kinds: {known}", field="kind", value=kind
        ) from None


def step_options(cls: type[PlanStep]) -> tuple[attrs.Attribute[Any], ...]:
    """A step class's options: its attrs init fields, in declaration order."""
    return tuple(field for field in attrs.fields(cls) if field.init)


def coerce_steps(values: Iterable[PlanStep] | None) -> tuple[PlanStep, ...]:
    """``values`` as a plan's steps: in the stated order (:func:`step_kinds`), each kind at
    most once.

    Raises:
        PlanError: an item that is no registered step, or a kind given twice.
    """
    if values is None or (values.__class__ is tuple and not values):
        return ()
    if isinstance(values, PlanStep):
        values = (values,)
    steps = list(values)
    seen: set[str] = set()
    for step in steps:
        if not isinstance(step, PlanStep) or type(step) not in _STEPS.values():
            raise PlanError(
                f"a plan step must be one of {', '.join(step_kinds())}, got {step!r}",
                field="steps",
                value=step,
            )
        if step.kind in seen:
            raise PlanError(
                f"the {step.kind} step is given twice; a plan runs each kind once",
                field="steps",
                value=step.kind,
            )
        seen.add(step.kind)
    return tuple(sorted(steps, key=lambda step: step.order))


def _mmr_lambda(value: Any) -> float | int:
    number = check_finite_number(value, label="diversity")
    if not 0 <= number <= 1:
        raise PlanError(
            f"diversity is maximal marginal relevance's lambda, between 0 (diversity only) and "
            f"1 (relevance only); got {value!r}",
            field="diversity",
            value=value,
        )
    return number


def _candidates(value: Any) -> int | None:
    if value is None:
        return None
    number = check_positive_int(value, label="candidates")
    if number > MAX_STEP_CANDIDATES:
        raise PlanError(
            f"candidates must be at most {MAX_STEP_CANDIDATES} (MAX_STEP_CANDIDATES), got "
            f"{value!r}",
            field="candidates",
            value=value,
        )
    return number


def _optional_column(value: Any) -> str | None:
    if value is None:
        return None
    return normalize_identifier(value, label="column")


@register_step
@attrs.frozen(kw_only=True)
class Diversity(PlanStep):
    """Maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998) over the candidates'
    vectors: the first row is the one most similar to the query vector; each next row is the
    one maximising ``mmr_lambda * sim(row, query) - (1 - mmr_lambda) * max sim(row, chosen)``,
    similarity being cosine similarity whatever the branch's metric (as LangChain's
    ``maximal_marginal_relevance``, ``langchain_core.vectorstores.utils``, computes it), ties
    going to the earlier candidate. The rows come out in that order; the page is a slice of
    it.

    Attributes:
        mmr_lambda: 0 to 1: 1 ranks by similarity to the query alone, 0 by difference from
            the rows already chosen alone (the ``diversity=`` option; LangChain's
            ``lambda_mult``).
        candidates: statement rows to choose among, ``limit + offset`` to
            :data:`MAX_STEP_CANDIDATES`; ``None``: :data:`DIVERSITY_CANDIDATE_FACTOR` times
            what the page (or a later step) needs, at most :data:`MAX_STEP_CANDIDATES` and a
            fusion's depth.
        column: the vector column of the nearest-neighbour branch whose query vector and
            rows' vectors are compared; ``None``: the plan's first nearest-neighbour branch.

    Raises:
        PlanError: a lambda outside [0, 1], a candidate count out of range.
    """

    kind: ClassVar[str] = "diversity"
    order: ClassVar[int] = 10

    mmr_lambda: float | int = attrs.field(
        converter=_mmr_lambda,
        metadata={
            "schema": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "Maximal marginal relevance's lambda: 1 ranks by similarity "
                "to the query alone, 0 by difference from the rows already chosen alone.",
            }
        },
    )
    candidates: int | None = attrs.field(
        default=None,
        converter=_candidates,
        metadata={
            "schema": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": MAX_STEP_CANDIDATES,
                "description": "Statement rows to choose among, at least limit + offset; "
                f"null: {DIVERSITY_CANDIDATE_FACTOR} times limit + offset, at most "
                f"{MAX_STEP_CANDIDATES}.",
            }
        },
    )
    column: str | None = attrs.field(
        default=None,
        converter=_optional_column,
        metadata={
            "schema": {
                "type": ["string", "null"],
                "description": "The vector column of the nearest-neighbour branch to compare "
                "with; null: the first nearest-neighbour branch's.",
            }
        },
    )

    def input_rows(self, plan: SearchPlan, following: int) -> int:
        if self.candidates is not None:
            return self.candidates
        bound = MAX_STEP_CANDIDATES if plan.fusion is None else min(MAX_STEP_CANDIDATES, plan.depth)
        return max(following, min(bound, DIVERSITY_CANDIDATE_FACTOR * following))

    def needs_vectors(self) -> bool:
        return True

    def branch(self, plan: SearchPlan) -> Any:
        """The nearest-neighbour branch whose query vector and column the step compares.

        Raises:
            PlanError: the plan has no nearest-neighbour branch (a BM25 or semantic search
                has no query vector on this side), or none on ``column``.
        """
        from hotdata_retrieval.plan.search import NearestNeighborSearch

        nearest = [branch for branch in plan.branches if isinstance(branch, NearestNeighborSearch)]
        if not nearest:
            raise PlanError(
                "diversity compares the candidates' vectors with the query vector, which only "
                "a nearest-neighbour branch carries; search in nearest or hybrid mode (a "
                "semantic search embeds its query inside the engine)",
                field="diversity",
                value=self.mmr_lambda,
            )
        if self.column is None:
            return nearest[0]
        for branch in nearest:
            if branch.column == self.column:
                return branch
        known = ", ".join(repr(branch.column) for branch in nearest)
        raise PlanError(
            f"diversity's column {self.column!r} is searched by no nearest-neighbour branch; "
            f"the plan's: {known}",
            field="column",
            value=self.column,
        )

    def check(self, plan: SearchPlan) -> None:
        branch = self.branch(plan)
        if plan.fusion is not None and not set(branch.table.members) <= set(
            plan.row_source.members
        ):
            raise PlanError(
                f"diversity reads the candidates' vectors from rows_from ('{plan.row_source}'); "
                f"the nearest branch searches '{branch.table}', outside it",
                field="diversity",
                value=self.mmr_lambda,
            )

    def describe(self, plan: SearchPlan) -> str:
        branch = self.branch(plan)
        return (
            f"diversity: maximal marginal relevance, lambda {self.mmr_lambda}, over the "
            f"candidates' {branch.column} vectors (cosine similarity to the query vector)"
        )


def _model(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise PlanError(
            f"rerank names a reranker (a registered name or a model directory), got {value!r}",
            field="rerank",
            value=value,
        )
    if len(value) > 4096:
        raise PlanError("rerank's model name is over 4096 characters", field="rerank")
    return value


def _optional_text(value: Any) -> str | None:
    if value is None:
        return None
    from hotdata_retrieval.plan.values import check_query_text

    return check_query_text(value, label="query")


def _top_n(value: Any) -> int | None:
    if value is None:
        return None
    number = check_positive_int(value, label="top_n")
    if number > MAX_STEP_CANDIDATES:
        raise PlanError(
            f"top_n must be at most {MAX_STEP_CANDIDATES} (MAX_STEP_CANDIDATES), got {value!r}",
            field="top_n",
            value=value,
        )
    return number


@register_step
@attrs.frozen(kw_only=True)
class Rerank(PlanStep):
    """Reranking: a reranker (:class:`~hotdata_retrieval.embed.reranking.Reranker`, such as a
    cross-encoder) scores each of the first ``top_n`` rows, pairing the query text with the
    row's text, and the rows come out by that score, highest first (ties keep their order);
    rows past ``top_n`` are dropped, so the page is a slice of the reranked ``top_n``.

    Attributes:
        model: the reranker: a registered reranker's name
            (:func:`~hotdata_retrieval.embed.reranking.register_reranker`; ``term-overlap``
            is built in) or a directory holding an ONNX cross-encoder.
        top_n: rows scored, ``limit + offset`` to :data:`MAX_STEP_CANDIDATES`; ``None``:
            :data:`DIVERSITY_CANDIDATE_FACTOR` times what the page needs, at most
            :data:`MAX_STEP_CANDIDATES` and a fusion's depth.
        column: the text column paired with the query; ``None``: the first text or semantic
            branch's column.
        query: the query text; ``None``: the first text or semantic branch's.

    Raises:
        PlanError: a bad model name, a ``top_n`` out of range.
    """

    kind: ClassVar[str] = "rerank"
    order: ClassVar[int] = 20

    model: str = attrs.field(
        converter=_model,
        metadata={
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": 4096,
                "description": "The reranker: a registered reranker's name ('term-overlap' is "
                "built in) or a directory holding an ONNX cross-encoder.",
            }
        },
    )
    top_n: int | None = attrs.field(
        default=None,
        converter=_top_n,
        metadata={
            "schema": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": MAX_STEP_CANDIDATES,
                "description": "Rows scored, at least limit + offset; null: "
                f"{DIVERSITY_CANDIDATE_FACTOR} times limit + offset, at most "
                f"{MAX_STEP_CANDIDATES}.",
            }
        },
    )
    column: str | None = attrs.field(
        default=None,
        converter=_optional_column,
        metadata={
            "schema": {
                "type": ["string", "null"],
                "description": "The text column paired with the query; null: the first "
                "text or semantic branch's.",
            }
        },
    )
    query: str | None = attrs.field(
        default=None,
        converter=_optional_text,
        metadata={
            "schema": {
                "type": ["string", "null"],
                "description": "The query text; null: the first text or semantic branch's.",
            }
        },
    )

    def input_rows(self, plan: SearchPlan, following: int) -> int:
        if self.top_n is not None:
            return self.top_n
        bound = MAX_STEP_CANDIDATES if plan.fusion is None else min(MAX_STEP_CANDIDATES, plan.depth)
        return max(following, min(bound, DIVERSITY_CANDIDATE_FACTOR * following))

    def _text_branch(self, plan: SearchPlan) -> Any:
        from hotdata_retrieval.plan.search import Bm25Search, VectorSearch

        return next((b for b in plan.branches if isinstance(b, (Bm25Search, VectorSearch))), None)

    def text_column(self, plan: SearchPlan) -> str:
        """The column paired with the query (see the class).

        Raises:
            PlanError: no ``column`` and no text or semantic branch.
        """
        if self.column is not None:
            return self.column
        branch = self._text_branch(plan)
        if branch is None:
            raise PlanError(
                "rerank pairs the query with each row's text: name the text column (column=), "
                "as a nearest-neighbour search has none",
                field="column",
                value=None,
            )
        return str(branch.column)

    def query_text(self, plan: SearchPlan) -> str:
        """The query text paired with each row (see the class).

        Raises:
            PlanError: no ``query`` and no text or semantic branch.
        """
        if self.query is not None:
            return self.query
        branch = self._text_branch(plan)
        if branch is None:
            raise PlanError(
                "rerank pairs the query text with each row's text: give the query (query=), "
                "as a nearest-neighbour search carries a vector only",
                field="query",
                value=None,
            )
        return str(branch.query_text)

    def read_columns(self, plan: SearchPlan) -> tuple[str, ...]:
        return (self.text_column(plan),)

    def check(self, plan: SearchPlan) -> None:
        self.text_column(plan)
        self.query_text(plan)
        if self.text_column(plan) in plan.vector_columns:
            raise PlanError(
                f"rerank's column {self.text_column(plan)!r} is a vector column; name a text "
                "column",
                field="column",
                value=self.column,
            )

    def describe(self, plan: SearchPlan) -> str:
        return (
            f"rerank: {self.model} scores (query, {self.text_column(plan)}) for each row; rows "
            "by that score, highest first"
        )


MAX_FRAGMENT_SIZE = 2000
"""The longest snippet a highlight step returns, in characters."""

MAX_FRAGMENTS = 20
"""The most snippets a highlight step returns per hit and column."""

MAX_HIGHLIGHT_COLUMNS = 16
"""The most columns one highlight step reads."""


def _highlight_columns(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    columns = tuple(dict.fromkeys(normalize_identifier(c, label="highlight") for c in value))
    if not columns or len(columns) > MAX_HIGHLIGHT_COLUMNS:
        raise PlanError(
            f"highlight names 1 to {MAX_HIGHLIGHT_COLUMNS} columns, got {len(columns)}",
            field="highlight",
            value=list(columns),
        )
    return columns


def _bounded(value: Any, label: str, maximum: int) -> int:
    number = check_positive_int(value, label=label)
    if number > maximum:
        raise PlanError(
            f"{label} must be at most {maximum}, got {value!r}", field=label, value=value
        )
    return number


def _fragment_size(value: Any) -> int:
    return _bounded(value, "fragment_size", MAX_FRAGMENT_SIZE)


def _fragments(value: Any) -> int:
    return _bounded(value, "fragments", MAX_FRAGMENTS)


@register_step
@attrs.frozen(kw_only=True)
class Highlight(PlanStep):
    """Highlights: for each hit and text column, the character offsets of the words matching
    the query and up to ``fragments`` snippets of at most ``fragment_size`` characters around
    them (:mod:`hotdata_retrieval.highlights`: the BM25 side's own analysis, so every engine
    gives the same offsets). The rows keep their order.

    Attributes:
        columns: the text columns; ``None``: the first text or semantic branch's.
        fragment_size: characters per snippet, 1 to :data:`MAX_FRAGMENT_SIZE` (default 150).
        fragments: snippets per hit and column, 1 to :data:`MAX_FRAGMENTS` (default 1).
        query: the query text; ``None``: the first text or semantic branch's.
    """

    kind: ClassVar[str] = "highlight"
    order: ClassVar[int] = 30

    columns: tuple[str, ...] | None = attrs.field(
        default=None,
        converter=_highlight_columns,
        metadata={
            "schema": {
                "anyOf": [
                    {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_HIGHLIGHT_COLUMNS,
                        "items": {"type": "string"},
                    },
                    {"type": "null"},
                ],
                "description": "The text columns; null: the searched one.",
            }
        },
    )
    fragment_size: int = attrs.field(
        default=150,
        converter=_fragment_size,
        metadata={
            "schema": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_FRAGMENT_SIZE,
                "description": "Characters per snippet.",
            }
        },
    )
    fragments: int = attrs.field(
        default=1,
        converter=_fragments,
        metadata={
            "schema": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_FRAGMENTS,
                "description": "Snippets per hit and column.",
            }
        },
    )
    query: str | None = attrs.field(
        default=None,
        converter=_optional_text,
        metadata={
            "schema": {
                "type": ["string", "null"],
                "description": "The query text; null: the first text or semantic branch's.",
            }
        },
    )

    def _pairing(self) -> Rerank:
        return Rerank(model="highlight", query=self.query)

    def text_columns(self, plan: SearchPlan) -> tuple[str, ...]:
        """The columns highlighted (see the class).

        Raises:
            PlanError: no ``columns`` and no text or semantic branch.
        """
        if self.columns is not None:
            return self.columns
        if self._pairing()._text_branch(plan) is None:
            raise PlanError(
                "highlight marks the query's words in each row's text: name the text columns "
                "(columns=, or --text-column for hdq search), as a nearest-neighbour search "
                "has none",
                field="highlight",
                value=None,
            )
        return (self._pairing().text_column(plan),)

    def query_text(self, plan: SearchPlan) -> str:
        """The query text matched (see the class).

        Raises:
            PlanError: no ``query`` and no text or semantic branch.
        """
        if self.query is None and self._pairing()._text_branch(plan) is None:
            raise PlanError(
                "highlight marks the query text's words in each row's text: give the query "
                "(query=), as a nearest-neighbour search carries a vector only",
                field="query",
                value=None,
            )
        return self._pairing().query_text(plan)

    def read_columns(self, plan: SearchPlan) -> tuple[str, ...]:
        return self.text_columns(plan)

    def check(self, plan: SearchPlan) -> None:
        self.query_text(plan)
        for column in self.text_columns(plan):
            if column in plan.vector_columns:
                raise PlanError(
                    f"highlight's column {column!r} is a vector column; name a text column",
                    field="highlight",
                    value=column,
                )

    def describe(self, plan: SearchPlan) -> str:
        return (
            f"highlight: matched words' offsets and {self.fragments} snippet(s) of "
            f"{self.fragment_size} characters in {', '.join(self.text_columns(plan))}"
        )


def steps_from_options(
    *,
    diversity: float | None = None,
    candidates: int | None = None,
    rerank: Any = None,
    top_n: int | None = None,
    query: str | None = None,
    highlight: Any = None,
    fragment_size: int | None = None,
    fragments: int | None = None,
    highlight_query: str | None = None,
) -> tuple[PlanStep, ...]:
    """The steps a caller's options ask for: the one reading of ``diversity=``,
    ``candidates=``, ``rerank=`` and ``top_n=`` every door shares (a request, the chain, the
    CLI, the adapters).

    Args:
        diversity: maximal marginal relevance's lambda for a :class:`Diversity` step;
            ``None``: none.
        candidates: rows the diversity step chooses among.
        rerank: a :class:`Rerank` step's reranker: a registered name, a model directory,
            or a :class:`~hotdata_retrieval.embed.reranking.Reranker` (registered under its
            name); ``None``: none.
        top_n: rows the rerank step scores.
        query: the query text the rerank and highlight steps read (default: the plan's).
        highlight: ``True`` (the searched column) or a list of text columns for a
            :class:`Highlight` step; ``None`` or ``False``: none.
        fragment_size: characters per highlight snippet.
        fragments: highlight snippets per hit and column.
        highlight_query: the text whose words the highlight step marks, when it is not
            ``query`` (a search of several queries marks the words of every one).

    Raises:
        PlanError: a value out of range, or ``candidates`` or ``top_n`` without the step
            that reads it.
    """
    steps: list[PlanStep] = []
    if rerank is not None:
        if not isinstance(rerank, str):
            from hotdata_retrieval.embed.reranking import register_reranker

            rerank = register_reranker(rerank)
        steps.append(Rerank(model=rerank, top_n=top_n, query=query))
    elif top_n is not None:
        raise PlanError(
            "top_n is the number of rows the reranker scores; give rerank too",
            field="top_n",
            value=top_n,
        )
    if highlight is not None and highlight is not False:
        sizes = {
            name: value
            for name, value in (("fragment_size", fragment_size), ("fragments", fragments))
            if value is not None
        }
        columns = None if highlight is True else highlight
        marked = query if highlight_query is None else highlight_query
        steps.append(Highlight(columns=columns, query=marked, **sizes))
    elif fragment_size is not None or fragments is not None:
        raise PlanError(
            "fragment_size and fragments shape highlights; give highlight too",
            field="fragment_size" if fragment_size is not None else "fragments",
            value=fragment_size if fragment_size is not None else fragments,
        )
    if diversity is not None:
        steps.append(Diversity(mmr_lambda=diversity, candidates=candidates))
    elif candidates is not None:
        raise PlanError(
            "candidates is the number of rows diversity chooses among; give diversity too",
            field="candidates",
            value=candidates,
        )
    return coerce_steps(steps)


def step_inputs(plan: SearchPlan) -> tuple[int, ...]:
    """Rows each of ``plan``'s steps reads, in step order (working back from the page's
    ``limit + offset``: a step without its own count reads what the steps after it need)."""
    following = plan.limit + plan.offset
    needs = []
    for step in reversed(plan.steps):
        following = step.input_rows(plan, following)
        needs.append(following)
    return tuple(reversed(needs))


def statement_rows(plan: SearchPlan) -> int:
    """Rows the statement of ``plan`` fetches: ``limit + offset`` without steps, else what
    the first step reads."""
    inputs = step_inputs(plan)
    return inputs[0] if inputs else plan.limit + plan.offset


def check_steps(plan: SearchPlan) -> None:
    """Refuse a plan whose steps cannot run: each step's own checks, a step leaving fewer
    rows than the next step or the page needs, candidates past a fusion's depth.

    Raises:
        PlanError: naming the step and the bad value.
    """
    if not plan.steps:
        return
    if plan.group_by is not None:
        raise PlanError(
            f"the {plan.steps[0].kind} step orders rows, and group_by pages groups of them; "
            "a plan takes one or the other",
            field="group_by",
            value=plan.group_by,
        )
    page_end = plan.limit + plan.offset
    inputs = step_inputs(plan)
    for index, (step, rows) in enumerate(zip(plan.steps, inputs)):
        step.check(plan)
        left = step.output_rows(rows)
        if index + 1 < len(plan.steps):
            after, needed = plan.steps[index + 1].kind, inputs[index + 1]
            if left < needed:
                raise PlanError(
                    f"the {after} step reads {counted(needed, 'row')}, but the {step.kind} "
                    "step before "
                    f"it leaves {left}; give the {step.kind} step at least {needed} "
                    "candidates",
                    field="candidates",
                    value=rows,
                )
        elif left < page_end:
            raise PlanError(
                f"limit + offset = {page_end} reaches past the {left} rows the {step.kind} "
                f"step leaves; pages are slices of the steps' rows: give it at least "
                f"{page_end} candidates",
                field="candidates",
                value=rows,
            )
    rows = inputs[0]
    if rows > MAX_STEP_CANDIDATES:
        raise PlanError(
            f"the steps would read {rows} statement rows (limit + offset = {page_end}); at "
            f"most {MAX_STEP_CANDIDATES} (MAX_STEP_CANDIDATES)",
            field="limit",
            value=plan.limit,
        )
    if plan.fusion is not None and plan.depth < rows:
        raise PlanError(
            f"the steps read {rows} candidates, past the fusion's depth {plan.depth}; pass "
            f"depth >= {rows}",
            field="depth",
            value=plan.depth,
        )


def statement_plan(plan: SearchPlan) -> SearchPlan:
    """The plan of the statement that fetches ``plan``'s candidates: ``plan`` itself without
    steps; else without its steps, its ``limit`` :func:`statement_rows`, its ``offset`` 0,
    with the vectors (``include_vectors``) and the columns the steps read."""
    if not plan.steps:
        return plan
    extra = [column for step in plan.steps for column in step.read_columns(plan)]
    changes: dict[str, Any] = {
        "steps": (),
        "limit": statement_rows(plan),
        "offset": 0,
        "include_vectors": plan.include_vectors or any(s.needs_vectors() for s in plan.steps),
    }
    projection = plan.projection
    missing = [column for column in extra if column not in projection]
    if missing:
        changes["columns"] = tuple(dict.fromkeys((*projection, *missing)))
    return attrs.evolve(plan, **changes)


def describe_steps(plan: SearchPlan) -> list[str]:
    """Lines saying what runs after ``plan``'s statement, for ``hdq explain`` (none without
    steps): the candidates fetched, each step, the page."""
    if not plan.steps:
        return []
    lines = [f"statement: fetches {statement_rows(plan)} candidates (limit, offset 0)"]
    for number, (step, rows) in enumerate(zip(plan.steps, step_inputs(plan)), start=1):
        lines.append(f"step {number}: {step.describe(plan)}; reads {counted(rows, 'row')}")
    lines.append(f"page: offset {plan.offset}, limit {plan.limit}, of the steps' rows")
    return lines
