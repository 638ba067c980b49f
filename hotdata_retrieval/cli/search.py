"""``hdq search``: build a plan for a table of the local database, run it, print the hits."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import click
from rich.console import Console
from rich.table import Table

from hotdata_retrieval._console import make_console
from hotdata_retrieval._json import as_text, jsonable
from hotdata_retrieval._words import counted
from hotdata_retrieval.cli._engines import (
    engine_option,
    no_embedder_message,
    open_engine,
    query_embedder_option,
    table_embedder,
)
from hotdata_retrieval.cli._errors import CommandError, in_option_terms
from hotdata_retrieval.cli._input import text_argument
from hotdata_retrieval.cli._local import database_option, reports_errors
from hotdata_retrieval.cli._options import (
    FUSION_FLAGS,
    VECTORS_ABBREVIATED_NOTE,
    full_vectors_option,
    fusion_options,
    fusion_settings,
    parse_names,
)
from hotdata_retrieval.engines.results import SearchResult
from hotdata_retrieval.errors import HotdataRetrievalError, PlanError
from hotdata_retrieval.plan.filters import And, Predicate
from hotdata_retrieval.plan.search import SearchPlan
from hotdata_retrieval.plan.steps import describe_steps
from hotdata_retrieval.routing import (
    FusionChoice,
    SearchMode,
    SearchRequest,
    TableIndexes,
    semantic_search_mode,
)

OPTION_NAMES: dict[str, str] = {
    "query_text": "QUERY",
    "text_column": "--text-column",
    "columns": "--columns",
    "filter": "--filter",
    "limit": "-k/--limit",
    "offset": "--offset",
    "group_by": "--group-by",
    "group_size": "--group-size",
    "after": "--after",
    "facets": "--facet",
    **FUSION_FLAGS,
    "mode": "--mode",
    "queries": "--query",
    "formula": "--formula",
    "diversity": "--diversity",
    "candidates": "--candidates",
    "rerank": "--rerank",
    "top_n": "--top-n",
    "highlight": "--highlight",
    "fragment_size": "--fragment-size",
    "fragments": "--fragments",
}
"""A plan field (:attr:`PlanError.field <hotdata_retrieval.errors.PlanError.field>`) → the
option or argument of ``hdq search`` that sets it, for its error messages."""

_PREVIEW_CHARACTERS = 90
_COMMENT_WIDTH = 200
"""Columns of the hits table written as SQL comments (``--explain`` into a file or pipe)."""


def _filter(texts: Sequence[str]) -> Predicate | None:
    from hotdata_retrieval.compile.filter_text import parse_filter

    predicates = [parse_filter(text) for text in texts]
    if not predicates:
        return None
    return predicates[0] if len(predicates) == 1 else And(operands=predicates)


def _preview(value: Any) -> str:
    text = " ".join(as_text(value).split())
    if len(text) > _PREVIEW_CHARACTERS:
        return text[: _PREVIEW_CHARACTERS - 1] + "…"
    return text


_NARROW_TERMINAL = 60
"""Below this width the score column's header drops its explanation (``score``)."""

_NARROWEST_TEXT = 8
"""The fewest characters a text column of the hits table is cut to (its ellipsis included)."""


def _fitted(natural: Sequence[int], budget: int) -> list[int]:
    """Widths for columns whose content is ``natural`` characters wide, within ``budget`` in
    all: a column narrower than an even share keeps its width and leaves the rest to the
    others; each gets at least :data:`_NARROWEST_TEXT` (the table may then exceed the budget).
    """
    widths = list(natural)
    open_columns = [index for index, width in enumerate(natural) if width > _NARROWEST_TEXT]
    budget -= sum(natural[index] for index in range(len(natural)) if index not in open_columns)
    while open_columns:
        share = max(_NARROWEST_TEXT, budget // len(open_columns))
        narrow = [index for index in open_columns if natural[index] <= share]
        if not narrow:
            for index in open_columns:
                widths[index] = share
            break
        for index in narrow:
            budget -= natural[index]
        open_columns = [index for index in open_columns if index not in narrow]
    return widths


def render_hits(
    result: SearchResult,
    *,
    title: str | None = None,
    ranks: bool = False,
    key_column: str | None = "id",
    first_position: int = 1,
    width: int | None = None,
    explain_ranking: bool = True,
    contributions: bool = False,
) -> Table:
    """A rich table of hits: position, key, score, the columns, and optionally branch ranks.

    Args:
        result: the hits.
        title: a title over the table.
        ranks: also show each branch's rank.
        key_column: the plan's key column: its values head the table under its name and are
            not repeated among the columns (``None``: a plan without a key, no key column); a
            key longer than a quarter of ``width`` is cut with an ellipsis.
        first_position: the number of the first hit (``--offset`` + 1: numbers continue
            across pages).
        width: the characters the table may take (a terminal's width): text columns are
            cut to fit, each value on one line ending in ``…``, never wrapped; when even cut
            they would not fit, the ranking's header drops its explanation.
        explain_ranking: head the ranking column ``score (higher is better)`` or ``distance
            (lower is nearer)``, not only ``score`` or ``distance``.
        contributions: also show what each branch adds to the fused score (explained
            scores; ``-`` where the branch did not return the hit, which adds 0).
    """
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    if key_column is not None:
        key_width = None if width is None else max(_NARROWEST_TEXT, width // 4)
        table.add_column(
            key_column, justify="right", no_wrap=True, overflow="ellipsis", max_width=key_width
        )
    narrow = not explain_ranking or (width is not None and width < _NARROW_TERMINAL)
    ranked_by = "score" if result.descending else "distance"
    if not narrow:
        ranked_by += " (higher is better)" if result.descending else " (lower is nearer)"
    table.add_column(
        ranked_by,
        justify="right",
        no_wrap=True,
    )
    first = result.hits[0] if result.hits else None
    columns = [c for c in (first.columns if first else {}) if c != key_column]
    branch_names = list(first.branches) if first else []
    rows = []
    for position, hit in enumerate(result.hits, start=first_position):
        value = hit.ranking_value
        cells = [str(position)]
        if key_column is not None:
            cells.append(str(hit.key))
        cells.append("-" if value is None else f"{value:.4f}")
        if ranks:
            cells.extend(
                "-" if hit.branches[name].rank is None else str(hit.branches[name].rank)
                for name in branch_names
            )
        if contributions:
            cells.extend(
                "-"
                if not hit.branches[name].returned or hit.branches[name].contribution is None
                else f"{hit.branches[name].contribution:.6f}"
                for name in branch_names
            )
        rows.append((cells, [_preview(hit.columns[column]) for column in columns]))
    if ranks:
        for name in branch_names:
            table.add_column(f"{name} rank", justify="right", no_wrap=True)
    if contributions:
        for name in branch_names:
            table.add_column(f"{name} adds", justify="right", no_wrap=True)
    natural = [
        max([len(column), *(len(texts[i]) for _, texts in rows)])
        for i, column in enumerate(columns)
    ]
    limits: list[int | None] = [None] * len(columns)
    if width is not None:
        fixed = [
            min(
                max([len(str(header.header)), *(len(cells[i]) for cells, _ in rows)]),
                header.max_width or width,
            )
            for i, header in enumerate(table.columns)
        ]
        for header, least in zip(table.columns, fixed):
            header.min_width = least  # a number (or a key's first characters) is never cut
        every = len(table.columns) + len(columns)
        budget = width - sum(fixed) - (3 * every + 1)  # per column 2 of padding and 1 rule; 1 edge
        if not narrow and budget < sum(min(wanted, _NARROWEST_TEXT) for wanted in natural):
            return render_hits(
                result,
                title=title,
                ranks=ranks,
                key_column=key_column,
                first_position=first_position,
                width=width,
                explain_ranking=False,
                contributions=contributions,
            )
        fitted = _fitted(natural, budget)
        limits = list(fitted)
        needed = sum(fixed) + sum(map(min, natural, fitted)) + 3 * every + 1
        if needed > width:
            # Wider than the terminal rather than a column squeezed to nothing (rich shares
            # out an excess over every column, the position, key and score too): printed
            # uncropped, the terminal wraps the lines and every value is still there.
            table.width = needed
    for column, limit in zip(columns, limits):
        table.add_column(column, no_wrap=True, overflow="ellipsis", max_width=limit)
    for cells, texts in rows:
        table.add_row(*cells, *texts)
    return table


def _shown_sql(plan: SearchPlan, sql: str) -> str:
    """``sql`` (the statement that ran for ``plan``) with its query vectors shortened
    (:func:`~hotdata_retrieval.compile.render.to_display_sql`); ``sql`` itself when it is not
    the plan's statement as :func:`~hotdata_retrieval.compile.to_sql` writes it."""
    from hotdata_retrieval.compile import to_sql
    from hotdata_retrieval.compile.render import to_display_sql
    from hotdata_retrieval.engines.results import executed_plan

    executed = executed_plan(plan)
    if to_sql(executed) != sql:
        return sql
    return to_display_sql(executed)


_TEXT_NEEDS = (
    "text search needs a BM25 index on a text column (load the table again with "
    "'hdq load SOURCE --replace --text-column COLUMN')"
)


def _vector_needs(kind: str) -> str:
    return (
        f"{kind} search needs a vector column, a text column embedded at load (load the table "
        "again with 'hdq load SOURCE --replace --embed-column COLUMN', without --no-embed)"
    )


def _check_indexes(indexes: TableIndexes, mode: str) -> None:
    """Refuse a search the table has no index for, saying what each mode needs and what the
    table has.

    Raises:
        CommandError: ``mode`` (or, for ``auto``, every mode) needs an index the table lacks.
    """
    has_text, has_vectors = bool(indexes.bm25_columns), bool(indexes.vectors)
    text_needs = [] if has_text else [_TEXT_NEEDS]
    vector_needs = [] if has_vectors else [_vector_needs("semantic")]
    missing = {
        SearchMode.AUTO.value: [] if has_text or has_vectors else [*text_needs, *vector_needs],
        SearchMode.TEXT.value: text_needs,
        SearchMode.SEMANTIC.value: vector_needs,
        SearchMode.NEAREST.value: [] if has_vectors else [_vector_needs("nearest-neighbour")],
        SearchMode.HYBRID.value: [*text_needs, *vector_needs],
    }[mode]
    if mode == SearchMode.HYBRID.value and missing:
        missing = ["hybrid search fuses text and semantic search", *missing]
    if not missing:
        return
    has = []
    if has_text:
        has.append(f"a BM25 index on {', '.join(indexes.bm25_columns)}")
    if has_vectors:
        has.append(f"vector columns {', '.join(vector.column for vector in indexes.vectors)}")
    if has:
        lacks = "no BM25 index" if not has_text else "no vector column"
        lacks += f" (it has {' and '.join(has)})"
    else:
        lacks = "neither a BM25 index nor a vector column"
    raise CommandError(f"table '{indexes.table}' has {lacks}: {'; '.join(missing)}")


def _formula_json(text: str) -> Any:
    """``--formula``'s JSON text, read (the request reads the formula from it).

    Raises:
        PlanError: text that is no JSON, or JSON nested too deeply to read.
    """
    try:
        return json.loads(text)
    except ValueError as error:
        raise PlanError(
            f"--formula must be JSON (a list of terms): {error}", field="formula", value=text
        ) from None
    except RecursionError:
        raise PlanError(
            "--formula is nested too deeply to read", field="formula", value=text[:80]
        ) from None


@contextlib.contextmanager
def _naming_the_query(query: str, queries: Sequence[str]) -> Iterator[None]:
    """Name ``--query`` rather than ``QUERY`` in a plan's error about a query text that only a
    ``--query`` gave (every query text is the plan's ``query_text``).

    Raises:
        CommandError: such an error, worded with ``--query``.
    """
    try:
        yield
    except PlanError as error:
        if error.field != "query_text" or error.value == query or error.value not in queries:
            raise
        worded = in_option_terms(error, {**OPTION_NAMES, "query_text": "--query"})
        raise CommandError(worded) from None


def _hit_json(hit: Any, ranked_by: str) -> dict[str, Any]:
    document = {
        "key": hit.key,
        ranked_by.lstrip("_"): hit.ranking_value,
        "columns": dict(hit.columns),
        "branches": {name: _branch_json(branch) for name, branch in hit.branches.items()},
        **({} if hit.rerank_score is None else {"rerank_score": hit.rerank_score}),
        **({"highlights": dict(hit.highlights)} if hit.highlights else {}),
    }
    if hit.fused_score is not None:  # a score formula: its terms add up to the score
        document["fused_score"] = hit.fused_score
        document["terms"] = list(hit.terms)
    return document


def _branch_json(branch: Any) -> dict[str, Any]:
    """A branch's part of a hit: its rank and raw score, and with explained scores its
    normalized value and contribution (``null`` and 0 where it did not return the hit)."""
    document: dict[str, Any] = {"rank": branch.rank, "raw_score": branch.raw_score}
    if branch.contribution is not None:
        document["normalized"] = branch.normalized
        document["contribution"] = branch.contribution
    return document


def plan_table_search(
    engine: Any,
    engine_name: str,
    table: str,
    query: str,
    *,
    mode: str,
    embedder_choice: str | None,
    fusion_params: Mapping[str, Any],
    embed_query: Callable[[str], Sequence[float]] | None = None,
    **request: Any,
) -> tuple[TableIndexes, SearchPlan]:
    """The plan ``hdq search`` runs for ``query`` on ``table`` of ``engine``, and the table's
    indexes: the options a search leaves out (the text and vector columns, the key, the mode
    ``auto`` resolves to) are read from the table, as :func:`hotdata_retrieval.routing.
    plan_search` routes them. ``hdq explain`` plans the same way when it reads the table.

    Args:
        engine: an open engine (:func:`~hotdata_retrieval.cli._engines.open_engine`).
        engine_name: its ``--engine`` name, for messages.
        table: the table's name as typed.
        query: the query text.
        mode: a :class:`~hotdata_retrieval.routing.SearchMode` value.
        embedder_choice: ``--embedder`` (``None``: the model recorded for the table).
        fusion_params: the values of :func:`~hotdata_retrieval.cli._options.fusion_options`.
        embed_query: embeds the query (default: the table's embedder); ``hdq explain``
            passes the ``--vector`` it was given.
        request: the other fields of :class:`~hotdata_retrieval.routing.SearchRequest`.

    Raises:
        CommandError: the table has no index the mode needs; no embedder where one is needed.
        PlanError: a bad option value, or a fusion option for a search that is not hybrid.
        HotdataRetrievalError: no such table, or the engine cannot read it.
    """
    indexes = engine.indexes(table)
    _check_indexes(indexes, mode)
    embedder = None
    if embed_query is None:
        try:
            embedder = table_embedder(engine, indexes.table, embedder_choice)
        except HotdataRetrievalError:
            if mode != SearchMode.TEXT.value or embedder_choice is not None:
                raise  # text search needs no embedder; the others do
        else:
            if embedder is not None:
                engine.embedder = embedder
    method, settings = fusion_settings(fusion_params)
    fusion_file = fusion_params.get("fusion_file")
    chosen = fusion_params.get("fusion") is not None or bool(settings) or fusion_file is not None
    fused = (SearchMode.HYBRID.value, SearchMode.AUTO.value)
    if chosen and not request.get("queries") and mode not in fused:
        # Said before the method checks its options: the option is no question of method.
        name = next(iter(settings), "fusion")
        raise PlanError(
            f"{name} applies only to hybrid search, which fuses BM25 with "
            f"nearest-neighbour search; this search is {mode}",
            field=name,
            value=settings.get(name, fusion_params.get("fusion")),
        )
    search_request = SearchRequest(
        table=indexes.table,
        query=query,
        mode=mode,
        fusion=FusionChoice(method=method, options=settings) if chosen else None,
        **request,
    )
    try:
        plan = _semantic_as_the_tools_plan_it(engine, search_request, embed_query, embedder)
        if plan is None:
            plan = engine.plan_search(search_request, embed_query=embed_query)
    except PlanError as error:
        if error.field == "embedder" and embedder is None and embed_query is None:
            raise CommandError(
                no_embedder_message(engine_name, indexes.table, f"{mode} search")
            ) from None
        if fusion_file is None or error.field not in {*settings, "fusion"}:
            raise
        # The option came from the file: name the file, not a flag of the same name.
        raise PlanError(str(error), field="fusion_file", value=error.value) from None
    return indexes, plan


def _semantic_as_the_tools_plan_it(
    engine: Any,
    request: SearchRequest,
    embed_query: Callable[[str], Sequence[float]] | None,
    embedder: Any,
) -> SearchPlan | None:
    """The plan of a ``semantic`` ``request`` as the tools' semantic search builds it
    (:func:`~hotdata_retrieval.routing.semantic_search_mode`): with the query embedded here
    (by ``embed_query``, or ``embedder``, the table's model), a nearest-neighbour search of
    the column's vectors, which ranks as the engine's own embedding of the query does, so a
    cursor of either door continues in the other; ``None`` for another mode, with nothing
    to embed the query here, or where the engine has no such plan (a vector index only the
    engine's embedding searches), which the mode's own route then plans."""
    if request.mode is not SearchMode.SEMANTIC:
        return None
    chosen = semantic_search_mode(embedder is not None or embed_query is not None)
    if chosen is SearchMode.SEMANTIC:
        return None
    try:
        plan: SearchPlan = engine.plan_search(
            attrs.evolve(request, mode=chosen), embed_query=embed_query
        )
    except PlanError:
        return None
    return plan


@click.command("search")
@click.argument("query")
@click.option("--table", required=True, help="The table to search (1-3 part name).")
@database_option
@engine_option
@click.option(
    "--mode",
    type=click.Choice([mode.value for mode in SearchMode]),
    default=SearchMode.AUTO.value,
    show_default=True,
    help="auto: hybrid when the table has BM25 and vectors, else what it has.",
)
@click.option("-k", "--limit", "limit", type=int, default=10, show_default=True, help="Top-k.")
@click.option(
    "--offset", type=int, default=0, show_default=True, help="Rows skipped before the page."
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="SQL",
    help="A SQL condition such as \"lang = 'en'\" (repeatable; joined with AND).",
)
@click.option(
    "--columns", metavar="A,B", callback=parse_names, help="Columns to return (comma-separated)."
)
@click.option("--text-column", metavar="COLUMN", help="The text column to search.")
@click.option(
    "--query",
    "queries",
    multiple=True,
    metavar="TEXT",
    help="Another query text, searched beside QUERY and fused with it into one ranking "
    "(repeatable; one statement).",
)
@click.option(
    "--group-by",
    metavar="COLUMN",
    help="Group the rows by COLUMN (a chunk's parent document): -k groups, each with its "
    "best --group-size rows; --offset counts groups.",
)
@click.option(
    "--group-size",
    type=int,
    default=1,
    show_default=True,
    help="Rows kept per group (with --group-by).",
)
@click.option(
    "--after",
    metavar="TOKEN",
    help="Continue a ranking after a page: the next_after token of its JSON output.",
)
@click.option(
    "--facet",
    "facets",
    multiple=True,
    metavar="COLUMN",
    help="Count COLUMN's values among the rows the ranking considered (repeatable): the 20 "
    "most frequent, in the JSON output's facets.",
)
@query_embedder_option
@fusion_options
@click.option(
    "--formula",
    "formula_text",
    metavar="JSON",
    help="A hybrid search's final score, as a plan document's \"formula\": a JSON list of "
    'terms over "score", numeric columns and exp/gauss/linear decays (docs/plans.md).',
)
@click.option("--explain", is_flag=True, help="Also show the SQL and each branch's rank.")
@click.option(
    "--explain-scores",
    is_flag=True,
    help="For a hybrid search, show what each hit's fused score is made of: per branch its "
    "normalized value and weighted contribution (they add up to the score).",
)
@click.option(
    "--diversity",
    type=float,
    metavar="LAMBDA",
    help="Choose the page by maximal marginal relevance over the candidates' vectors: 1 "
    "ranks by similarity to the query alone, 0 by difference from the hits already chosen "
    "alone (nearest and hybrid searches).",
)
@click.option(
    "--candidates",
    type=int,
    metavar="N",
    help="Rows --diversity chooses among (default: 4 times limit + offset, at most 1000).",
)
@click.option(
    "--rerank",
    metavar="MODEL_DIR",
    help="Re-score the best rows with the ONNX cross-encoder in MODEL_DIR (model.onnx and "
    "tokenizer.json), pairing the query with each row's text, and order them by that score.",
)
@click.option(
    "--top-n",
    "top_n",
    type=int,
    metavar="N",
    help="Rows --rerank scores (default: 4 times limit + offset, at most 1000).",
)
@click.option(
    "--highlight",
    is_flag=True,
    help="Give each hit the matched words' character offsets and a snippet around them, in "
    "the searched text column (JSON output).",
)
@click.option("--fragment-size", type=int, metavar="N", help="Characters per snippet (150).")
@click.option("--fragments", type=int, metavar="N", help="Snippets per hit (1).")
@full_vectors_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: the hits as a table; json: one JSON document on stdout.",
)
@reports_errors(options=OPTION_NAMES)
def search(
    query: str,
    table: str,
    database: Path,
    engine_name: str,
    mode: str,
    limit: int,
    offset: int,
    filters: Sequence[str],
    columns: tuple[str, ...] | None,
    text_column: str | None,
    queries: Sequence[str],
    group_by: str | None,
    group_size: int,
    after: str | None,
    facets: Sequence[str],
    embedder_choice: str | None,
    fusion: str | None,
    weights: tuple[float, ...] | None,
    rank_constant: float | None,
    alpha: float | None,
    depth: int | None,
    min_score: float | None,
    fusion_file: Path | None,
    formula_text: str | None,
    explain: bool,
    explain_scores: bool,
    diversity: float | None,
    candidates: int | None,
    rerank: str | None,
    top_n: int | None,
    highlight: bool,
    fragment_size: int | None,
    fragments: int | None,
    full_vectors: bool | None,
    output_format: str,
) -> None:
    """Search TABLE of the local database (or of the store --engine names) for QUERY and print
    the hits, best first. QUERY '-' reads the query from stdin."""
    query = text_argument(query, "QUERY")
    with open_engine(engine_name, database) as engine, _naming_the_query(query, queries):
        indexes, plan = plan_table_search(
            engine,
            engine_name,
            table,
            query,
            mode=mode,
            embedder_choice=embedder_choice,
            fusion_params={
                "fusion": fusion,
                "weights": weights,
                "rank_constant": rank_constant,
                "alpha": alpha,
                "depth": depth,
                "min_score": min_score,
                "fusion_file": fusion_file,
            },
            limit=limit,
            offset=offset,
            filter=_filter(filters),
            columns=None if columns is None else list(columns),
            text_column=text_column,
            explain_scores=explain_scores,
            queries=list(queries),
            formula=None if formula_text is None else _formula_json(formula_text),
            group_by=group_by,
            group_size=group_size,
            diversity=diversity,
            candidates=candidates,
            after=after,
            facets=list(facets),
            rerank=rerank,
            top_n=top_n,
            highlight=highlight or None,
            fragment_size=fragment_size,
            fragments=fragments,
        )
        result = engine.search(plan)
    if output_format == "json":
        document: dict[str, Any] = {
            "table": str(indexes.table),
            "branches": list(plan.branch_names),
            "ranked_by": result.ranked_by.lstrip("_"),
            "order": "descending" if result.descending else "ascending",
            "hits": [_hit_json(hit, result.ranked_by) for hit in result],
            "underfilled": result.underfilled,
            "next_after": result.next_after,
        }
        if plan.facets:
            document["facets"] = {
                name: [{"value": value, "count": count} for value, count in counts.items()]
                for name, counts in result.facets.items()
            }
            document["facets_cut"] = dict(result.facets_cut)
        if result.vector_scans:
            document["vector_scans"] = [attrs.asdict(scan) for scan in result.vector_scans]
        if explain:
            document["sql"] = result.sql
            if plan.steps:
                document["steps"] = describe_steps(plan)
        click.echo(json.dumps(jsonable(document), indent=2, allow_nan=False))
        return
    console = make_console()
    shape: dict[str, Any] = {
        "ranks": explain or plan.fusion is not None,
        "key_column": plan.key_column,
        "first_position": plan.offset + 1,
        "contributions": plan.fusion is not None and plan.explain_scores,
    }
    hits = render_hits(result, width=console.width, **shape)
    shown = result.sql
    if explain and (full_vectors is False or (full_vectors is None and console.is_terminal)):
        shown = _shown_sql(plan, result.sql)
    note = VECTORS_ABBREVIATED_NOTE if shown != result.sql else None
    if explain and not console.is_terminal:
        # Written to a file or a pipe: the statement exactly as it ran, then the hits as SQL
        # comments, so the output is a SQL script that hdq lint (or the engine) can read.
        if note is not None:
            click.echo(note)
        click.echo(f"{shown};")
        for line in describe_steps(plan):
            click.echo(f"-- {line}")
        if result.hits:
            capture = Console(width=_COMMENT_WIDTH, no_color=True, highlight=False)
            with capture.capture() as captured:
                capture.print(render_hits(result, width=_COMMENT_WIDTH - 3, **shape))
            for line in captured.get().rstrip("\n").split("\n"):
                click.echo(f"-- {line}".rstrip())
        else:
            click.echo("-- no results")
        return
    if explain:
        if note is not None:
            console.print(note, style="dim", markup=False, highlight=False)
        console.print(shown, markup=False, highlight=False, soft_wrap=True)
        for line in describe_steps(plan):
            console.print(f"-- {line}", style="dim", markup=False, highlight=False)
        console.print()
    if not result.hits:
        click.echo("no results", err=True)
        return
    console.print(hits, crop=False)
    if result.underfilled:
        click.echo(f"note: {result.underfilled}", err=True)
    for scan in result.vector_scans:
        if scan.skipped:
            click.echo(
                f"note: {scan.branch}: {scan.skipped} of {counted(scan.scanned, 'row')} have "
                "a vector in "
                f"'{scan.column}' that cannot be used (malformed, non-finite or of another "
                "dimension) and were left out",
                err=True,
            )
