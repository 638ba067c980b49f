"""The pure-Python reference fusion: hand-computed cases, invariants and errors."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval import PlanError, reciprocal_rank_fusion


def test_hand_computed_scores_and_order() -> None:
    hits = reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "a"]])
    assert [hit.key for hit in hits] == ["b", "a", "c"]
    scores = {hit.key: hit.score for hit in hits}
    assert scores["b"] == 1 / 62 + 1 / 61
    assert scores["a"] == 1 / 61 + 1 / 63
    assert scores["c"] == 1 / 63 + 1 / 62
    assert hits[0].ranks == (2, 1)


def test_weights_multiply_the_reciprocal_term() -> None:
    hits = reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0, 3.0], rank_constant=1)
    assert [(hit.key, hit.score) for hit in hits] == [("b", 1.5), ("a", 0.5)]


def test_missing_branches_contribute_nothing_and_rank_none() -> None:
    (hit,) = reciprocal_rank_fusion([["x"], []])
    assert hit.ranks == (1, None)
    assert hit.score == 1 / 61


def test_ties_break_on_key_ascending() -> None:
    hits = reciprocal_rank_fusion([["z", "q"], ["a", "m"]])
    assert [hit.key for hit in hits] == ["a", "z", "m", "q"]


def test_limit_and_offset_page_the_fused_list() -> None:
    keys = [hit.key for hit in reciprocal_rank_fusion([list("abcdef")], limit=2, offset=3)]
    assert keys == ["d", "e"]


@given(st.lists(st.integers(), unique=True, max_size=30))
def test_one_list_keeps_its_order(keys: list[int]) -> None:
    assert [hit.key for hit in reciprocal_rank_fusion([keys])] == keys


@given(
    st.lists(st.lists(st.integers(0, 40), unique=True, max_size=15), min_size=1, max_size=4),
    st.integers(1, 100),
)
def test_scores_are_non_increasing_and_every_key_appears_once(
    lists: list[list[int]], rank_constant: int
) -> None:
    hits = reciprocal_rank_fusion(lists, rank_constant=rank_constant)
    assert len({hit.key for hit in hits}) == len(hits) == len(set().union(*map(set, lists)))
    for before, after in itertools.pairwise(hits):
        assert (before.score, -before.key) >= (after.score, -after.key)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"weights": [1.0]}, "weights"),
        ({"weights": [1.0, -1.0]}, "weight"),
        ({"weights": [1.0, math.nan]}, "weight"),
        ({"rank_constant": 0}, "rank_constant"),
        ({"rank_constant": math.inf}, "rank_constant"),
        ({"offset": -1}, "limit"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(PlanError) as caught:
        reciprocal_rank_fusion([["a"], ["b"]], **kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field


def test_a_key_repeated_within_a_list_is_rejected() -> None:
    with pytest.raises(PlanError, match="appears twice"):
        reciprocal_rank_fusion([["a", "a"]])
