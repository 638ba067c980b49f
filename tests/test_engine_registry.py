"""The engine registry is the one place the command line reads engines from: their names, their
dialects, what ``--database`` names for each and the extra each needs."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli._engines import ENGINE_DIALECTS, ENGINE_NAMES, STORE_ENGINES
from hotdata_retrieval.compile import get_dialect
from hotdata_retrieval.engines.registry import EngineKind, engine_kind, engine_kinds
from hotdata_retrieval.errors import UnknownEngineError
from hotdata_retrieval.extras import EXTRA_MODULES


def test_the_command_line_reads_its_engines_from_the_registry() -> None:
    kinds = engine_kinds()
    assert tuple(kind.name for kind in kinds) == ENGINE_NAMES
    assert tuple(kind.name for kind in kinds if not kind.embedded) == STORE_ENGINES
    assert {kind.name: kind.dialect for kind in kinds} == ENGINE_DIALECTS
    help_text = CliRunner().invoke(main, ["search", "--help"]).output
    flat = " ".join(help_text.split())
    for kind in kinds:
        assert f"{kind.name} (" in flat and kind.location in flat


@pytest.mark.parametrize("kind", engine_kinds(), ids=lambda kind: kind.name)
def test_each_engine_names_a_class_a_dialect_and_an_extra_that_exist(kind: EngineKind) -> None:
    engine_class = kind.load_class()
    assert kind.extra in EXTRA_MODULES
    if kind.dialect is not None:
        assert get_dialect(kind.dialect).name == kind.dialect
    # The stores name themselves in their messages; the name is the registry's.
    assert getattr(engine_class, "engine_name", kind.name) == kind.name


def test_an_unknown_engine_is_named_with_the_known_ones() -> None:
    with pytest.raises(UnknownEngineError, match="unknown engine 'oracle'; known engines: local"):
        engine_kind("oracle")


def test_an_engine_needing_no_extra_of_the_package_is_refused() -> None:
    with pytest.raises(ValueError, match="engine extra 'nope' is not one of"):
        EngineKind(name="x", dialect=None, extra="nope", location="a file", engine_class="m:C")


def test_a_store_opens_through_its_kind() -> None:
    engine = engine_kind("sqlite").open(":memory:")
    try:
        assert engine.engine_name == "sqlite"
    finally:
        engine.close()
