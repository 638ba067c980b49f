"""Hypothesis strategies for plans and their parts."""

from __future__ import annotations

import math
import struct
from typing import Any

from hypothesis import strategies as st

from hotdata_retrieval import (
    And,
    Bm25Search,
    Comparison,
    DistributionBasedScoreFusion,
    Fusion,
    InList,
    IsNull,
    MinMaxFusion,
    NearestNeighborSearch,
    Not,
    Or,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
)
from hotdata_retrieval.analysis import text_words
from hotdata_retrieval.plan.filters import Between, EndsWith, StartsWith
from hotdata_retrieval.plan.search import branch_names, is_vector_branch
from hotdata_retrieval.plan.values import FLOAT32_MAX

# Text a user might type: any unicode but NUL and lone surrogates, including quotes,
# backslashes, comment markers, semicolons and newlines.
query_texts = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=40,
).filter(lambda text: text.strip() != "")

tricky_texts = st.sampled_from(
    [
        "it's",
        "'; DROP TABLE docs; --",
        "a\\'b",
        "--",
        "/* x */",
        "x\n\r\ty",
        "ü é 漢字 🎉",
        "''",
        "\\",
    ]
)

identifiers = st.one_of(
    st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(["select", "order", "from", "Title", "my column", "1st", "user", "default"]),
)

finite_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
float32_range = st.floats(
    min_value=-3.4028234663852886e38, max_value=3.4028234663852886e38, allow_nan=False
)


def _float32(value: float) -> float:
    """``value`` rounded to Float32, as the engines' distance functions read it."""
    rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    return rounded


def usable_for_cosine(vector: list[float]) -> list[float]:
    """``vector``, or one like it that cosine distance takes: its first component 1.0 when it
    is zero once rounded to Float32 (``[1e-46, 0.0]``), and every other component within
    1e18 when its Float32 squared norm is no normal Float32 number (``[1e-30]``, ``[1e20]``):
    cosine distance needs a non-zero query vector whose squared norm Float32 holds."""
    squared = math.fsum(_float32(component) ** 2 for component in vector)
    if any(_float32(component) for component in vector) and 2.0**-126 <= squared <= FLOAT32_MAX:
        return vector
    return [1.0, *(max(-1e18, min(1e18, component)) for component in vector[1:])]


vectors = st.lists(float32_range, min_size=1, max_size=8).map(usable_for_cosine)

literals = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
        max_size=12,
    ),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    finite_floats,
    st.booleans(),
)

_texts = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
    max_size=12,
)

filter_columns = st.sampled_from(["lang", "year", "category", "status", "select"])


def _leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(
            Comparison,
            column=filter_columns,
            operator=st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
            value=literals,
        ),
        st.builds(
            InList,
            column=filter_columns,
            values=st.lists(literals, max_size=4),
            negated=st.booleans(),
        ),
        st.builds(IsNull, column=filter_columns, negated=st.booleans()),
        st.builds(StartsWith, column=filter_columns, prefix=_texts),
        st.builds(EndsWith, column=filter_columns, suffix=_texts),
        st.builds(Between, column=filter_columns, low=literals, high=literals),
    )


predicates = st.recursive(
    _leaf(),
    lambda children: st.one_of(
        st.builds(And, operands=st.lists(children, min_size=2, max_size=3)),
        st.builds(Or, operands=st.lists(children, min_size=2, max_size=3)),
        st.builds(Not, operand=children),
    ),
    max_leaves=6,
)

tables = st.sampled_from(["docs", "support.tickets", "f1.public.results", '"My Table"'])
sources = tables | st.lists(tables, min_size=2, max_size=3, unique=True)
"""What a branch searches: a table, or a union of two or three (a list)."""


def _has_a_word(text: str) -> bool:
    """Whether a text branch holds a word: the library's analysis splits one out of it."""
    return bool(text_words(text, fold_case=False))


word_texts = st.one_of(query_texts, tricky_texts).filter(_has_a_word)
"""Query text holding a word: what a text branch searches for (a query without one is
refused, unless ``allow_empty``); the engine-embedded branch embeds any text."""


def branches(table: str | list[str]) -> st.SearchStrategy[Any]:
    text = st.one_of(query_texts, tricky_texts)
    words = word_texts
    return st.one_of(
        st.builds(Bm25Search, table=st.just(table), column=st.just("body"), query_text=words),
        st.builds(VectorSearch, table=st.just(table), column=st.just("body"), query_text=text),
        st.builds(
            NearestNeighborSearch,
            table=st.just(table),
            column=st.just("embedding"),
            query_vector=vectors,
            metric=st.sampled_from(["cosine", "l2", "dot"]),
        ),
    )


@st.composite
def fusions(draw: st.DrawFn, table: str | list[str]) -> Fusion:
    """A fusion by any built-in method: reciprocal rank, min-max or distribution-based score
    fusion, with weights (or, for one text and one vector branch, alpha) and an optional
    minimum score; its branches mostly over ``table``, some over other tables and unions."""
    chosen = draw(st.lists(branches(table) | sources.flatmap(branches), min_size=2, max_size=4))
    weights = draw(
        st.none()
        | st.lists(
            st.floats(min_value=0, max_value=10, allow_nan=False),
            min_size=len(chosen),
            max_size=len(chosen),
        ).filter(lambda ws: any(w > 0 for w in ws))
    )
    min_score = draw(st.none() | st.floats(min_value=-1, max_value=2, allow_nan=False))
    method = draw(
        st.sampled_from([ReciprocalRankFusion, MinMaxFusion, DistributionBasedScoreFusion])
    )
    if method is ReciprocalRankFusion:
        rank_constant = draw(
            st.integers(min_value=1, max_value=100)
            | st.floats(min_value=0.5, max_value=100, allow_nan=False)
        )
        return ReciprocalRankFusion(
            branches=chosen, weights=weights, rank_constant=rank_constant, min_score=min_score
        )
    kinds = sorted(is_vector_branch(branch) for branch in chosen)
    if weights is None and kinds == [False, True] and draw(st.booleans()):
        alpha = draw(st.floats(min_value=0, max_value=1, allow_nan=False))
        return method(branches=chosen, alpha=alpha, min_score=min_score)
    return method(branches=chosen, weights=weights, min_score=min_score)


@st.composite
def plans(draw: st.DrawFn) -> SearchPlan:
    table = draw(sources)
    source = draw(branches(table) | fusions(table))
    include_branch_scores = draw(st.booleans())
    nearest = (
        [
            name
            for name, branch in zip(branch_names(source), source.branches)
            if isinstance(branch, NearestNeighborSearch)
        ]
        if isinstance(source, Fusion) and include_branch_scores
        else []
    )
    return SearchPlan(
        source=source,
        limit=draw(st.integers(min_value=1, max_value=50)),
        offset=draw(st.integers(min_value=0, max_value=20)),
        filter=draw(st.none() | predicates),
        columns=draw(st.none() | st.just(["id", "title"])),
        include_branch_scores=include_branch_scores,
        # the rows are read from every table the branches search: any nearest branch's
        # distance can be completed
        page_scores=draw(st.lists(st.sampled_from(nearest), unique=True)) if nearest else [],
    )
