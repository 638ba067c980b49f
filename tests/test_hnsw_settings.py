"""HNSW settings: each bad value is refused naming it, and the defaults are the measured ones."""

from __future__ import annotations

from typing import Any

import pytest

from hotdata_retrieval import HnswSettingsError
from hotdata_retrieval.engines import HnswSettings


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("connectivity", 1),
        ("connectivity", 101),
        ("connectivity", 16.0),
        ("connectivity", True),
        ("connectivity", "16"),
        ("expansion_add", 3),
        ("expansion_add", 1001),
        ("expansion_add", None),
        ("expansion_search", 0),
        ("expansion_search", 1001),
        ("expansion_search", -64),
        ("storage", "f32"),
        ("storage", "bfloat16"),
        ("storage", 8),
    ],
)
def test_a_bad_value_is_refused_naming_it(setting: str, value: Any) -> None:
    with pytest.raises(HnswSettingsError) as raised:
        HnswSettings(**{setting: value})
    assert raised.value.setting == setting
    assert raised.value.value is value
    assert str(raised.value).startswith(setting)
    assert repr(value) in str(raised.value)


def test_the_bounds_themselves_are_accepted() -> None:
    low = HnswSettings(connectivity=2, expansion_add=4, expansion_search=1, storage="float16")
    high = HnswSettings(connectivity=100, expansion_add=1000, expansion_search=1000)
    assert (low.connectivity, low.expansion_add, low.expansion_search) == (2, 4, 1)
    assert (high.connectivity, high.expansion_add, high.expansion_search) == (100, 1000, 1000)


def test_the_defaults_are_the_measured_settings() -> None:
    settings = HnswSettings()
    shape = (settings.connectivity, settings.expansion_add, settings.expansion_search)
    assert shape == (16, 64, 64)
    assert settings.storage is None
    assert settings.storage_for("cosine") == "int8"
    assert settings.storage_for("l2") == "float32"
    assert settings.storage_for("dot") == "float32"


@pytest.mark.parametrize("metric", ["l2", "dot", "euclidean"])
def test_int8_storage_is_refused_for_metrics_that_would_clip(metric: str) -> None:
    settings = HnswSettings(storage="int8")
    assert settings.storage_for("cosine") == "int8"
    with pytest.raises(HnswSettingsError, match="'int8' is for cosine indexes only") as raised:
        settings.storage_for(metric)
    assert (raised.value.setting, raised.value.value) == ("storage", "int8")


def test_a_chosen_storage_is_kept_for_every_metric_it_suits() -> None:
    for storage in ("float32", "float16"):
        settings = HnswSettings(storage=storage)
        assert {settings.storage_for(metric) for metric in ("cosine", "l2", "dot")} == {storage}


def test_settings_round_trip_through_their_document() -> None:
    settings = HnswSettings(connectivity=8, expansion_add=32, expansion_search=128, storage="int8")
    assert HnswSettings.from_document(settings.to_document()) == settings
    # A catalog written before a setting existed gives it its default; a later one's unknown
    # setting is left out.
    assert HnswSettings.from_document({"connectivity": 8, "later": 1}) == HnswSettings(
        connectivity=8
    )
    with pytest.raises(HnswSettingsError, match="connectivity"):
        HnswSettings.from_document({"connectivity": 0})
    with pytest.raises(HnswSettingsError, match="must be an object"):
        HnswSettings.from_document([8])


def test_the_error_is_an_engine_error_and_a_value_error() -> None:
    from hotdata_retrieval import EngineError

    with pytest.raises(EngineError):
        HnswSettings(connectivity=0)
    with pytest.raises(ValueError):
        HnswSettings(connectivity=0)
