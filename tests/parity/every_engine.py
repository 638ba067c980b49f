"""An ``engine`` fixture over every engine of the parity suite and Hotdata through its fake
API, the corpus loaded as ``docs`` (BM25 on ``body``, vectors in ``embedding``); a test
module imports it to run on all seven."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.document_engines import open_document_engine
from tests.parity.conftest import ENGINES
from tests.parity.corpus import corpus_table

EVERY_ENGINE = [*ENGINES, "hotdata"]


@pytest.fixture(scope="module", params=EVERY_ENGINE)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One engine of :data:`EVERY_ENGINE` with the corpus loaded, for a module's tests."""
    name = request.param
    directory: Path = tmp_path_factory.mktemp(f"every-{name}")
    instance = open_document_engine(name, directory, request)
    if name == "hotdata":  # the table lives in the engine behind the fake API
        instance.fake.engine.load_table(
            "docs", corpus_table(), key_column="id", text_columns=["body"]
        )
        instance.fake.index_engine_table("docs")
    else:
        instance.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    instance.parity_name = name
    yield instance
    instance.close()
