"""Same plan, same page: each store's text, nearest and fused pages against the local engine's.

Run from the repository root::

    python benchmarks/bench_store_parity.py [--documents 1500] [--queries 100] [--rounds 3]
        [--data ../shared/data/scifact] [--tree PATH] [--write docs/engines.md]

The corpus is the first ``--documents`` SciFact abstracts (``../shared/data/scifact``; title +
" " + abstract as ``body``) with their precomputed all-MiniLM-L6-v2 vectors (float16,
re-normalised in float32), loaded with each engine's ``load_table`` (a full-text index on
``body``, no vector index). The queries are the first ``--queries`` SciFact test claims with
their precomputed vectors. For each query, every engine runs a BM25 page, an exact cosine
nearest page and an RRF fusion of the two (rank constant 60, depth 100 per branch), all
``limit`` 10; reported per store and kind: the mean overlap of its page with the local
engine's (shared keys over 10) and the share of queries whose page is the local engine's in
the same order.

The text pages are also checked against a NumPy reference of the documented BM25 (tantivy's
formula: k1 1.2, b 0.75, ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, a query term given
twice counted twice; :func:`reference_scores`), over the same analysed terms: per store, the
share of claims whose top 10 is the reference's (same keys, same order; ties by key) and the
largest ``|score - reference|`` over every returned row. The local engine's tantivy index
stores each row's length in one byte, so it is compared with a reference that quantises the
lengths as tantivy does (``engines.local.bm25.stored_length``, tantivy's ``fieldnorm``
table) and, since tantivy scores in float32, orders
by the float32 value of the score, then key; every claim whose page differs is listed with
the reason. Its distance from the exact reference is reported too.

SQLite's text branch computes BM25 in SQL; the cost is measured side by side with FTS5's own
``bm25()`` on the same database (:func:`sqlite_cost`): each claim's compiled text statement
and an FTS5 ``MATCH`` statement ordered by ``-bm25()`` returning the same columns, alternated,
``--rounds`` times; the median time per query of each. LanceDB's likewise
(:func:`lancedb_cost`): the engine's whole text search against LanceDB's own ranked query
alone (an upper bound on the formula's cost: the engine's other work is in the first).

``--tree PATH`` measures another checkout of the library (its engines, this script's data and
measure), so a change can be reported before and after in one run.

This script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
STORES = ("sqlite", "duckdb", "postgres", "lancedb")
KINDS = ("text", "nearest", "hybrid")
LIMIT = 10
DEPTH = 100
MARK_START = "<!-- bench_store_parity:start -->"
MARK_END = "<!-- bench_store_parity:end -->"


def read_data(
    data: Path, documents: int, queries: int
) -> tuple[Any, list[tuple[str, list[float]]]]:
    """The corpus table (``id``, ``body``, ``embedding``) and ``(claim, vector)`` queries."""
    import numpy as np
    import pyarrow as pa

    def unit(path: Path) -> np.ndarray:
        vectors = np.load(path).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    vectors = data / "vectors"
    document_ids = (vectors / "doc_ids.txt").read_text(encoding="utf-8").split()
    row_of = {identifier: row for row, identifier in enumerate(document_ids)}
    document_vectors = unit(vectors / "doc_vectors.f16.npy")
    ids, bodies, embeddings = [], [], []
    with open(data / "corpus.jsonl", encoding="utf-8") as corpus:
        for line in corpus:
            record = json.loads(line)
            if record["_id"] not in row_of:
                continue
            ids.append(int(record["_id"]))
            bodies.append(f"{record['title']} {record['text']}")
            embeddings.append(document_vectors[row_of[record["_id"]]].tolist())
            if len(ids) == documents:
                break
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "body": bodies,
            "embedding": pa.array(embeddings, pa.list_(pa.float32(), len(embeddings[0]))),
        }
    )
    claims = {}
    with open(data / "queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            claims[record["_id"]] = record["text"]
    query_ids = (vectors / "query_ids.txt").read_text(encoding="utf-8").split()
    query_vectors = unit(vectors / "query_vectors.f16.npy")
    chosen = [
        (claims[identifier], query_vectors[row].tolist())
        for row, identifier in enumerate(query_ids[:queries])
    ]
    return table, chosen


class Reference:
    """The documented BM25 of every row of the corpus for any query, by NumPy: each row's
    analysed terms (the library's analysis), each term's rows and frequencies."""

    def __init__(self, keys: Sequence[int], bodies: Sequence[str]) -> None:
        import numpy as np

        from hotdata_retrieval.analysis import analyze_text
        from hotdata_retrieval.engines.local.bm25 import stored_length

        self.keys = np.asarray(keys, dtype=np.int64)
        terms = [analyze_text(body) for body in bodies]
        self.lengths = np.array([len(row) for row in terms], dtype=np.float64)
        self.quantised = np.array([stored_length(len(row)) for row in terms], np.float64)
        self.postings: dict[str, tuple[Any, Any]] = {}
        rows: dict[str, list[tuple[int, int]]] = {}
        for position, row in enumerate(terms):
            for term, frequency in Counter(row).items():
                rows.setdefault(term, []).append((position, frequency))
        for term, held in rows.items():
            positions, frequencies = zip(*held)
            self.postings[term] = (np.array(positions), np.array(frequencies, np.float64))

    def scores(self, query: str, *, quantised: bool = False) -> Any:
        """Every row's BM25 for ``query`` (0 for a row holding no query term), in float64;
        with ``quantised``, each row's length as tantivy stores it (the mean length stays
        exact, as tantivy's total of terms over its rows)."""
        import numpy as np

        from hotdata_retrieval.analysis import analyze_text

        count = len(self.keys)
        average = float(self.lengths.mean())
        lengths = self.quantised if quantised else self.lengths
        scores = np.zeros(count, dtype=np.float64)
        for term in analyze_text(query):
            if term not in self.postings:
                continue
            positions, frequencies = self.postings[term]
            df = len(positions)
            idf = np.log(1 + (count - df + 0.5) / (df + 0.5))
            norm = 1.2 * (1 - 0.75 + 0.75 * lengths[positions] / average)
            scores[positions] += idf * 2.2 * frequencies / (frequencies + norm)
        return scores

    def top(self, scores: Any, limit: int, *, float32: bool = False) -> list[int]:
        """The keys of the ``limit`` best rows holding a query term: by score (its float32
        value with ``float32``) descending, then key."""
        import numpy as np

        ranked = scores.astype(np.float32) if float32 else scores
        held = np.flatnonzero(scores > 0)
        order = sorted(held, key=lambda row: (-float(ranked[row]), int(self.keys[row])))
        return [int(self.keys[row]) for row in order[:limit]]


def open_engine(name: str, directory: Path, postgres_url: str | None) -> Any:
    """A fresh engine of kind ``name``, its files under ``directory``."""
    if name == "local":
        from hotdata_retrieval.engines.local import LocalEngine

        return LocalEngine(directory / "local")
    if name == "sqlite":
        from hotdata_retrieval.engines.sqlite import SqliteEngine

        return SqliteEngine(directory / "store.sqlite")
    if name == "duckdb":
        from hotdata_retrieval.engines.duckdb import DuckdbEngine

        return DuckdbEngine(directory / "store.duckdb")
    if name == "lancedb":
        from hotdata_retrieval.engines.lancedb import LancedbEngine

        return LancedbEngine(directory / "lance")
    from hotdata_retrieval.engines.postgres import PostgresEngine

    return PostgresEngine(postgres_url)


def pages(
    engine: Any, queries: Sequence[tuple[str, list[float]]]
) -> tuple[dict[str, list[list[Any]]], list[list[tuple[int, float]]]]:
    """Each kind's page of keys, per query, and each text page's ``(key, score)`` rows."""
    from hotdata_retrieval.plan.search import (
        Bm25Search,
        NearestNeighborSearch,
        ReciprocalRankFusion,
        SearchPlan,
    )

    found: dict[str, list[list[Any]]] = {kind: [] for kind in KINDS}
    scored: list[list[tuple[int, float]]] = []
    for text, vector in queries:
        branches = {
            "text": Bm25Search(table="docs", column="body", query_text=text, allow_empty=True),
            "nearest": NearestNeighborSearch(
                table="docs", column="embedding", query_vector=vector, metric="cosine"
            ),
        }
        branches["hybrid"] = ReciprocalRankFusion(
            branches=[branches["text"], branches["nearest"]], rank_constant=60, depth=DEPTH
        )
        for kind in KINDS:
            result = engine.search(SearchPlan(source=branches[kind], limit=LIMIT))
            found[kind].append([int(key) for key in result.keys])
            if kind == "text":
                scored.append([(int(hit.key), float(hit.score)) for hit in result.hits])
    return found, scored


def sqlite_cost(engine: Any, queries: Sequence[tuple[str, list[float]]], rounds: int) -> Any:
    """Median milliseconds per query of SQLite's text branch (BM25 computed in SQL, the
    compiled statement) and of FTS5's own ``bm25()`` over the same FTS5 table, the same
    columns and cut, run alternately on one connection."""
    import sqlglot
    from sqlglot import exp

    from hotdata_retrieval.compile import to_sql
    from hotdata_retrieval.compile.sqlite import fts5_query
    from hotdata_retrieval.plan.search import Bm25Search, SearchPlan

    native = sqlglot.parse_one(
        """
        SELECT base.id, base.body, -bm25(fts.docs__body__fts) AS score
        FROM main.docs__body__fts AS fts JOIN main.docs AS base ON base.rowid = fts.rowid
        WHERE fts.docs__body__fts MATCH :query
        ORDER BY score DESC, base.id ASC LIMIT :limit
        """,
        read="sqlite",
    )
    computed, fts5 = [], []
    for _ in range(rounds):
        for text, _vector in queries:
            branch = Bm25Search(table="docs", column="body", query_text=text, allow_empty=True)
            statement = to_sql(SearchPlan(source=branch, limit=LIMIT), engine.profile)
            matched = exp.replace_placeholders(
                native.copy(),
                query=exp.Literal.string(fts5_query(text)),
                limit=exp.Literal.number(LIMIT),
            ).sql("sqlite")
            for sql, times in ((statement, computed), (matched, fts5)):
                start = time.perf_counter()
                engine._query(sql)
                times.append((time.perf_counter() - start) * 1000)
    return statistics.median(computed), statistics.median(fts5)


def lancedb_cost(engine: Any, queries: Sequence[tuple[str, list[float]]], rounds: int) -> Any:
    """Median milliseconds per query of LanceDB's text branch as the engine runs it (every
    match fetched and scored by the documented BM25) and of LanceDB's own ranked full-text
    query of the same terms (its ``_score``, the first ``LIMIT`` rows), alternated."""
    from lancedb.query import FullTextOperator, MatchQuery

    from hotdata_retrieval.analysis import indexed_text, terms_column
    from hotdata_retrieval.plan.search import Bm25Search, SearchPlan

    opened = engine._table("docs")
    scored, native = [], []
    for _ in range(rounds):
        for text, _vector in queries:
            branch = Bm25Search(table="docs", column="body", query_text=text, allow_empty=True)
            plan = SearchPlan(source=branch, limit=LIMIT)
            match = MatchQuery(
                indexed_text(text), terms_column("body"), operator=FullTextOperator.OR
            )
            start = time.perf_counter()
            engine.search(plan)
            scored.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            if indexed_text(text):
                opened.search(match, query_type="fts").select(["id", "body"]).limit(LIMIT).to_list()
            native.append((time.perf_counter() - start) * 1000)
    return statistics.median(scored), statistics.median(native)


def compare_text(
    reference: Reference,
    queries: Sequence[tuple[str, list[float]]],
    scored: list[list[tuple[int, float]]],
    *,
    quantised: bool,
) -> tuple[float, float, float, list[str]]:
    """Against the reference (lengths quantised as tantivy stores them with ``quantised``):
    the share of identical top-10 pages, the largest ``|score - reference|`` and the largest
    ``|score - reference| / reference`` over every returned row, and a line per differing
    page naming the first two rows out of the reference's order and their reference scores."""
    import numpy as np

    row_of = {int(key): row for row, key in enumerate(reference.keys)}
    same, largest, relative, differences = 0, 0.0, 0.0, []
    for (text, _vector), page in zip(queries, scored):
        scores = reference.scores(text, quantised=quantised)
        expected = reference.top(scores, LIMIT, float32=quantised)
        keys = [key for key, _ in page]
        for key, score in page:
            wanted = float(scores[row_of[key]])
            largest = max(largest, abs(score - wanted))
            relative = max(relative, abs(score - wanted) / wanted if wanted else math.inf)
        if keys == expected:
            same += 1
            continue
        place = next(i for i, (a, b) in enumerate(zip(keys, expected)) if a != b)
        a, b = keys[place], expected[place]
        sa, sb = float(scores[row_of[a]]), float(scores[row_of[b]])
        tie = np.float32(sa) == np.float32(sb) or abs(sa - sb) <= 4e-7 * max(sa, sb)
        differences.append(
            f"claim {text[:48]!r}: place {place + 1} is {a} (reference {sa:.7f}) where the "
            f"reference has {b} ({sb:.7f})"
            + ("; a float32 tie: equal within float32 rounding, broken by key" if tie else "")
        )
    return same / len(scored), largest, relative, differences


def measure(options: argparse.Namespace) -> dict[str, Any]:
    """Per store and kind: (mean overlap with the local page, share of identical pages); per
    engine, the text pages against the reference (:func:`compare_text`); SQLite's cost."""
    from hotdata_retrieval.engines.postgres import throwaway_server

    table, queries = read_data(options.data, options.documents, options.queries)
    reference = Reference(table.column("id").to_pylist(), table.column("body").to_pylist())
    results: dict[str, Any] = {"overlap": {}, "text": {}}
    with tempfile.TemporaryDirectory(prefix="hdq-parity-") as directory, throwaway_server() as url:
        found = {}
        for name in ("local", *STORES):
            (Path(directory) / name).mkdir()
            engine = open_engine(name, Path(directory) / name, url)
            engine.load_table("docs", table, key_column="id", text_columns=["body"])
            found[name], scored = pages(engine, queries)
            results["text"][name] = compare_text(reference, queries, scored, quantised=False)
            if name == "local":
                results["quantised"] = compare_text(reference, queries, scored, quantised=True)
            if name == "sqlite":
                results["cost"] = sqlite_cost(engine, queries, options.rounds)
            if name == "lancedb":
                results["lancedb cost"] = lancedb_cost(engine, queries, options.rounds)
            close = getattr(engine, "close", None)
            if close is not None:
                close()
            print(f"{name}: done", file=sys.stderr)
        for name in STORES:
            results["overlap"][name] = {}
            for kind in KINDS:
                pairs = list(zip(found[name][kind], found["local"][kind]))
                overlap = sum(len(set(a) & set(b)) / LIMIT for a, b in pairs) / len(pairs)
                same = sum(a == b for a, b in pairs) / len(pairs)
                results["overlap"][name][kind] = (overlap, same)
    return results


def report(results: dict[str, Any], options: argparse.Namespace) -> str:
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        f"Measured {when} with `{_report.command()}` on {_report.machine('tantivy')}, load "
        f"{_report.load_average()}; {options.documents} SciFact abstracts, {options.queries} "
        f"test claims, limit {LIMIT}, RRF depth {DEPTH}.",
        "",
        "Text pages against the NumPy reference of the documented BM25 (the local engine also "
        "against the reference with tantivy's one-byte lengths, float32 order):",
        "",
        "| engine | identical top 10 | max abs. score difference | max rel. difference |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, (same, largest, relative, _) in results["text"].items():
        lines.append(f"| {name} | {same:.0%} | {largest:.1e} | {relative:.1e} |")
    same, largest, relative, differences = results["quantised"]
    lines.append(
        f"| local, against one-byte lengths | {same:.0%} | {largest:.1e} | {relative:.1e} |"
    )
    if differences:
        lines += ["", "The local engine's pages that differ from the one-byte reference:", ""]
        lines += [f"- {line}" for line in differences]
    computed, fts5 = results["cost"]
    lines += [
        "",
        f"SQLite, median per text query ({options.rounds} rounds, alternated): BM25 computed "
        f"in SQL {computed:.2f} ms, FTS5's own `bm25()` {fts5:.2f} ms ({computed / fts5:.1f}x). "
        f"LanceDB: the engine's whole text search (the table opened at its complete version, "
        f"the plan checked, every match fetched and scored by the formula) "
        f"{results['lancedb cost'][0]:.2f} ms, LanceDB's own ranked query of the same terms "
        f"alone {results['lancedb cost'][1]:.2f} ms "
        f"({results['lancedb cost'][0] / results['lancedb cost'][1]:.1f}x).",
        "",
        "Mean overlap of each store's page with the local engine's (identical pages, same "
        "order, in brackets):",
        "",
        "| store | " + " | ".join(KINDS) + " |",
        "| --- | " + " | ".join("---:" for _ in KINDS) + " |",
    ]
    for name, kinds in results["overlap"].items():
        cells = [f"{kinds[kind][0]:.3f} ({kinds[kind][1]:.0%})" for kind in KINDS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the SQLite cost")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--write", type=Path, default=None)
    options = parser.parse_args(argv)
    sys.path.insert(0, str(options.tree.resolve()))
    results = measure(options)
    _report.publish(report(results, options), options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
