"""Token filter policies of the library's text analysis, measured against bm25s.

Run from the repository root (needs ``pip install 'hotdata-retrieval[bench]'``)::

    python benchmarks/quality/bench_text_analysis.py [--json PATH]

For every BEIR collection in ``../shared/data`` (SciFact: the train and the test split
scored apart; Cranfield: every query), each policy below indexes ``title + " " + text`` with
tantivy exactly as :mod:`hotdata_retrieval.engines.local.bm25` does (the library's
normalization, then the policy's analyzer; a query is the disjunction of its terms' term
queries, tantivy's BM25, k1 1.2, b 0.75, which tantivy-py cannot change), keeps each query's
top 100, and scores nDCG@10 and recall@100 with ir-measures, with the paired difference from
the current analysis (95% bootstrap interval, 1,000 resamples, seed 0). bm25s (Lucene
variant, k1 1.5, b 0.75, its English stop words and PyStemmer's English stemmer) runs on the
same text as the independent baseline.

Policies (each one change from the library's analysis: the ``simple`` tokenizer,
lower-casing, :data:`~hotdata_retrieval.analysis.STOP_WORDS` (NLTK's English list less its
single letters), the English stemmer):

- ``current``;
- ``Lucene's 33 stop words``: tantivy's ``stopword("english")`` list instead (the analysis
  before NLTK's list was chosen);
- ``NLTK's list with its single letters``: ``s``, ``t``, ``d``, ``m``, ``o``, ``y``, ``i``
  and ``a`` stop words too;
- ``drop single letters``: the 26 single ASCII letters become stop words (digits, longer
  letter-digit tokens and non-ASCII letters kept), so ``author's`` is ``author`` and "I am"
  is nothing;
- ``drop possessive s``: ``'s`` (or with U+2019) after a word removed before tokenizing,
  nothing else.

BM25's parameters, which tantivy-py cannot set (tantivy's k1 is 1.2 and b 0.75; tantivy
issue #2924), are measured apart: bm25s (Lucene variant) on the library's own terms (the
``current`` analysis's terms for every document and query), at k1 0.9, 1.2, 1.5 and 2.0 with
b 0.75, and b 0.5 and 0.9 with k1 1.2. Its k1 1.2, b 0.75 row differs from ``current`` only by
tantivy's one-byte document lengths and ties.

This script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import string
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # measure the checked-out tree
sys.path.insert(0, str(ROOT / "benchmarks"))

import _baselines  # noqa: E402  the independent BM25 baseline
import numpy as np  # noqa: E402
import tantivy  # noqa: E402

from hotdata_retrieval import tuning  # noqa: E402
from hotdata_retrieval.analysis import STOP_WORDS, normalize_text, text_analyzer  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
LIMIT = 100
ENGLISH_STOP_WORDS = tuple(
    "a an and are as at be but by for if in into is it no not of on or such that the their "  # noqa: SIM905
    "then there these they this to was will with".split()
)
"""tantivy's ``stopword("english")`` list (Lucene's English stop words)."""

POSSESSIVE = re.compile("(?<=\\w)['\u2019]s\\b")


def _nltk_stop_words() -> list[str]:
    """NLTK's English stop words (as bm25s ships them), its contractions left out: the
    tokenizer splits them into words the list holds."""
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return sorted(word for word in STOPWORDS_EN_PLUS if "'" not in word)


POLICIES: dict[str, tuple[Callable[[], tantivy.TextAnalyzer], Callable[[str], str]]] = {
    "current": (text_analyzer, normalize_text),
    "Lucene's 33 stop words": (lambda: text_analyzer(ENGLISH_STOP_WORDS), normalize_text),
    "NLTK's list with its single letters": (
        lambda: text_analyzer(_nltk_stop_words()),
        normalize_text,
    ),
    "drop single letters": (
        lambda: text_analyzer(sorted({*STOP_WORDS, *string.ascii_lowercase})),
        normalize_text,
    ),
    "drop possessive s": (
        text_analyzer,
        lambda text: POSSESSIVE.sub("", normalize_text(text)),
    ),
}


def _collection(name: str) -> tuple[list[str], list[str], dict[str, str], dict[str, Any]]:
    directory = DATA / name
    ids, bodies = [], []
    for line in (directory / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        ids.append(str(record["_id"]))
        bodies.append(f"{record.get('title') or ''} {record.get('text') or ''}".strip())
    queries = tuning.load_queries(directory)
    splits = {}
    for path in sorted((directory / "qrels").glob("*.tsv")):
        splits[path.stem] = tuning.load_qrels(path)[0]
    return ids, bodies, queries, splits


def _tantivy_run(
    policy: str, ids: list[str], bodies: list[str], queries: dict[str, str]
) -> dict[str, dict[str, float]]:
    make, normalize = POLICIES[policy]
    with tempfile.TemporaryDirectory() as directory:
        index = _baselines.raw_tantivy_index(
            Path(directory) / "index", bodies, analyzer=make, normalize=normalize, threads=1
        )
        searcher = index.searcher()
        analyzer = make()
        run: dict[str, dict[str, float]] = {}
        for query_id, text in queries.items():
            terms = analyzer.analyze(normalize(text))
            rowids = _baselines.raw_tantivy_rowids(searcher, index.schema, terms, LIMIT)
            run[query_id] = {
                ids[rowid]: float(LIMIT - position) for position, rowid in enumerate(rowids)
            }
    return run


def _bm25s_run(
    ids: list[str],
    bodies: list[str],
    queries: dict[str, str],
    **parameters: Any,
) -> dict[str, dict[str, float]]:
    """bm25s's top :data:`LIMIT` of each query, as ``{key: score}`` runs (the score falls with
    the rank); ``parameters`` go to :func:`_baselines.bm25s_rankings`."""
    rankings = _baselines.bm25s_rankings(bodies, list(queries.values()), limit=LIMIT, **parameters)
    return {
        query_id: {ids[row]: float(LIMIT - position) for position, row in enumerate(ranking)}
        for query_id, ranking in zip(queries, rankings)
    }


BM25_PARAMETERS = ((0.9, 0.75), (1.2, 0.75), (1.5, 0.75), (2.0, 0.75), (1.2, 0.5), (1.2, 0.9))
"""The (k1, b) pairs bm25s scores the library's terms with."""


def _bm25s_parameter_runs(
    ids: list[str], bodies: list[str], queries: dict[str, str]
) -> dict[str, dict[str, dict[str, float]]]:
    """bm25s on the ``current`` analysis's terms, one run per :data:`BM25_PARAMETERS` pair."""
    analyzer = text_analyzer()

    def analyze(text: str) -> list[str]:
        return list(analyzer.analyze(normalize_text(text)))

    return {
        f"bm25s, the library's terms, k1 {k1}, b {b}": _bm25s_run(
            ids, bodies, queries, k1=k1, b=b, analyze=analyze
        )
        for k1, b in BM25_PARAMETERS
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", type=Path, metavar="PATH")
    options = parser.parse_args(argv)
    lines = [
        "| collection | queries | analysis | nDCG@10 | Δ nDCG@10 | recall@100 | Δ recall@100 |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    records = []
    for name in sorted(path.name for path in DATA.iterdir() if (path / "corpus.jsonl").exists()):
        ids, bodies, queries, splits = _collection(name)
        print(f"{name}: {len(bodies)} documents ...", file=sys.stderr)
        runs = {policy: _tantivy_run(policy, ids, bodies, queries) for policy in POLICIES}
        runs["bm25s (baseline)"] = _bm25s_run(ids, bodies, queries)
        runs.update(_bm25s_parameter_runs(ids, bodies, queries))
        for split, qrels in splits.items():
            judged = sorted((q for q in qrels if q in queries), key=int)
            samples = tuning.bootstrap_samples(len(judged))
            base = tuning.measure_run(runs["current"], qrels, judged)
            for policy, run in runs.items():
                values = tuning.measure_run(run, qrels, judged)
                cells = [f"{name} {split}", str(len(judged)), policy]
                record: dict[str, Any] = {"collection": name, "split": split, "policy": policy}
                for measure in tuning.MEASURES:
                    mean = float(np.mean(values[measure]))
                    delta = tuning.estimate(values[measure] - base[measure], samples)
                    cells += [
                        f"{mean:.4f}",
                        f"{delta.mean:+.4f} [{delta.low:+.3f}, {delta.high:+.3f}]",
                    ]
                    record[measure] = {"mean": mean, "difference": delta.document()}
                lines.append("| " + " | ".join(cells) + " |")
                records.append(record)
    print("\n".join(lines))
    if options.json is not None:
        options.json.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
