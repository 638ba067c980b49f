"""Tuning a hybrid search's fusion from judged queries (``hdq tune``).

Given queries and relevance judgments (qrels) in the BEIR layout, and a table of any engine
(the engine contract, :class:`~hotdata_retrieval.engines.base.Engine`), :func:`collect_runs`
runs each query's branches once (BM25 and nearest-neighbour search of the query embedded by
the table's model, ``depth`` candidates each, exactly as a fused statement's branches rank
them), and :func:`evaluate` fuses those rankings under every setting of a grid
(:func:`default_grid`: fusion method, rank constant or ``alpha``, weights) with the reference
fusion (:mod:`hotdata_retrieval.fusion`, which the compiled SQL equals: see
``tests/test_score_fusion.py``), scores each with nDCG@10 and recall@100 (ir-measures, the
TREC measures), and gives each setting's mean with a 95% confidence interval and its paired
difference from the default (reciprocal rank fusion, rank constant 60, equal weights), both by
bootstrap over queries (percentile intervals; NumPy, seeded). :func:`choose` then keeps the
default unless a setting wins by :data:`SELECTION_RULE`: its paired interval on the measure
chosen by is above zero and no other measure's is below zero, on every judged query and in
k-fold cross-validation of the rule itself. The best of dozens of settings by mean alone is
chosen partly for its luck on the judged queries: on a 113-query half of a collection, the
setting with the highest mean nDCG@10 (+0.003, interval -0.011 ... +0.018) was worse than the
default on the other half on both measures.

Running the branches once and fusing in Python is what makes a grid of dozens of settings
cheap: the engine's work does not grow with the grid.

NumPy and ir-measures are imported when used (the ``local`` and ``tune`` extras), so this
module imports with the core install.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval._words import counted
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.errors import TuningError as TuningError
from hotdata_retrieval.fusion import FusedHit, rank_branch, reference_fusion
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    DEFAULT_FUSION_METHOD,
    DEFAULT_RANK_CONSTANT,
    Branch,
    Fusion,
    SearchPlan,
    fusion_class,
    fusion_methods,
    fusion_options,
    make_fusion,
)

if TYPE_CHECKING:
    from hotdata_retrieval.engines.base import Engine

MEASURES = ("nDCG@10", "R@100")
"""What each setting is scored by, in ir-measures' names (``nDCG@10`` chooses the best)."""

RUN_LENGTH = 100
"""Fused results kept per query: recall@100 needs 100."""

DEFAULT_RANK_CONSTANTS = (1, 2, 5, 10, 20, 40, 60, 100)
"""Reciprocal rank fusion's rank constants in the default grid: Qdrant's default is 2, the
paper's 60; Qdrant's tuning article finds 2-5 best with about one relevant document per query
and 20-61 with many."""

DEFAULT_VECTOR_SHARES = (0.3, 0.4, 0.5, 0.6, 0.7)
"""The vector branch's share of the weight in the default grid's reciprocal rank fusions
(weights ``1 - share`` and ``share``, text first)."""

DEFAULT_ALPHAS = tuple(round(step / 10, 1) for step in range(11))
"""``alpha`` (the vector branch's weight) in the default grid's score-normalized fusions:
0, 0.1, ..., 1."""


# -- inputs ----------------------------------------------------------------------------------


def _beir_file(path: Path, name: str) -> Path:
    if path.is_dir():
        candidate = path / name
        if not candidate.is_file():
            raise TuningError(f"{str(path)!r} is a directory without {name}")
        return candidate
    return path


def load_queries(path: str | Path) -> dict[str, str]:
    """Query id → text, from a BEIR ``queries.jsonl`` (one ``{"_id", "text"}`` object a
    line), or from a BEIR dataset directory holding one.

    Raises:
        TuningError: the file cannot be read, a line is not such an object, or an id repeats.
    """
    source = _beir_file(Path(path), "queries.jsonl")
    try:
        text = source.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise TuningError(f"cannot read queries {str(source)!r}: {error}") from None
    return parse_queries(text, str(source))


def parse_queries(text: str, source: str = "<queries>") -> dict[str, str]:
    """Query id → text, from the text of a BEIR ``queries.jsonl`` (a byte order mark is
    ignored); ``source`` names it in errors (``source:line: ...``).

    Raises:
        TuningError: a line is not a ``{"_id", "text"}`` object, or an id repeats.
    """
    queries: dict[str, str] = {}
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise TuningError(f"{source}:{number}: not JSON: {error}") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise TuningError(f'{source}:{number}: expected {{"_id": ..., "text": "..."}}')
        identifier = record.get("_id")
        if isinstance(identifier, bool) or not isinstance(identifier, (str, int)):
            raise TuningError(f"{source}:{number}: _id must be a string, got {identifier!r}")
        key = str(identifier)
        if key in queries:
            raise TuningError(f"{source}:{number}: query id {key!r} appears twice")
        queries[key] = record["text"]
    return queries


def load_qrels(path: str | Path, *, split: str = "train") -> tuple[dict[str, dict[str, int]], Path]:
    """Relevance judgments, query id → document id → grade, from a BEIR qrels TSV
    (``query-id  corpus-id  score``, an optional header line), and the file read.

    ``path`` may be the TSV itself, a BEIR ``qrels`` directory or a BEIR dataset directory:
    then ``<split>.tsv`` is read (``train`` by default: tune on the train split, report on
    the test split).

    Raises:
        TuningError: no such split, an unreadable file, a line without three fields, a grade
            that is not an integer, or a pair judged twice.
    """
    source = Path(path)
    if source.is_dir():
        directory = source / "qrels" if (source / "qrels").is_dir() else source
        source = directory / f"{split}.tsv"
        if not source.is_file():
            splits = sorted(file.stem for file in directory.glob("*.tsv"))
            raise TuningError(
                f"no {split!r} split in {str(directory)!r}; splits: {', '.join(splits) or 'none'}"
            )
    try:
        with source.open(encoding="utf-8-sig", newline="") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise TuningError(f"cannot read qrels {str(source)!r}: {error}") from None
    return parse_qrels(text, str(source)), source


def parse_qrels(text: str, source: str = "<qrels>") -> dict[str, dict[str, int]]:
    """Relevance judgments, query id → document id → grade, from the text of a BEIR qrels
    TSV (``query-id  corpus-id  score``, an optional header line; a byte order mark is
    ignored); ``source`` names it in errors (``source:line: ...``).

    Raises:
        TuningError: a line without three fields, a grade that is not an integer, or a pair
            judged twice.
    """
    qrels: dict[str, dict[str, int]] = {}
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), delimiter="\t"))
    for number, row in enumerate(rows, start=1):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 3:
            raise TuningError(f"{source}:{number}: expected query-id, corpus-id, score")
        query, document, grade = (field.strip() for field in row)
        if number == 1 and not grade.lstrip("-").isdigit():
            continue  # the header line
        try:
            value = int(grade)
        except ValueError:
            raise TuningError(f"{source}:{number}: score {grade!r} is not an integer") from None
        judged = qrels.setdefault(query, {})
        if document in judged:
            raise TuningError(f"{source}:{number}: {query!r}, {document!r} is judged twice")
        judged[document] = value
    return qrels


@attrs.frozen
class Coverage:
    """How the judgments meet the queries and the table they are measured on.

    Attributes:
        queries_without_text: query ids the qrels judge that the queries file lacks (never
            run, so never measured), sorted.
        unknown_documents: judged ``(query id, document id)`` pairs of run queries whose
            document is no key of the table: relevant ones count against every setting, since
            no search can return them.
        relevant_unknown: how many of those are judged relevant (grade > 0).
        keys_unchecked: why the judged documents were not checked against the table's keys
            (the engine runs no SQL to read them with), or ``None``: they were.
    """

    queries_without_text: tuple[str, ...]
    unknown_documents: tuple[tuple[str, str], ...]
    relevant_unknown: int
    keys_unchecked: str | None = None

    def notes(self) -> list[str]:
        """One line per problem, for people (empty when the judgments fit)."""
        lines = []
        missing = len(self.queries_without_text)
        if missing:
            first = self.queries_without_text[0]
            lines.append(
                f"{counted(missing, 'judged query', 'judged queries')} "
                f"{'is' if missing == 1 else 'are'} not in the queries file (first: {first!r}) "
                "and not measured"
            )
        unknown = len(self.unknown_documents)
        if unknown:
            query, document = self.unknown_documents[0]
            lines.append(
                f"{counted(unknown, 'judgment names a document', 'judgments name documents')} "
                f"the table lacks (first: {document!r} for query {query!r}); "
                f"{self.relevant_unknown} of them relevant, which no setting can find"
            )
        if self.keys_unchecked is not None:
            lines.append(
                f"the judged documents were not checked against the table's keys "
                f"({self.keys_unchecked}): a relevant document the table lacks would count "
                "against every setting unnoticed"
            )
        return lines


def judgment_coverage(
    qrels: Mapping[str, Mapping[str, int]],
    queries: Mapping[str, str],
    keys: Iterable[Any] | None,
    *,
    unchecked: str = "the table's keys were not read",
) -> Coverage:
    """Which judgments cannot be measured as meant: judged queries missing from ``queries``,
    and judged documents of the run queries missing from ``keys`` (the table's key values,
    compared as text, as runs name documents). ``keys`` ``None``: the documents are not
    checked, and ``unchecked`` says why (:attr:`Coverage.keys_unchecked`)."""
    known = None if keys is None else {str(key) for key in keys}
    unknown = tuple(
        (query_id, document)
        for query_id in sorted(qrels)
        if query_id in queries and known is not None
        for document in sorted(qrels[query_id])
        if document not in known
    )
    return Coverage(
        queries_without_text=tuple(sorted(set(qrels) - set(queries))),
        unknown_documents=unknown,
        relevant_unknown=sum(1 for query, document in unknown if qrels[query][document] > 0),
        keys_unchecked=unchecked if known is None else None,
    )


def table_keys(engine: Engine, table: TableName, key: str, dialect: str | None) -> list[Any] | None:
    """Every value of ``table``'s key column ``key``, read with one query through the engine
    contract's ``sql``: ``SELECT key FROM table`` compiled for ``dialect`` (the engine's, as
    the engine registry records it), the table named as SQL on the engine names it (its
    ``sql_name``, an optional capability of the SQL stores, else the full three-part name).
    ``None`` for an engine that runs no SQL (``dialect`` ``None``: LanceDB, turbopuffer),
    whose keys no read but a search reaches.

    Raises:
        EngineError: the engine refused the query (no such table or column).
    """
    if dialect is None:
        return None
    from hotdata_retrieval.compile import get_dialect
    from hotdata_retrieval.compile.statements import column_query

    sql_name = getattr(engine, "sql_name", None)
    name = str(sql_name(table)) if callable(sql_name) else str(table)
    values: list[Any] = (
        engine.sql(column_query(get_dialect(dialect), name, key)).column(0).to_pylist()
    )
    return values


# -- branch runs -----------------------------------------------------------------------------


@attrs.frozen
class BranchRun:
    """One branch's ranking for one query: keys best first (cut to the depth), their
    competition ranks and raw scores."""

    keys: tuple[Any, ...]
    ranks: tuple[int, ...]
    scores: tuple[float, ...]


@attrs.frozen
class QueryRuns:
    """A query's branches (as the router built them) and each one's ranking."""

    query_id: str
    branches: tuple[Branch, ...]
    runs: tuple[BranchRun, ...]


def collect_runs(
    engine: Engine,
    table: str | TableName,
    queries: Mapping[str, str],
    *,
    depth: int = DEFAULT_DEPTH,
    text_column: str | None = None,
    embed_query: Callable[[str], Sequence[float]] | None = None,
    advance: Callable[[], None] | None = None,
) -> list[QueryRuns]:
    """Run each query's hybrid branches on ``engine``, once.

    The engine's router builds the query's hybrid plan (``engine.plan_search(...,
    mode="hybrid")``: BM25 over ``text_column`` and a nearest-neighbour search of the query
    embedded by ``embed_query``, by default the engine's embedder for the table, which must
    be the table's model); each branch then runs alone (``engine.search``), ``depth`` rows
    ordered as the fused statement's branch orders them, and is ranked as its ranked CTE
    ranks it (:func:`~hotdata_retrieval.fusion.rank_branch`).

    Raises:
        PlanError: the table cannot be searched by hybrid search.
        EngineError: no such table.
    """
    collected: list[QueryRuns] = []
    for query_id, text in queries.items():
        plan = engine.plan_search(
            table, text, mode="hybrid", text_column=text_column, embed_query=embed_query
        )
        key = plan.key_column
        assert key is not None  # a hybrid plan is a fusion, which joins on the key
        runs = []
        for branch in plan.branches:
            alone = SearchPlan(source=branch, columns=[key], key_column=key, limit=depth)
            result = engine.search(alone)
            candidates = [
                (hit.key, float(hit.ranking_value))
                for hit in result
                if hit.ranking_value is not None
            ]
            keys, ranks = rank_branch(
                candidates, higher_is_better=branch.higher_is_better, depth=depth
            )
            raw = dict(candidates)
            runs.append(BranchRun(tuple(keys), tuple(ranks), tuple(raw[k] for k in keys)))
        collected.append(QueryRuns(query_id, plan.branches, tuple(runs)))
        if advance is not None:
            advance()
    return collected


# -- settings --------------------------------------------------------------------------------


@attrs.frozen
class FusionSetting:
    """One point of the grid: a fusion method and its options (depth aside)."""

    method: str
    options: tuple[tuple[str, Any], ...] = ()

    def fusion(self, branches: Sequence[Branch], depth: int) -> Fusion:
        """The setting's fusion over ``branches``.

        Raises:
            PlanError: an option the method refuses.
        """
        return make_fusion(self.method, branches, depth=depth, **dict(self.options))

    @property
    def label(self) -> str:
        """``rrf rank_constant=60 weights=1,1``."""
        parts = [self.method]
        for name, value in self.options:
            shown = ",".join(repr(v) for v in value) if isinstance(value, tuple) else repr(value)
            parts.append(f"{name}={shown}")
        return " ".join(parts)

    def document(self) -> dict[str, Any]:
        """``{"method": ..., <option>: <value>}`` (tuples as lists)."""
        return {
            "method": self.method,
            **{
                name: list(value) if isinstance(value, tuple) else value
                for name, value in self.options
            },
        }


DEFAULT_SETTING = FusionSetting(
    DEFAULT_FUSION_METHOD,
    (("rank_constant", DEFAULT_RANK_CONSTANT), ("weights", (1, 1))),
)
"""What a hybrid search does when nothing is tuned: reciprocal rank fusion, rank constant 60,
equal weights. Every other setting is compared with it."""


def default_grid(
    methods: Iterable[str] | None = None,
    *,
    rank_constants: Sequence[float] = DEFAULT_RANK_CONSTANTS,
    vector_shares: Sequence[float] = DEFAULT_VECTOR_SHARES,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
) -> list[FusionSetting]:
    """The settings :func:`evaluate` tries, for ``methods`` (default: every registered fusion
    method), read from each method's options (:func:`~hotdata_retrieval.plan.search.
    fusion_options`): a method that takes ``alpha`` (``min_max``, ``dbsf``) tries every
    ``alpha``; one that takes ``rank_constant`` (``rrf``) every rank constant with every
    vector share (weights ``1 - share, share``, text first; the share 0.5 as weights
    ``1, 1``); any other, its defaults. :data:`DEFAULT_SETTING` comes first.

    Raises:
        TuningError: an unknown method.
    """
    settings = [DEFAULT_SETTING]
    for method in fusion_methods() if methods is None else methods:
        try:
            options = {field.name for field in fusion_options(fusion_class(method))}
        except PlanError:
            known = ", ".join(fusion_methods())
            raise TuningError(f"unknown fusion method {method!r}; tune {known}") from None
        candidates: list[FusionSetting]
        if "alpha" in options:
            candidates = [FusionSetting(method, (("alpha", alpha),)) for alpha in alphas]
        elif "rank_constant" in options:
            candidates = []
            for constant in rank_constants:
                for share in vector_shares:
                    weights = (1, 1) if share == 0.5 else (round(1 - share, 10), share)
                    chosen: tuple[tuple[str, Any], ...] = (("rank_constant", constant),)
                    if "weights" in options:
                        chosen += (("weights", weights),)
                    candidates.append(FusionSetting(method, chosen))
        else:
            candidates = [FusionSetting(method, ())]
        settings.extend(setting for setting in candidates if setting not in settings)
    return settings


# -- evaluation ------------------------------------------------------------------------------


@attrs.frozen
class Estimate:
    """A mean over queries and its 95% bootstrap percentile interval."""

    mean: float
    low: float
    high: float

    def document(self) -> dict[str, float]:
        return {"mean": self.mean, "low": self.low, "high": self.high}


@attrs.frozen
class SettingResult:
    """One setting's scores: per measure, the mean and the paired difference from the
    default (each with its interval), and the per-query values."""

    setting: FusionSetting
    means: Mapping[str, Estimate]
    differences: Mapping[str, Estimate]
    per_query: Mapping[str, tuple[float, ...]]


def fused_run(
    runs: Sequence[QueryRuns], setting: FusionSetting, depth: int
) -> dict[str, dict[str, float]]:
    """The setting's fused ranking of every query, as an ir-measures run: query id → document
    id → a score that decreases with the fused position (so the measures read exactly the
    fused order, ties broken by key as the search breaks them)."""
    run: dict[str, dict[str, float]] = {}
    for query in runs:
        fusion = setting.fusion(query.branches, depth)
        hits: list[FusedHit] = reference_fusion(
            fusion,
            [branch.keys for branch in query.runs],
            ranks=[branch.ranks for branch in query.runs],
            scores=[branch.scores for branch in query.runs],
            limit=RUN_LENGTH,
        )
        run[query.query_id] = {
            str(hit.key): float(RUN_LENGTH - position) for position, hit in enumerate(hits)
        }
    return run


def measure_run(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    query_ids: Sequence[str],
    measures: Sequence[str] = MEASURES,
) -> dict[str, Any]:
    """Per-query values of ``measures`` (ir-measures names) for ``run`` (query id →
    document id → score, higher first), as NumPy arrays in ``query_ids`` order; a query the
    run misses scores 0."""
    import ir_measures
    import numpy as np

    judgments = [
        ir_measures.Qrel(query_id, document, grade)
        for query_id in query_ids
        for document, grade in qrels[query_id].items()
    ]
    parsed = [ir_measures.parse_measure(name) for name in measures]
    position = {query_id: index for index, query_id in enumerate(query_ids)}
    values = {name: np.zeros(len(query_ids)) for name in measures}
    names = {str(measure): name for measure, name in zip(parsed, measures)}
    for metric in ir_measures.iter_calc(parsed, judgments, run):
        if metric.query_id in position:
            values[names[str(metric.measure)]][position[metric.query_id]] = metric.value
    return values


def bootstrap_samples(queries: int, *, resamples: int = 1000, seed: int = 0) -> Any:
    """``resamples`` by ``queries`` indices drawn with replacement (NumPy, seeded): the same
    resamples for every setting make the differences paired."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, queries, size=(resamples, queries))


def estimate(values: Any, samples: Any) -> Estimate:
    """The mean of per-query ``values`` and its 95% percentile interval over ``samples``
    (:func:`bootstrap_samples`)."""
    import numpy as np

    means = values[samples].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Estimate(float(values.mean()), float(low), float(high))


def evaluate(
    runs: Sequence[QueryRuns],
    qrels: Mapping[str, Mapping[str, int]],
    settings: Sequence[FusionSetting],
    *,
    depth: int = DEFAULT_DEPTH,
    resamples: int = 1000,
    seed: int = 0,
    measures: Sequence[str] = MEASURES,
    advance: Callable[[], None] | None = None,
) -> list[SettingResult]:
    """Score every setting on the judged queries of ``runs``.

    Each setting's fused run is measured per query with ir-measures (``measures``, by default
    :data:`MEASURES`; a query with nothing retrieved scores 0). Means get 95% percentile
    intervals from ``resamples`` bootstrap resamples of the queries, and each setting's
    per-query differences from the first setting (the default) the same resamples: a paired
    bootstrap.

    Raises:
        TuningError: no query of ``runs`` has judgments, none of their judgments is relevant
            (score > 0), or ``settings`` is empty.
    """
    judged = [query for query in runs if query.query_id in qrels]
    if not judged or not settings:
        raise TuningError("no judged query to tune on: the queries and the qrels share no id")
    if not any(value > 0 for query in judged for value in qrels[query.query_id].values()):
        raise TuningError(
            "no judged query has a relevant document (score > 0): every setting would score 0"
        )
    query_ids = [query.query_id for query in judged]
    tables: list[dict[str, Any]] = []
    for setting in settings:
        tables.append(measure_run(fused_run(judged, setting, depth), qrels, query_ids, measures))
        if advance is not None:
            advance()
    return summarize(settings, tables, resamples=resamples, seed=seed)


def summarize(
    settings: Sequence[FusionSetting],
    tables: Sequence[Mapping[str, Sequence[float]]],
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> list[SettingResult]:
    """Each setting's results from its per-query values: ``tables[i]`` maps a measure's name
    to setting ``i``'s value on every query (the same queries, in the same order, for every
    setting; ``settings[0]`` is the default). Means get 95% percentile intervals from
    ``resamples`` bootstrap resamples of the queries (``seed``), and each setting's per-query
    differences from the default the same resamples (a paired bootstrap).

    Raises:
        TuningError: no setting, no query, or tables of different measures or lengths.
    """
    import numpy as np

    if not settings or len(tables) != len(settings):
        raise TuningError("expected one table of per-query values for each setting")
    measures = list(tables[0])
    count = len(tables[0][measures[0]]) if measures else 0
    if count == 0 or any(
        set(table) != set(measures) or any(len(table[name]) != count for name in measures)
        for table in tables
    ):
        raise TuningError("every setting needs a value of every measure for every query")
    arrays = [{name: np.asarray(table[name], dtype=float) for name in measures} for table in tables]
    samples = bootstrap_samples(count, resamples=resamples, seed=seed)
    baseline = arrays[0]
    return [
        SettingResult(
            setting=setting,
            means={name: estimate(values[name], samples) for name in measures},
            differences={
                name: estimate(values[name] - baseline[name], samples) for name in measures
            },
            per_query={name: tuple(float(v) for v in values[name]) for name in measures},
        )
        for setting, values in zip(settings, arrays)
    ]


# -- choosing ---------------------------------------------------------------------------------

DEFAULT_FOLDS = 5
"""Folds of the cross-validation that estimates what tuning gains on queries it has not seen."""

FEW_QUERIES = 50
"""Below this many judged queries the tuner warns (:func:`few_queries_warning`)."""

SELECTION_RULE = (
    "a setting replaces the default only when its paired {chosen_by} interval against the "
    "default is above zero and the paired interval of every other measure is not below zero "
    "(its upper bound is at least zero), both on every judged query and in {folds}-fold "
    "cross-validation (the setting the same rule picks on the other folds, measured on the "
    "held-out fold)"
)
"""The rule :func:`choose` applies, as it is recorded in the written fragment."""


def passes(differences: Mapping[str, Estimate], chosen_by: str) -> bool:
    """Whether paired differences from the default clear the bar of :data:`SELECTION_RULE`:
    the ``chosen_by`` interval's lower bound above zero, every other interval's upper bound
    at or above zero (no evidence of a loss)."""
    return all(
        estimate.low > 0 if name == chosen_by else estimate.high >= 0
        for name, estimate in differences.items()
    )


def _bootstrap_counts(queries: int, resamples: int, seed: int) -> Any:
    """How often each query is drawn in each of :func:`bootstrap_samples`' resamples
    (``resamples`` x ``queries``), so a resampled mean is one matrix product."""
    import numpy as np

    samples = bootstrap_samples(queries, resamples=resamples, seed=seed)
    offsets = np.arange(resamples)[:, None] * queries
    counts = np.bincount((samples + offsets).ravel(), minlength=resamples * queries)
    return counts.reshape(resamples, queries)


def _pick(
    values: Mapping[str, Any], queries: Any, chosen_by: str, resamples: int, seed: int
) -> int:
    """The index (into the settings, row 0 the default) of the setting the rule picks on the
    queries ``queries`` (indices): the highest mean ``chosen_by`` among settings whose paired
    differences from the default pass (:func:`passes`), else 0."""
    import numpy as np

    counts = _bootstrap_counts(len(queries), resamples, seed)
    verdict = None
    for name, table in values.items():
        differences = table[:, queries] - table[0, queries]
        resampled = differences @ counts.T / len(queries)  # settings x resamples
        low, high = np.percentile(resampled, [2.5, 97.5], axis=1)
        ok = low > 0 if name == chosen_by else high >= 0
        verdict = ok if verdict is None else verdict & ok
    assert verdict is not None
    verdict[0] = False
    if not verdict.any():
        return 0
    means = values[chosen_by][:, queries].mean(axis=1)
    return int(np.argmax(np.where(verdict, means, -np.inf)))


@attrs.frozen
class Choice:
    """What :func:`choose` decided, with the evidence.

    Attributes:
        chosen: the setting written: ``candidate`` when it replaces the default, else the
            default.
        default: the default's result.
        candidate: the setting the rule picks on every judged query (the default when no
            setting passes).
        highest_mean: the setting with the highest mean ``chosen_by`` (what a tuner by mean
            alone would write).
        chosen_by: the measure settings are ranked by (an ir-measures name of
            :data:`MEASURES`).
        folds: the cross-validation's folds.
        cross_validated: per measure, the paired difference from the default of choosing by
            the rule: each held-out fold scored with the setting the rule picks on the other
            folds (mean and 95% bootstrap interval over every judged query).
        fold_choices: the setting picked on each fold's training queries, fold by fold.
        reason: one sentence saying why ``chosen`` was written.
    """

    chosen: SettingResult
    default: SettingResult
    candidate: SettingResult
    highest_mean: SettingResult
    chosen_by: str
    folds: int
    cross_validated: Mapping[str, Estimate]
    fold_choices: tuple[FusionSetting, ...]
    reason: str

    @property
    def replaces_default(self) -> bool:
        """Whether a setting other than the default is written."""
        return self.chosen is not self.default


def choose(
    results: Sequence[SettingResult],
    *,
    chosen_by: str = MEASURES[0],
    folds: int = DEFAULT_FOLDS,
    resamples: int = 1000,
    seed: int = 0,
) -> Choice:
    """Choose between the default (``results[0]``, as :func:`evaluate` returns it) and the
    other settings by :data:`SELECTION_RULE`, so a setting that wins on the mean by chance —
    the best of dozens on a few queries — keeps the default.

    The candidate is the setting with the highest mean ``chosen_by`` among those whose paired
    intervals on every judged query pass (:func:`passes`). It replaces the default only when
    the rule also gains out of sample: the queries are split into ``folds`` seeded random
    folds; on each fold the setting the rule picks on the other folds (the default when none
    passes there) is scored against the default, and those held-out paired differences (one
    per query) must pass the same test (``resamples`` bootstrap resamples, ``seed``).

    Raises:
        TuningError: ``chosen_by`` is not one of the measures of ``results``, ``folds`` is
            below 2 or above the number of judged queries, or ``results`` is empty.
    """
    import numpy as np

    if not results:
        raise TuningError("no setting to choose from")
    default = results[0]
    measures = list(default.per_query)
    if chosen_by not in measures:
        raise TuningError(f"cannot choose by {chosen_by!r}; measured: {', '.join(measures)}")
    count = len(default.per_query[chosen_by])
    if folds < 2:
        raise TuningError(f"cross-validation needs at least 2 folds, got {folds}")
    if folds > count:
        raise TuningError(
            f"{folds} folds need at least {folds} judged queries, got {count}; choose fewer folds"
        )
    values = {name: np.array([result.per_query[name] for result in results]) for name in measures}
    everything = np.arange(count)
    passing = [result for result in results[1:] if passes(result.differences, chosen_by)]
    candidate = max(passing, key=lambda result: result.means[chosen_by].mean, default=default)
    order = np.random.default_rng(seed).permutation(count)
    held_out = {name: np.zeros(count) for name in measures}
    fold_choices = []
    for fold in range(folds):
        test = np.sort(order[fold::folds])
        train = np.setdiff1d(everything, test)
        picked = _pick(values, train, chosen_by, resamples, seed)
        fold_choices.append(results[picked].setting)
        for name in measures:
            held_out[name][test] = values[name][picked, test] - values[name][0, test]
    samples = bootstrap_samples(count, resamples=resamples, seed=seed)
    cross_validated = {name: estimate(held_out[name], samples) for name in measures}
    highest_mean = max(results, key=lambda result: result.means[chosen_by].mean)
    interval = cross_validated[chosen_by]
    if candidate is default:
        reason = (
            f"no setting has a paired {chosen_by} interval above zero against the default "
            "without another measure's interval below zero: the default is kept"
        )
        chosen = default
    elif not passes(cross_validated, chosen_by):
        reason = (
            f"{candidate.setting.label} passes on every judged query, but choosing by the "
            f"rule does not gain in {folds}-fold cross-validation ({chosen_by} "
            f"{interval.mean:+.4f} [{interval.low:+.4f}, {interval.high:+.4f}]"
            + "".join(
                f", {name} {cross_validated[name].mean:+.4f} [{cross_validated[name].low:+.4f}, "
                f"{cross_validated[name].high:+.4f}]"
                for name in measures
                if name != chosen_by
            )
            + "): the default is kept"
        )
        chosen = default
    else:
        reason = (
            f"{candidate.setting.label} replaces the default: its paired {chosen_by} interval "
            f"is above zero on every judged query and in {folds}-fold cross-validation "
            f"({interval.mean:+.4f} [{interval.low:+.4f}, {interval.high:+.4f}]), and no "
            "other measure's interval is below zero"
        )
        chosen = candidate
    return Choice(
        chosen=chosen,
        default=default,
        candidate=candidate,
        highest_mean=highest_mean,
        chosen_by=chosen_by,
        folds=folds,
        cross_validated=cross_validated,
        fold_choices=tuple(fold_choices),
        reason=reason,
    )


def few_queries_warning(queries: int, chosen_by: str = MEASURES[0]) -> str | None:
    """A warning for fewer than :data:`FEW_QUERIES` judged queries, saying what such a set
    can and cannot conclude; ``None`` for enough queries."""
    if queries >= FEW_QUERIES:
        return None
    return (
        f"only {queries} judged {'query' if queries == 1 else 'queries'} (fewer than "
        f"{FEW_QUERIES}): the intervals are wide, so only a large gain on most queries can "
        f"replace the default; keeping the default means these queries cannot tell the "
        f"settings apart, not that the default is best, and a chosen setting's {chosen_by} "
        "gain is known only roughly (see its interval)"
    )


def _evidence(result: SettingResult, default: SettingResult) -> dict[str, Any]:
    """Per measure, the setting's mean with its interval, the default's mean and the paired
    difference with its interval."""
    return {
        name: {
            **result.means[name].document(),
            "default": default.means[name].mean,
            "difference": result.differences[name].document(),
        }
        for name in result.means
    }


def plan_fragment(choice: Choice, *, depth: int, tuning: Mapping[str, Any]) -> dict[str, Any]:
    """``{"fusion": {...}, "tuning": {...}}``: the chosen setting as a plan's ``"fusion"``
    (with ``depth``), which ``hdq explain`` and ``hdq search`` read with ``--fusion-file``,
    and the evidence it was chosen on: ``tuning`` (what was tuned on) with the rule, the
    reason, the measures of the chosen setting on every judged query (``"measures"``), the
    cross-validated differences, each fold's pick, and the candidate and highest-mean
    settings with their measures."""
    default = choice.default
    return {
        "fusion": {**choice.chosen.setting.document(), "depth": depth},
        "tuning": {
            **tuning,
            "chosen_by": choice.chosen_by,
            "rule": SELECTION_RULE.format(chosen_by=choice.chosen_by, folds=choice.folds),
            "replaces_default": choice.replaces_default,
            "reason": choice.reason,
            "measures": _evidence(choice.chosen, default),
            "cross_validation": {
                "folds": choice.folds,
                "difference": {
                    name: value.document() for name, value in choice.cross_validated.items()
                },
                "fold_choices": [setting.document() for setting in choice.fold_choices],
            },
            "candidate": {
                "fusion": choice.candidate.setting.document(),
                "measures": _evidence(choice.candidate, default),
            },
            "highest_mean": {
                "fusion": choice.highest_mean.setting.document(),
                "measures": _evidence(choice.highest_mean, default),
            },
        },
    }
