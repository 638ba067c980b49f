"""Baselines the benchmarks compare the library with: the independent BM25 ranking the quality
scripts check the text branch against (bm25s), and raw tantivy, the floor of a text search's
speed (``bench_text.py``, ``bench_engine.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def bm25s_rankings(
    bodies: Sequence[str],
    queries: Sequence[str],
    *,
    limit: int,
    k1: float = 1.5,
    b: float = 0.75,
    analyze: Callable[[str], list[str]] | None = None,
) -> list[list[int]]:
    """Each query's top ``limit`` documents by bm25s (its Lucene variant of BM25, parameters
    ``k1`` and ``b``): positions in ``bodies``, best first, documents matching no query term
    left out (score 0).

    ``analyze`` (text → terms, for documents and queries alike) replaces bm25s's own analysis,
    its English stop words and PyStemmer's English stemmer: with the library's analysis it
    sets BM25's parameters apart from the terms.
    """
    import bm25s

    if analyze is None:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        corpus = bm25s.tokenize(list(bodies), stopwords="en", stemmer=stemmer, show_progress=False)
        asked = bm25s.tokenize(list(queries), stopwords="en", stemmer=stemmer, show_progress=False)
    else:
        documents = [analyze(body) for body in bodies]
        questions = [analyze(query) for query in queries]
        vocabulary: dict[str, int] = {}
        for terms in (*documents, *questions):
            for term in terms:
                vocabulary.setdefault(term, len(vocabulary))
        corpus, asked = (
            bm25s.tokenization.Tokenized(
                ids=[[vocabulary[term] for term in terms] for terms in texts], vocab=vocabulary
            )
            for texts in (documents, questions)
        )
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b)
    retriever.index(corpus, show_progress=False)
    results, scores = retriever.retrieve(
        asked, k=min(limit, len(bodies)), show_progress=False, n_threads=1
    )
    return [
        [int(document) for document, score in zip(results[row], scores[row]) if score > 0]
        for row in range(len(queries))
    ]


def raw_tantivy_index(
    directory: Path,
    texts: Sequence[str | None],
    *,
    analyzer: Callable[[], Any] | None = None,
    normalize: Callable[[str], str] | None = None,
    threads: int | None = None,
) -> Any:
    """The texts indexed by tantivy directly, as a ``tantivy.Index`` at ``directory`` (created):
    ``rowid`` (stored, fast) and ``text``; a ``None`` text is no document.

    By default the same schema and analysis as the local engine's BM25 index, written without
    the library, with tantivy's default writer threads. ``analyzer`` (a factory of
    ``tantivy.TextAnalyzer``) and ``normalize`` (text → text, applied before analysis) replace
    the library's analysis, to compare analysis policies on one index layout; ``threads`` sets
    the writer's threads (1 makes the segments, and so tantivy's order of tied hits, repeatable).
    """
    import tantivy

    from hotdata_retrieval.analysis import normalize_text, text_analyzer
    from hotdata_retrieval.engines.local.bm25 import ANALYZER_NAME

    normalize = normalize or normalize_text
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("rowid", stored=True, fast=True, indexed=False)
    builder.add_text_field("text", stored=False, tokenizer_name=ANALYZER_NAME)
    directory.mkdir(parents=True)
    index = tantivy.Index(builder.build(), path=str(directory))
    index.register_tokenizer(ANALYZER_NAME, (analyzer or text_analyzer)())
    options = {} if threads is None else {"num_threads": threads}
    writer = index.writer(heap_size=128 * 1024 * 1024, **options)
    for rowid, text in enumerate(texts):
        if text is None:
            continue
        document = tantivy.Document()
        document.add_unsigned("rowid", rowid)
        document.add_text("text", normalize(text))
        writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def raw_tantivy_rowids(searcher: Any, schema: Any, terms: Sequence[str], k: int) -> list[int]:
    """The rowids of tantivy's top ``k`` for a disjunction of ``terms`` (analysed already) on
    an index of :func:`raw_tantivy_index`, best first, read from the ``rowid`` fast field in
    one batch; no count. No terms, no hits. Rows tied at the k-th place are cut in tantivy's
    own order."""
    import tantivy

    if not terms:
        return []
    disjunction = tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", term)) for term in terms]
    )
    hits = searcher.search(disjunction, limit=k, count=False).hits
    rowids: list[int] = searcher.fast_field_values("rowid", [address for _, address in hits])
    return rowids


def raw_tantivy_search(index: Any, keys: Any) -> Callable[[str, int], list[Any]]:
    """The floor of a text search on ``index`` (:func:`raw_tantivy_index`): ``(query text, k)``
    → the keys of tantivy's top ``k``, best first.

    What any caller of tantivy pays for the answer: the query text analysed by the library's
    analysis, a disjunction of term queries, tantivy's top ``k`` (no count), the rowids read
    from the ``rowid`` fast field in one batch and the keys looked up in ``keys`` (a NumPy
    array, rowid → key). Rows tied at the k-th place are cut in tantivy's own order."""
    import numpy as np

    from hotdata_retrieval.analysis import normalize_text, text_analyzer

    searcher = index.searcher()
    schema = index.schema
    analyzer = text_analyzer()

    def search(query: str, k: int) -> list[Any]:
        rowids = raw_tantivy_rowids(searcher, schema, analyzer.analyze(normalize_text(query)), k)
        result: list[Any] = keys[np.array(rowids, dtype=np.int64)].tolist()
        return result

    return search
