"""Highlights: where a hit's text matches the query, as character offsets into the stored
text, and bounded snippets around them.

The matching is the BM25 side's own (:func:`~hotdata_retrieval.analysis.analyze_text`:
NFKC normalization, case folding, the stop words and the stemmer every store's index shares),
so every engine gives the same offsets for the same row. The text is cut into words as the
analysis's tokenizer cuts it (runs of letters and digits, a word's combining marks kept with
it), each word analysed on its own; a word matches when one of its terms is a term of the
query. Offsets count Python ``str`` characters (code points) into the text as stored, before
any normalization: ``text[start:end]`` is the matched word as written (``"Runs"`` for the
query ``running``, ``"Cafe\\u0301"`` for ``café``, a CJK run whole).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hotdata_retrieval.analysis import analyze_text

_WORD = re.compile(
    r"(?:[^\W_]|[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f])+"
)
"""A word as the analysis's tokenizer reads one: letters and digits (Unicode's), with the
combining marks that normalization composes into them."""


def matched_spans(query: str, text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each word of ``text`` holding a BM25 term of ``query``, in order.

    >>> text = "Runs and the run; CAFE\\u0301 open"
    >>> [text[start:end] for start, end in matched_spans("running café", text)]
    ['Runs', 'run', 'CAFE\u0301']
    """
    wanted = set(analyze_text(query))
    if not wanted:
        return []
    spans = []
    for match in _WORD.finditer(text):
        if wanted.intersection(analyze_text(match.group())):
            spans.append((match.start(), match.end()))
    return spans


def fragments_of(
    text: str, spans: Sequence[tuple[int, int]], *, size: int, count: int
) -> list[dict[str, Any]]:
    """Up to ``count`` snippets of ``text``, each at most ``size`` characters (a match longer
    than ``size`` is cut): the first around the first match, each next around the first
    match no earlier snippet holds, in text order; without a match, the text's start.

    Each snippet is ``{"start", "end", "text", "matches"}``: its offsets into ``text``, its
    characters, and the ``(start, end)`` of the matches it holds, in ``text``'s offsets.
    """
    if not spans:
        return [{"start": 0, "end": min(size, len(text)), "text": text[:size], "matches": []}]
    chosen: list[tuple[int, int]] = []
    for start, end in spans:
        if len(chosen) >= count:
            break
        if any(low <= start and end <= high for low, high in chosen):
            continue
        room = max(0, size - (end - start))
        low = max(0, start - room // 2)
        high = min(len(text), low + size)
        low = max(0, high - size)
        chosen.append((low, high))
    return [
        {
            "start": low,
            "end": high,
            "text": text[low:high],
            "matches": [[s, e] for s, e in spans if low <= s and e <= high],
        }
        for low, high in sorted(chosen)
    ]


def highlight(query: str, text: str, *, size: int, count: int) -> dict[str, Any]:
    """``{"matches": [[start, end], ...], "fragments": [...]}`` of ``text`` for ``query``
    (:func:`matched_spans`, :func:`fragments_of`)."""
    spans = matched_spans(query, text)
    return {
        "matches": [[start, end] for start, end in spans],
        "fragments": fragments_of(text, spans, size=size, count=count),
    }
