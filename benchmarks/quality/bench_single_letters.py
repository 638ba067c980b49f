"""Query-side policies for single letters, measured on SciFact and Cranfield pooled.

Run from the repository root (needs ``pip install 'hotdata-retrieval[bench]'``)::

    python benchmarks/quality/bench_single_letters.py [--json PATH] [--write docs/benchmarks.md]

The library indexes and searches every single letter as a term (``vitamin A`` is ``vitamin
a``, ``T cells`` is ``t cell``, ``author's`` is ``author s``, and "a" and "I" too;
:mod:`hotdata_retrieval.analysis`). Each policy below leaves the index as it is and drops some
single-letter terms from the *query* only, so it could be applied identically on every store
(each store is asked for the query's terms). The text branch is tantivy's BM25 over the
library's analysis, as ``bench_text_analysis.py`` runs it (``title + " " + text``, the
disjunction of the query's term queries, top 100); nDCG@10 and recall@100 by ir-measures,
with the paired difference from the current analysis (95% bootstrap interval, 1,000
resamples, seed 0), for SciFact's test claims, Cranfield's queries, and both pooled (the
choice is made on the pool, never on one collection); SciFact's train claims are reported
apart. A query left with no term returns nothing (it scores 0).

Latency: each policy's text search per query (the query's analysis, the policy's filter, the
BM25 search of its top 100 and the read of their row ids) is timed side by side with the
others, each query :data:`ROUNDS` times by every policy in a rotating order, so the load of a
shared machine lands on every policy alike; a query's latency is the median of its rounds. The
table reports the median over the judged queries (ms) and the median of the per-query ratios
to ``current`` (25th to 75th percentile). A query left with no term costs its analysis only.

Policies:

- ``current``: every single letter is a query term;
- ``drop every single letter``: no single ASCII letter is a query term;
- ``drop lower-case single letters``: a single ASCII letter is dropped when the user typed it
  in lower case only (``a``, ``s`` of ``author's``), kept when typed in upper case (``vitamin
  A``, ``T cells``, ``I``);
- ``drop NLTK's single letters``: ``a``, ``d``, ``i``, ``m``, ``o``, ``s``, ``t``, ``y``
  (the single letters of NLTK's English stop words) are dropped, other letters kept.

This script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # measure the checked-out tree
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "quality"))

import _baselines  # noqa: E402  the raw tantivy index
import _report  # noqa: E402
import bench_text_analysis as base  # noqa: E402
import numpy as np  # noqa: E402

from hotdata_retrieval import tuning  # noqa: E402
from hotdata_retrieval.analysis import normalize_text, text_analyzer, text_words  # noqa: E402

LIMIT = 100
ROUNDS = 5
LETTERS = frozenset(string.ascii_lowercase)
NLTK_LETTERS = frozenset("adimosty")
MARK_START = "<!-- single-letters-benchmark:start -->"
MARK_END = "<!-- single-letters-benchmark:end -->"
QueryFilter = Callable[[str, list[str]], list[str]]


def _lower_case_letters(text: str, terms: list[str]) -> list[str]:
    typed = text_words(text, fold_case=False)
    upper = {word.lower() for word in typed if len(word) == 1 and word.isupper()}
    return [term for term in terms if term not in LETTERS or term in upper]


POLICIES: dict[str, QueryFilter] = {
    "current": lambda _text, terms: terms,
    "drop every single letter": lambda _text, terms: [t for t in terms if t not in LETTERS],
    "drop lower-case single letters": _lower_case_letters,
    "drop NLTK's single letters": lambda _text, terms: [t for t in terms if t not in NLTK_LETTERS],
}


def _runs(
    ids: list[str], bodies: list[str], queries: dict[str, str]
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """Each policy's top :data:`LIMIT` per query over one index of the library's analysis,
    and each policy's latency per query (ms, the median of :data:`ROUNDS` rounds, the
    policies in a rotating order)."""
    runs: dict[str, dict[str, dict[str, float]]] = {policy: {} for policy in POLICIES}
    latencies: dict[str, dict[str, float]] = {policy: {} for policy in POLICIES}
    with tempfile.TemporaryDirectory() as directory:
        index = _baselines.raw_tantivy_index(Path(directory) / "index", bodies, threads=1)
        searcher = index.searcher()
        analyzer = text_analyzer()

        def search(text: str, keep: QueryFilter) -> dict[str, float]:
            terms = keep(text, list(analyzer.analyze(normalize_text(text))))
            rowids = _baselines.raw_tantivy_rowids(searcher, index.schema, terms, LIMIT)
            return {ids[rowid]: float(LIMIT - position) for position, rowid in enumerate(rowids)}

        names = list(POLICIES)
        first = next(iter(queries.values()), "")
        for keep in POLICIES.values():  # one untimed warm-up search per policy
            search(first, keep)
        turn = 0
        for query_id, text in queries.items():
            times: dict[str, list[float]] = {policy: [] for policy in names}
            for _ in range(ROUNDS):
                shift = turn % len(names)
                turn += 1
                for policy in names[shift:] + names[:shift]:
                    start = time.perf_counter()
                    runs[policy][query_id] = search(text, POLICIES[policy])
                    times[policy].append((time.perf_counter() - start) * 1000)
            for policy in names:
                latencies[policy][query_id] = statistics.median(times[policy])
    return runs, latencies


def _affected(queries: dict[str, str], judged: list[str]) -> dict[str, int]:
    """Judged queries whose terms each policy changes."""
    analyzer = text_analyzer()
    counts = dict.fromkeys(POLICIES, 0)
    for query_id in judged:
        text = queries[query_id]
        analyzed = list(analyzer.analyze(normalize_text(text)))
        for policy, keep in POLICIES.items():
            counts[policy] += keep(text, analyzed) != analyzed
    return counts


def measure(data: Path) -> list[dict[str, Any]]:
    """One record per (collection split, policy): per-query values and the affected count."""
    records = []
    for name in ("scifact", "cranfield"):
        if not (data / name / "corpus.jsonl").is_file():
            continue
        base.DATA = data
        ids, bodies, queries, splits = base._collection(name)
        print(f"{name}: {len(bodies)} documents ...", file=sys.stderr)
        runs, latencies = _runs(ids, bodies, queries)
        for split, qrels in splits.items():
            judged = sorted((q for q in qrels if q in queries), key=lambda q: (len(q), q))
            affected = _affected(queries, judged)
            for policy, run in runs.items():
                values = tuning.measure_run(run, qrels, judged)
                records.append(
                    {
                        "collection": name,
                        "split": split,
                        "policy": policy,
                        "affected": affected[policy],
                        **{m: values[m].tolist() for m in tuning.MEASURES},
                        "ms": [latencies[policy][q] for q in judged],
                    }
                )
    return records


def report(records: list[dict[str, Any]], context: dict[str, str]) -> str:
    def delta(estimate: Any) -> str:
        return f"{estimate.mean:+.4f} [{estimate.low:+.3f}, {estimate.high:+.3f}]"

    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for record in records:
        label = "cranfield" if record["collection"] == "cranfield" else f"scifact {record['split']}"
        groups.setdefault(label, {})[record["policy"]] = record
    pool = [label for label in ("scifact test", "cranfield") if label in groups]
    if len(pool) == 2:
        groups["pooled (scifact test + cranfield)"] = {
            policy: {
                "affected": sum(groups[label][policy]["affected"] for label in pool),
                **{
                    m: [v for label in pool for v in groups[label][policy][m]]
                    for m in (*tuning.MEASURES, "ms")
                },
            }
            for policy in POLICIES
        }
    lines = [
        f"Measured {context['when']} on {context['machine']}; tantivy "
        f"{_report.package_version('tantivy')}, ir-measures "
        f"{_report.package_version('ir-measures')}; load average {context['load']} at the "
        "start.",
        f"Command: `{context['command']}`, from the repository root.",
        "",
        "Δ: paired difference from `current`, 95% bootstrap interval (1,000 resamples, seed 0). "
        f"Latency: each query {ROUNDS} times by every policy in a rotating order, a query's "
        "latency the median of its rounds; median ms over the judged queries; ratio: median of "
        "the per-query ratios to `current` (25th to 75th percentile).",
        "",
        "| queries | policy | queries changed | nDCG@10 | Δ nDCG@10 | recall@100 "
        "| Δ recall@100 | median ms | latency / current |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    order = [label for label in ("scifact test", "cranfield") if label in groups]
    order += [label for label in groups if label not in order]
    for label in order:
        policies = groups[label]
        current = policies["current"]
        count = len(current["nDCG@10"])
        samples = tuning.bootstrap_samples(count)
        for policy in POLICIES:
            cells = [f"{label} ({count})", policy, str(policies[policy]["affected"])]
            for measure in tuning.MEASURES:
                mine = np.asarray(policies[policy][measure])
                difference = tuning.estimate(mine - np.asarray(current[measure]), samples)
                cells += [f"{mine.mean():.4f}", delta(difference)]
            ms = policies[policy]["ms"]
            ratios = [mine / base for mine, base in zip(ms, current["ms"])]
            cells += [
                f"{statistics.median(ms):.3f}",
                f"{statistics.median(ratios):.2f}x ({_report.quantile(ratios, 0.25):.2f} to "
                f"{_report.quantile(ratios, 0.75):.2f})",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=base.DATA)
    parser.add_argument("--json", type=Path, metavar="PATH")
    parser.add_argument("--write", type=Path, metavar="PATH")
    options = parser.parse_args(argv)
    context = {
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _report.machine(),
        "command": _report.command(),
        "load": _report.load_average(),
    }
    records = measure(options.data)
    if options.json is not None:
        options.json.write_text(
            json.dumps({"context": context, "records": records}) + "\n", encoding="utf-8"
        )
    _report.publish(report(records, context), options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
