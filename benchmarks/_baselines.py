"""The independent BM25 baseline the quality scripts compare the library's text branch with."""

from __future__ import annotations

from collections.abc import Callable, Sequence


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
