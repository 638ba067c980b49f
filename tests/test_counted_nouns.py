"""Messages that count things say "1 NULL value" and "2 NULL values", never "1 NULL values":
one function (``_words.counted``) words every such count. Each message is triggered for real
and compared with the count the test gave."""

from __future__ import annotations

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.fusion import reciprocal_rank_fusion


@pytest.mark.parametrize(("nulls", "words"), [(1, "1 NULL value;"), (2, "2 NULL values;")])
def test_a_key_column_s_nulls_are_counted(nulls: int, words: str) -> None:
    keys = [None] * nulls + [10, 11]
    with LocalEngine() as engine, pytest.raises(HotdataRetrievalError, match=words):
        engine.load_table(
            "docs",
            pa.table({"id": pa.array(keys, pa.int64()), "body": ["a"] * len(keys)}),
            key_column="id",
            text_columns=["body"],
        )


@pytest.mark.parametrize(
    ("weights", "words"),
    [([1.0], "got 1 weight for 2 ranked lists"), ([1.0] * 3, "got 3 weights for 2 ranked lists")],
)
def test_a_fusion_s_weights_are_counted(weights: list[float], words: str) -> None:
    with pytest.raises(HotdataRetrievalError, match=words):
        reciprocal_rank_fusion([[1], [2]], weights=weights)
