"""``hdq tune``: choose a hybrid search's fusion from judged queries, on a table of the engine
``--engine`` names (:mod:`hotdata_retrieval.tuning`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from hotdata_retrieval._console import make_console
from hotdata_retrieval._progress import progress_report
from hotdata_retrieval.cli._engines import (
    ENGINE_DIALECTS,
    engine_option,
    no_embedder_message,
    open_engine,
    query_embedder_option,
    table_embedder,
)
from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.cli._input import is_stdin, read_input
from hotdata_retrieval.cli._local import database_option, reports_errors
from hotdata_retrieval.cli._options import parse_numbers
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    Bm25Search,
    NearestNeighborSearch,
    fusion_methods,
)

OPTION_NAMES = {
    "depth": "--depth",
    "text_column": "--text-column",
    "alpha": "--alphas",
    "rank_constant": "--rank-constants",
    "weights": "--vector-shares",
    "chosen_by": "--chosen-by",
    "folds": "--folds",
}


def _methods(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    methods = tuple(item.strip().lower().replace("-", "_") for item in value.split(","))
    for method in methods:
        if method not in fusion_methods():
            known = ", ".join(name.replace("_", "-") for name in fusion_methods())
            raise click.BadParameter(f"{method!r} is not a fusion method; one of {known}")
    return methods


def _every_method() -> str:
    """``--methods``' default: every registered fusion method, as the flag spells them."""
    return ",".join(name.replace("_", "-") for name in fusion_methods())


def _interval(mean: float, low: float, high: float, *, signed: bool = False) -> str:
    sign = "+" if signed else ""
    return f"{mean:{sign}.4f} [{low:{sign}.4f}, {high:{sign}.4f}]"


_STDIN_NAME = "<stdin>"
"""How messages and the output name queries or qrels read from standard input."""


def _keep_words_whole(table: Table, width: int) -> None:
    """Size ``table``'s columns for ``width`` characters so that cells wrap only between
    words, never cutting one (a number, a setting such as ``rank_constant=60``): each column
    gets at least its longest word, then the room left is shared out equally, a column
    needing less than its share getting its longest line. When the longest words alone do
    not fit, the table takes the width they need (printed uncropped, a terminal wraps its
    lines) rather than rich cutting numbers to ``0.…``."""
    columns = table.columns
    texts = [[str(column.header), *map(str, column.cells)] for column in columns]
    least = [max(len(word) for text in cells for word in [*text.split(), ""]) for cells in texts]
    natural = [max(len(text) for text in cells) for cells in texts]
    rules = 3 * len(columns) + 1  # per column 2 of padding and 1 rule; 1 edge
    widths = list(least)
    spare = width - rules - sum(widths)
    growing = [index for index in range(len(columns)) if widths[index] < natural[index]]
    while spare > 0 and growing:  # an equal share each; a column needing less takes its need
        share = spare // len(growing)
        sated = [index for index in growing if natural[index] - widths[index] <= share]
        if not sated:
            for rank, index in enumerate(growing):
                widths[index] += share + (rank < spare % len(growing))
            break
        for index in sated:
            spare -= natural[index] - widths[index]
            widths[index] = natural[index]
        growing = [index for index in growing if index not in sated]
    for column, chosen in zip(columns, widths):
        column.width = chosen
    if sum(widths) + rules > width:
        table.width = sum(widths) + rules


def _shares(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """Click callback: ``--vector-shares`` as numbers, each a share between 0 and 1 (the
    weights are ``1 - S`` and ``S``).

    Raises:
        click.BadParameter: an item is not a number, or not between 0 and 1 (exit 2).
    """
    shares = parse_numbers(ctx, param, value)
    for share in shares or ():
        if not 0 <= share <= 1:
            raise click.BadParameter(
                f"{share!r} is not a share between 0 and 1", ctx=ctx, param=param
            )
    return shares


def _check_writable(output: Path) -> None:
    """Refuse an ``--output`` that could not be written, before minutes of searching: its
    directory missing or not writable (the file itself is written only at the end).

    Raises:
        click.BadParameter: naming the file and why.
    """
    directory = output.parent
    if not directory.is_dir():
        reason = f"no directory {str(directory)!r}"
    elif not os.access(directory, os.W_OK | os.X_OK) or (
        output.exists() and not os.access(output, os.W_OK)
    ):
        reason = "permission denied"
    else:
        return
    raise click.BadParameter(f"cannot write {str(output)!r}: {reason}", param_hint="'--output'")


@click.command("tune")
@click.option(
    "--queries",
    "queries_path",
    required=True,
    type=click.Path(exists=True, allow_dash=True, path_type=Path),
    metavar="FILE",
    help='BEIR queries.jsonl ({"_id", "text"} a line; \'-\' for stdin), or a BEIR dataset '
    "directory.",
)
@click.option(
    "--qrels",
    "qrels_path",
    required=True,
    type=click.Path(exists=True, allow_dash=True, path_type=Path),
    metavar="FILE",
    help="BEIR qrels TSV (query-id, corpus-id, score; '-' for stdin), or a qrels or dataset "
    "directory (then its --split).",
)
@click.option(
    "--split",
    default="train",
    show_default=True,
    help="The qrels split read from a directory: tune on train, report on test.",
)
@click.option("--table", default="corpus", show_default=True, help="The table searched.")
@database_option
@engine_option
@click.option("--text-column", metavar="COLUMN", help="The text column BM25 searches.")
@query_embedder_option
@click.option(
    "--methods",
    default=_every_method,
    show_default="every registered method: " + _every_method(),
    callback=_methods,
    help="Fusion methods to try, comma-separated.",
)
@click.option(
    "--rank-constants",
    metavar="K,K,...",
    callback=parse_numbers,
    help="rrf: rank constants to try.  [default: 1,2,5,10,20,40,60,100]",
)
@click.option(
    "--vector-shares",
    metavar="S,S,...",
    callback=_shares,
    help="rrf: the vector branch's share of the weight (weights 1 - S, S).  "
    "[default: 0.3,0.4,0.5,0.6,0.7]",
)
@click.option(
    "--alphas",
    metavar="A,A,...",
    callback=parse_numbers,
    help="min-max and dbsf: alpha values to try.  [default: 0,0.1,...,1]",
)
@click.option(
    "--depth",
    type=int,
    default=DEFAULT_DEPTH,
    show_default=True,
    help="Candidates per branch (recall@100 needs 100 fused results).",
)
@click.option(
    "--chosen-by",
    type=click.Choice(["nDCG@10", "R@100"]),
    default="nDCG@10",
    show_default=True,
    help="The measure settings are ranked by: a setting replaces the default only when its "
    "paired interval on this measure is above zero and the other's is not below zero.",
)
@click.option(
    "--folds",
    type=int,
    default=5,
    show_default=True,
    help="Cross-validation folds: the rule must also gain on queries it was not chosen on.",
)
@click.option("--resamples", type=int, default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("fusion.json"),
    show_default=True,
    metavar="FILE",
    help="Where the best setting goes, as a plan fragment for --fusion-file.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: the settings as a table; json: one JSON document on stdout.",
)
@reports_errors(options=OPTION_NAMES)
def tune(
    queries_path: Path,
    qrels_path: Path,
    split: str,
    table: str,
    database: Path,
    engine_name: str,
    text_column: str | None,
    embedder_choice: str | None,
    methods: tuple[str, ...],
    rank_constants: tuple[float, ...] | None,
    vector_shares: tuple[float, ...] | None,
    alphas: tuple[float, ...] | None,
    depth: int,
    chosen_by: str,
    folds: int,
    resamples: int,
    seed: int,
    output: Path,
    output_format: str,
) -> None:
    """Choose the fusion of TABLE's hybrid search from judged queries.

    Runs each judged query's branches once on the local database (or on the engine --engine
    names, the query embedded by the model hdq load recorded, or --embedder's where the engine
    records none), fuses them under every setting of a grid (method; rank constant and
    weights; alpha), and reports nDCG@10 and recall@100 per setting with 95% bootstrap
    intervals, and the paired difference from the default (rrf, rank constant 60, weights
    1,1). A setting replaces the default only when its paired --chosen-by interval is above
    zero and the other measure's is not below zero, on every judged query and in
    --folds-fold cross-validation; what is chosen (the default otherwise) is written to
    --output as {"fusion": {...}, "tuning": {...evidence}}, which hdq explain and hdq search
    read with --fusion-file. Fewer than 50 judged queries draw a warning.
    """
    require_extra("tune", needed_by="this command")
    from hotdata_retrieval import tuning

    if depth < 10:
        raise click.BadParameter(
            f"must be at least 10 (nDCG@10 ranks ten fused results), got {depth}",
            param_hint="'--depth'",
        )
    if resamples < 1:
        raise click.BadParameter("must be at least 1", param_hint="'--resamples'")
    if folds < 2:
        raise click.BadParameter(f"must be at least 2, got {folds}", param_hint="'--folds'")
    _check_writable(output)
    if is_stdin(queries_path):
        queries = tuning.parse_queries(read_input(queries_path, "--queries"), _STDIN_NAME)
    else:
        queries = tuning.load_queries(queries_path)
    if is_stdin(qrels_path):
        qrels = tuning.parse_qrels(read_input(qrels_path, "--qrels"), _STDIN_NAME)
        qrels_file = Path(_STDIN_NAME)
    else:
        qrels, qrels_file = tuning.load_qrels(qrels_path, split=split)
    judged = {query_id: text for query_id, text in queries.items() if query_id in qrels}
    if not judged:
        queries_file = _STDIN_NAME if is_stdin(queries_path) else str(queries_path)
        raise tuning.TuningError(f"no query of {queries_file!r} is judged in {str(qrels_file)!r}")
    if folds > len(judged):
        raise click.BadParameter(
            f"{folds} folds need at least {folds} judged queries, got {len(judged)}",
            param_hint="'--folds'",
        )
    grid_options: dict[str, Any] = {}
    if rank_constants is not None:
        grid_options["rank_constants"] = rank_constants
    if vector_shares is not None:
        grid_options["vector_shares"] = vector_shares
    if alphas is not None:
        grid_options["alphas"] = alphas
    settings = tuning.default_grid(methods, **grid_options)
    # Every setting is checked on a text and a vector branch before any search runs.
    probe = (
        Bm25Search(table="t", column="body", query_text="q"),
        NearestNeighborSearch(table="t", column="embedding", query_vector=[1.0, 0.0]),
    )
    for setting in settings:
        setting.fusion(probe, depth)

    console = make_console(stderr=True)
    with open_engine(engine_name, database) as engine:
        indexes = engine.indexes(table)
        if not indexes.vectors:
            raise tuning.TuningError(
                f"table {indexes.table} has no vectors: hybrid search needs a vector column "
                "(hdq load embeds one)"
            )
        key = indexes.key_column
        if key is None:
            raise tuning.TuningError(
                f"table {indexes.table} has no key column: qrels name documents by their key "
                "(hdq load --key-column)"
            )
        embedder = table_embedder(engine, indexes.table, embedder_choice)
        if embedder is None:
            raise CommandError(no_embedder_message(engine_name, indexes.table, "hybrid search"))
        coverage = tuning.judgment_coverage(
            qrels,
            queries,
            tuning.table_keys(engine, indexes.table, key, ENGINE_DIALECTS[engine_name]),
            unchecked=f"the {engine_name} engine runs no SQL to read them with",
        )
        notes = coverage.notes()
        warning = tuning.few_queries_warning(len(judged), chosen_by)
        if warning is not None:
            console.print(f"warning: {warning}", markup=False, highlight=False)
        if depth < tuning.RUN_LENGTH:
            notes.append(
                f"--depth {depth} is below {tuning.RUN_LENGTH}: R@100 counts the fused "
                f"candidates of {depth} per branch, which may be fewer than 100"
            )
        for note in notes:
            console.print(f"note: {note}", markup=False, highlight=False)
        with progress_report("searching", len(judged), transient=True) as searching:
            runs = tuning.collect_runs(
                engine,
                indexes.table,
                judged,
                depth=depth,
                text_column=text_column,
                embed_query=embedder.embed_query,
                advance=searching.advance,
            )
        with progress_report("fusing and scoring", len(settings), transient=True) as scoring:
            results = tuning.evaluate(
                runs,
                qrels,
                settings,
                depth=depth,
                resamples=resamples,
                seed=seed,
                advance=scoring.advance,
            )
    choice = tuning.choose(
        results, chosen_by=chosen_by, folds=folds, resamples=resamples, seed=seed
    )
    default, chosen = choice.default, choice.chosen
    fragment = tuning.plan_fragment(
        choice,
        depth=depth,
        tuning={
            "engine": engine_name,
            "table": str(indexes.table),
            "queries": len(judged),
            "qrels": str(qrels_file),
            "resamples": resamples,
            "seed": seed,
            "warning": warning,
        },
    )
    try:
        output.write_text(json.dumps(fragment, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise click.BadParameter(
            f"cannot write {str(output)!r}: {error.strerror or error}", param_hint="'--output'"
        ) from None

    if output_format == "json":
        click.echo(
            json.dumps(
                {
                    "engine": engine_name,
                    "table": str(indexes.table),
                    "queries": len(judged),
                    "qrels": str(qrels_file),
                    "depth": depth,
                    "notes": notes,
                    "judged_queries_not_in_queries": list(coverage.queries_without_text),
                    "judgments_of_unknown_documents": None
                    if coverage.keys_unchecked is not None
                    else [
                        {"query": query, "document": document}
                        for query, document in coverage.unknown_documents
                    ],
                    "default": default.setting.document(),
                    "settings": [
                        {
                            "fusion": result.setting.document(),
                            **{
                                name: {
                                    **result.means[name].document(),
                                    "difference": result.differences[name].document(),
                                }
                                for name in tuning.MEASURES
                            },
                        }
                        for result in results
                    ],
                    "chosen": fragment["fusion"],
                    "chosen_by": chosen_by,
                    "replaces_default": choice.replaces_default,
                    "reason": choice.reason,
                    "warning": warning,
                    "cross_validation": fragment["tuning"]["cross_validation"],
                    "candidate": choice.candidate.setting.document(),
                    "highest_mean": choice.highest_mean.setting.document(),
                    "output": str(output),
                },
                indent=2,
            )
        )
        return
    listing = Table(
        title=f"{len(judged)} judged queries ({qrels_file.name}), {depth} candidates per branch; "
        "95% bootstrap intervals; differences paired with the default",
        title_justify="left",
    )
    listing.add_column("fusion")
    for name in tuning.MEASURES:
        listing.add_column(name, justify="right")
        listing.add_column(f"Δ {name}", justify="right")
    ordered = sorted(results, key=lambda result: -result.means[chosen_by].mean)
    for result in ordered:
        cells = [
            result.setting.label
            + (" (default)" if result is default else "")
            + (" ← chosen" if result is chosen else "")
            + (
                " (passes on all queries)"
                if result is not default and tuning.passes(result.differences, chosen_by)
                else ""
            )
        ]
        for name in tuning.MEASURES:
            mean, difference = result.means[name], result.differences[name]
            cells.append(_interval(mean.mean, mean.low, mean.high))
            cells.append(
                ""
                if result is default
                else _interval(difference.mean, difference.low, difference.high, signed=True)
            )
        listing.add_row(*cells)
    console = make_console()
    _keep_words_whole(listing, console.width)
    console.print(listing, crop=False)
    cross = ", ".join(
        f"{name} {_interval(value.mean, value.low, value.high, signed=True)}"
        for name, value in choice.cross_validated.items()
    )
    click.echo(
        f"{folds}-fold cross-validated difference of choosing by the rule: {cross}", err=True
    )
    click.echo(f"{choice.reason}.", err=True)
    click.echo(f"chosen: {chosen.setting.label}; written to {output} (use --fusion-file)", err=True)
