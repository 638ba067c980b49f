"""Keys that need no check one by one (all ``int`` or all ``str``, none repeated in a list)
are fused as keys checked one by one are: the same hits, scores to the bit, ranks and
errors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval import KeyTypeError, PlanError, reciprocal_rank_fusion
from hotdata_retrieval.fusion import competition_ranks, min_max_fusion


class _Key(int):
    """An int the plain-key check does not take (a subclass): checked key by key."""


def _ranked(keys: list[int], raw: list[int]) -> tuple[list[int], list[float]]:
    scores = sorted((float(value) for value in raw[: len(keys)]), reverse=True)
    return keys[: len(scores)], scores


lists = st.lists(st.integers(0, 40), unique=True, max_size=30)
raws = st.lists(st.integers(0, 5), min_size=30, max_size=30)


@given(lists, lists, lists, raws, raws, raws, st.sampled_from([1, 2, 3]))
def test_plain_keys_fuse_as_checked_keys(
    first: list[int],
    second: list[int],
    third: list[int],
    first_raw: list[int],
    second_raw: list[int],
    third_raw: list[int],
    branches: int,
) -> None:
    ranked = [
        _ranked(keys, raw)
        for keys, raw in ((first, first_raw), (second, second_raw), (third, third_raw))
    ][:branches]
    keys = [branch_keys for branch_keys, _ in ranked]
    ranks = [competition_ranks(scores) for _, scores in ranked]
    weights = [0.5, 2.0, 1.0][:branches]
    checked = [[_Key(key) for key in branch_keys] for branch_keys in keys]
    for fuse in (
        lambda lists: reciprocal_rank_fusion(lists, ranks=ranks, weights=weights, limit=12),
        lambda lists: min_max_fusion(
            lists,
            [scores for _, scores in ranked],
            higher_is_better=[True] * branches,
            weights=weights,
            ranks=ranks,
        ),
    ):
        plain = [(hit.key, hit.score, hit.ranks) for hit in fuse(keys)]
        expected = [(int(hit.key), hit.score, hit.ranks) for hit in fuse(checked)]
        assert plain == expected
        assert all(type(key) is int for key, _, _ in plain)


def test_rrf_scores_are_the_terms_added_in_branch_order() -> None:
    hits = reciprocal_rank_fusion([["a", "b"], ["b", "c"]], weights=[0.3, 0.7], rank_constant=1)
    scores = {hit.key: hit.score for hit in hits}
    assert scores == {"a": 0.3 / 2 + 0.0, "b": 0.3 / 3 + 0.7 / 2, "c": 0.0 + 0.7 / 3}
    three = reciprocal_rank_fusion(
        [["a", "b"], ["b", "c"], ["c", "a"]], weights=[0.3, 0.7, 0.2], rank_constant=1
    )
    assert {hit.key: hit.score for hit in three} == {
        "a": 0.3 / 2 + 0.0 + 0.2 / 3,
        "b": 0.3 / 3 + 0.7 / 2 + 0.0,
        "c": 0.0 + 0.7 / 3 + 0.2 / 2,
    }


@pytest.mark.parametrize(
    ("lists", "error"),
    [
        ([[1, 2, 1], [3]], PlanError),  # repeated within a list
        ([[1, 2], ["3"]], KeyTypeError),  # kinds mixed across lists
        ([[1, None], [3]], KeyTypeError),
        ([[1.0, math.nan], [3]], KeyTypeError),
    ],
)
def test_keys_that_are_not_plain_are_checked(lists: list[list[object]], error: type) -> None:
    with pytest.raises(error):
        reciprocal_rank_fusion(lists)


def test_ranks_of_plain_keys_are_checked() -> None:
    with pytest.raises(PlanError, match="not a competition rank"):
        reciprocal_rank_fusion([[1, 2, 3]], ranks=[[1, 1, 2]])
