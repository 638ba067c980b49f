"""The property tests' strategies draw only valid plan parts: a drawn plan that the plan
refuses would fail a property test at random, for a reason that is not the property's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from hotdata_retrieval import NearestNeighborSearch, SearchPlan
from tests.strategies import plans, usable_for_cosine, vectors


@pytest.mark.parametrize(
    "vector", [[1e-46, 0.0], [-1e-46], [5e-324, -5e-324, 0.0], [0.0], [-0.0, 0.0]]
)
def test_a_vector_that_is_zero_in_float32_is_made_usable_for_cosine(vector: list[float]) -> None:
    usable = usable_for_cosine(vector)
    assert usable == [1.0, *vector[1:]]
    NearestNeighborSearch(table="t", column="v", query_vector=usable, metric="cosine")


def test_a_vector_that_is_not_zero_in_float32_is_kept() -> None:
    for vector in ([2e-19, 0.0], [0.0, -3.0], [1.5], [1.8e19]):
        assert usable_for_cosine(vector) == vector


@pytest.mark.parametrize(
    ("vector", "usable"),
    [([1e-45, 0.0], [1.0, 0.0]), ([1e-30, 1e20], [1.0, 1e18]), ([3e19, -3e19], [1.0, -1e18])],
)
def test_a_vector_whose_squared_norm_float32_cannot_hold_is_made_usable(
    vector: list[float], usable: list[float]
) -> None:
    assert usable_for_cosine(vector) == usable
    NearestNeighborSearch(table="t", column="v", query_vector=usable, metric="cosine")


@settings(max_examples=200)
@given(vectors)
def test_drawn_vectors_are_valid_cosine_query_vectors(vector: list[float]) -> None:
    NearestNeighborSearch(table="t", column="v", query_vector=vector, metric="cosine")


@settings(max_examples=100, deadline=None)
@given(plans())
def test_drawn_plans_are_plans(plan: SearchPlan) -> None:
    assert plan.limit >= 1
