"""The library's one analysis of text: how a document and a query become BM25 terms.

Every engine that ranks text by BM25 matches the same terms, because the library — not each
store — analyses the text, in two steps:

1. **Normalization** (:func:`normalize_text`): NFKC, then case folding (Python's
   ``unicodedata`` and ``str.casefold``), so a decomposed ``é`` (NFD), a full-width ``fox``
   (U+FF46...) or a ligature ``fi`` (U+FB01) is the same text as its composed, half-width or
   plain form; then every combining mark left over that the tokenizer would end a word at is
   dropped, so a word keeps its letters together (case folding writes ``İ`` as ``i`` +
   U+0307 COMBINING DOT ABOVE, which no precomposed form absorbs: ``İstanbul`` would
   otherwise be the two words ``i`` and ``stanbul`` and miss ``istanbul``).
2. **tantivy's analyzer** (:func:`text_analyzer`): the ``simple`` tokenizer (a word is a run
   of alphanumeric characters, Rust's ``char::is_alphanumeric``; everything else separates
   words), lower-casing, the English stop words :data:`STOP_WORDS` and the English
   (Snowball) stemmer; a term longer than :data:`MAX_TERM_BYTES` bytes is dropped.

So ``v1.1.6`` is the terms ``v1 1 6``, ``38.101`` is ``38 101``, ``"--error-on-warnings"``
is ``error warn`` and ``ＣＡＦÉ`` is ``café``. A term holds only alphanumeric characters, so
terms joined by spaces are text every store's plainest tokenizer splits back into exactly
those terms: the local engine indexes the normalized text with the analyzer; SQLite, DuckDB
and PostgreSQL index each row's :func:`indexed_text` (with their own stemming, stop words
and folding turned off) and are asked for the query's :func:`analyze_text` terms. Query
syntax in the user's text is never syntax anywhere: it is not in the terms.

Single letters and digits are terms (``author's`` is ``author s``, ``T cells`` is ``t cell``,
``vitamin A`` is ``vitamin a``), and the stop words are NLTK's English list less its single
letters, both by measurement (``benchmarks/quality/bench_text_analysis.py``: tantivy's BM25 top
100 of each policy on SciFact's test and train claims and on every Cranfield query, nDCG@10
and recall@100 by ir-measures, paired 95% intervals):

- NLTK's list (145 words: 'what', 'how', 'can', 'which', 'have', ...) in place of Lucene's
  33 ('a', 'the', 'of', ...): Cranfield nDCG@10 0.3687 to 0.3756 (+0.0069 [+0.000, +0.014]),
  recall@100 +0.0125 [+0.004, +0.022]; SciFact test 0.6838 to 0.6917 (+0.0079 [+0.002,
  +0.015]), recall@100 -0.0007; SciFact train +0.0011 [-0.003, +0.005]. bm25s (k1 1.5, its
  Lucene list) scores 0.3730, 0.6863 and 0.6964: the analysis closes the gap that tantivy's
  fixed k1 of 1.2 leaves (tantivy-py 0.27 sets neither k1 nor b; tantivy issue #2924).
- Against that analysis, NLTK's list with its single letters too ('s', 't', 'd', ...):
  Cranfield -0.0010, SciFact test -0.0105 (``T cells``, ``IL 6``, ``5 HT``); every single
  ASCII letter a stop word: Cranfield -0.0016, SciFact test -0.0078.
- Single letters dropped from the query only, the index unchanged
  (``benchmarks/quality/bench_single_letters.py``, SciFact test and Cranfield pooled, 525
  queries): every letter -0.0027 nDCG@10, NLTK's eight -0.0029, the letters typed in lower case
  only +0.0001; no policy gains, so a query keeps its single letters on every store.
"""

from __future__ import annotations

import functools
import hashlib
import math
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tantivy


def normalize_text(text: str) -> str:
    """The analysis's first step, at index and query time alike: NFKC, case folding, then
    the combining marks the tokenizer would split a word at dropped (module docstring).

    >>> normalize_text("Cafe\\u0301 \\uff26\\uff2f\\uff38 \\ufb01sh \\u0130stanbul")
    'café fox fish istanbul'
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():
        return folded
    return folded.translate(_word_splitting_marks())


STOP_WORDS: tuple[str, ...] = (
    "about",
    "above",
    "after",
    "again",
    "against",
    "ain",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "couldn",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "ma",
    "me",
    "mightn",
    "more",
    "most",
    "mustn",
    "my",
    "myself",
    "needn",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "wouldn",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
)
"""The analysis's English stop words, matched after lower-casing and before stemming: the
English list of NLTK's ``stopwords`` corpus (179 words; bm25s ships it as
``STOPWORDS_EN_PLUS``) without its 8 single letters, which stay terms, and its 26 contractions
with an apostrophe, which the tokenizer splits (``don't`` is ``don`` and ``t``; ``don`` is
here). Chosen by measurement (module docstring)."""


MAX_TERM_BYTES = 255
"""The longest term, in bytes of UTF-8: a longer run of letters and digits (a base64 blob, a
hash chain, a long identifier) is no term, on every store. Each store then takes every term:
PostgreSQL's GIN index refuses an entry of more than about 2,700 bytes ("index row size ...
exceeds maximum", a third of its 8 kB page), which failed the whole load. 255 is Lucene's
``StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH`` (in characters; Lucene splits a longer token
into pieces, where this analysis drops it, as tantivy's ``RemoveLongFilter`` does:
``src/tokenizer/remove_long.rs``, "removes tokens that are longer than a given number of
bytes")."""

TEXT_ANALYSIS = (
    "nfkc-casefold simple lowercase stop-english-"
    + hashlib.sha256(" ".join(STOP_WORDS).encode("utf-8")).hexdigest()[:12]
    + f" snowball-english remove-long-{MAX_TERM_BYTES}"
)
"""What makes a text's BM25 terms, as one string: the steps of :func:`analyze_text` and a
digest of :data:`STOP_WORDS`. The local engine records it with every table it indexes, and
warns on opening a table indexed by another analysis (an earlier release's): such a table's
terms differ from its queries' until it is loaded again."""


def text_analyzer(stop_words: Iterable[str] = STOP_WORDS) -> tantivy.TextAnalyzer:
    """A fresh tantivy analyzer of the second step: ``simple`` tokenizer, lower-casing,
    English stop words, English Snowball stemmer, and no term longer than
    :data:`MAX_TERM_BYTES` bytes. The local engine registers this analyzer
    on its BM25 indexes.

    Args:
        stop_words: the lower-case words dropped; :data:`STOP_WORDS`, the analysis's own,
            unless a measurement compares another list
            (``benchmarks/quality/bench_text_analysis.py``).

    Raises:
        TypeError: ``stop_words`` is a single string, or holds something other than
            strings.
    """
    import tantivy

    if isinstance(stop_words, (str, bytes)):
        raise TypeError(f"stop_words must be a collection of words, not the text {stop_words!r}")
    words = list(stop_words)
    for word in words:
        if not isinstance(word, str):
            raise TypeError(f"stop_words must hold words (strings), got {word!r}")

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.custom_stopword(words))
        .filter(tantivy.Filter.stemmer("english"))
        .filter(tantivy.Filter.remove_long(MAX_TERM_BYTES + 1))  # drops len >= its limit
        .build()
    )


@functools.cache
def _shared_analyzer() -> tantivy.TextAnalyzer:
    return text_analyzer()


@functools.cache
def _word_tokenizer() -> tantivy.TextAnalyzer:
    import tantivy

    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).build()


def analyze_text(text: str) -> tuple[str, ...]:
    """The BM25 terms of ``text``, in order, repeats kept (a query term given twice counts
    twice, as in the local engine's disjunction of term queries); empty for text of only
    punctuation or stop words.

    >>> analyze_text('Running v1.1.6 "--error-on-warnings" ＣＡＦÉ')
    ('run', 'v1', '1', '6', 'error', 'warn', 'café')
    """
    return tuple(_shared_analyzer().analyze(normalize_text(text)))


def text_words(text: str, *, fold_case: bool = True) -> tuple[str, ...]:
    """The normalized words of ``text`` before stop words and stemming: runs of alphanumeric
    characters after NFKC and (with ``fold_case``, the default) case folding, the combining
    marks the tokenizer would split a word at dropped. A plan's text branch holds a word when
    this is not empty; with ``fold_case=False`` the words keep the case the user typed (what
    ``query_syntax="terms"`` quotes for an engine that analyses text itself).

    >>> text_words('"--error-on-warnings" ＣＡＦÉ')
    ('error', 'on', 'warnings', 'café')
    >>> text_words("ERR-E1234 Cafe\u0301", fold_case=False)
    ('ERR', 'E1234', 'Café')
    """
    if fold_case:
        normalized = normalize_text(text)
    else:
        normalized = unicodedata.normalize("NFKC", text)
        if not normalized.isascii():
            normalized = normalized.translate(_word_splitting_marks())
    return tuple(_word_tokenizer().analyze(normalized))


def indexed_text(text: str) -> str:
    """``text``'s terms joined by single spaces: what a SQL store's full-text index holds
    for a row, so that splitting on spaces gives back :func:`analyze_text` exactly.

    >>> indexed_text("The disks are FULL")
    'disk full'
    """
    return " ".join(analyze_text(text))


BM25_K1 = 1.2
"""BM25's term-frequency saturation, tantivy's (``tantivy::query::bm25``, ``K1``): the one
value every store's text score uses."""
BM25_B = 0.75
"""BM25's length normalisation, tantivy's (``tantivy::query::bm25``, ``B``)."""


def bm25_score(
    query: Sequence[str],
    frequencies: Mapping[str, int],
    length: int,
    document_frequencies: Mapping[str, int],
    documents: int,
    average_length: float,
) -> float:
    """The documented BM25 of one row (tantivy's formula): ``Σ idf · (k1 + 1) · tf / (tf + k1
    · (1 - b + b · dl / avgdl))`` over the ``query`` terms (a term given twice counted twice),
    ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, k1 :data:`BM25_K1`, b :data:`BM25_B`;
    ``tf`` from the row's ``frequencies`` of the query's terms, ``dl`` its ``length`` (its
    number of terms), ``df`` from ``document_frequencies`` (rows holding each term), ``N`` is
    ``documents`` (rows with text) and ``avgdl`` their mean number of terms. A query term the
    row does not hold adds nothing. In float64; the SQL stores compute the same expression.

    One row of two terms among two rows of mean length 1.5, ``ln 2 · 2.2 / 2.5``:

    >>> round(bm25_score(["disk"], {"disk": 1}, 2, {"disk": 1}, 2, 1.5), 6)
    0.60997
    """
    score = 0.0
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average_length)
    for term in query:
        frequency = frequencies.get(term, 0)
        if not frequency:
            continue
        df = document_frequencies[term]
        idf = math.log(1 + (documents - df + 0.5) / (df + 0.5))
        score += idf * (BM25_K1 + 1) * frequency / (frequency + norm)
    return score


TERMS_SUFFIX = "__terms"
"""The ending of the column a store writes beside a text column to hold its terms."""


def terms_column(column: str) -> str:
    """The column beside text column ``column`` holding each row's :func:`indexed_text`,
    on the stores whose index cannot sit on a table of its own (PostgreSQL, LanceDB).

    >>> terms_column("body")
    'body__terms'
    """
    return column + TERMS_SUFFIX


@functools.cache
def _word_splitting_marks() -> dict[int, None]:
    """Every combining mark (Unicode category Mn or Me) that tantivy's ``simple`` tokenizer
    ends a word at, as a :meth:`str.translate` table that drops it. The tokenizer keeps
    alphanumeric characters only, and Rust's ``char::is_alphanumeric`` counts marks with the
    Other_Alphabetic property (Devanagari vowel signs, Hebrew points) as letters but not
    U+0301 or U+0307; the tokenizer itself is asked, once per process (about 0.2 s), so the
    table is exactly its rule."""
    simple = _word_tokenizer()
    marks = (
        chr(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Mn", "Me")
    )
    return {ord(mark): None for mark in marks if len(simple.analyze(f"a{mark}a")) != 1}
