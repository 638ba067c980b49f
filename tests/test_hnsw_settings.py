"""HNSW settings: each bad value is refused naming it, the defaults are the measured ones, and
the local engine builds, records, reopens and rebuilds its indexes with the settings chosen, and
``hdq load``'s ``--hnsw-*`` options reach the index or are refused on one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from hotdata_retrieval import HnswSettingsError, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE
from hotdata_retrieval.engines import HnswSettings
from hotdata_retrieval.engines.local import LocalEngine, _storage
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex, build_hnsw
from hotdata_retrieval.errors import EngineError


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


# -- the local engine ------------------------------------------------------------------------

VECTOR_TYPE = pa.list_(pa.float32())
CHOSEN = HnswSettings(connectivity=8, expansion_add=40, expansion_search=96, storage="float16")


def _vectors(count: int = 200, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, 12)).astype(np.float32)


def _table(vectors: np.ndarray, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": list(range(start, start + len(vectors))),
            "emb": pa.array(vectors.tolist(), VECTOR_TYPE),
        }
    )


def _opened(engine: LocalEngine, table: str = "v") -> Any:
    """The usearch index the engine searches ``table``'s ``emb`` column with."""
    hnsw = engine._loaded(table).vector_index("emb").hnsw
    assert hnsw is not None
    return hnsw


def _shape(index: Any) -> tuple[int, int, str]:
    return (int(index.connectivity), int(index.expansion_search), str(index.dtype))


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every usearch index the engine builds, as built (``expansion_add`` is not saved)."""
    indexes: list[Any] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        index = build_hnsw(*args, **kwargs)
        indexes.append(index)
        return index

    monkeypatch.setattr(_storage, "build_hnsw", recording)
    return indexes


@pytest.mark.parametrize(
    ("function", "settings", "expected"),
    [
        ("cosine_distance", HnswSettings(), (16, 64, 64, "ScalarKind.I8")),
        ("l2_distance", HnswSettings(), (16, 64, 64, "ScalarKind.F32")),
        ("negative_dot_product", CHOSEN, (8, 40, 96, "ScalarKind.F16")),
        (
            "cosine_distance",
            HnswSettings(connectivity=4, storage="float32"),
            (4, 64, 64, "ScalarKind.F32"),
        ),
    ],
)
def test_the_built_index_has_the_chosen_settings(
    tmp_path: Path, function: str, settings: HnswSettings, expected: tuple[int, int, int, str]
) -> None:
    column = VectorColumnIndex(pa.array(_vectors().tolist(), VECTOR_TYPE))
    index = build_hnsw(column, function, tmp_path / "emb.usearch", settings=settings)
    shape = (index.connectivity, index.expansion_add, index.expansion_search, str(index.dtype))
    assert shape == expected
    assert len(index) == 200


def test_a_load_builds_records_and_reopens_with_its_settings(
    tmp_path: Path, built: list[Any]
) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        entry = engine.load_table(
            "v", _table(_vectors()), vector_index="hnsw", hnsw_settings=CHOSEN
        )
        assert entry.hnsw_settings == CHOSEN
        assert [index.expansion_add for index in built] == [40]
        assert _shape(_opened(engine)) == (8, 96, "ScalarKind.F16")
    catalog = json.loads((tmp_path / "db" / "catalog.json").read_text())
    assert catalog["tables"]["v"]["hnsw_settings"] == {
        "connectivity": 8,
        "expansion_add": 40,
        "expansion_search": 96,
        "storage": "float16",
    }
    with LocalEngine(tmp_path / "db") as engine:  # reopened: read back from the catalog
        assert engine.tables["v"].hnsw_settings == CHOSEN
        assert _shape(_opened(engine)) == (8, 96, "ScalarKind.F16")


def test_the_default_settings_are_recorded_when_none_are_given(tmp_path: Path) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        entry = engine.load_table("v", _table(_vectors()), vector_index="hnsw")
        assert entry.hnsw_settings == HnswSettings()
        assert _shape(_opened(engine)) == (16, 64, "ScalarKind.I8")
        plain = engine.load_table("plain", _table(_vectors()))
        assert plain.hnsw_settings is None
    catalog = json.loads((tmp_path / "db" / "catalog.json").read_text())
    assert "hnsw_settings" not in catalog["tables"]["plain"]


@pytest.mark.parametrize("change", ["upsert", "delete"])
def test_a_row_change_rebuilds_the_index_with_the_same_settings(
    tmp_path: Path, built: list[Any], change: str
) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        first = engine.load_table(
            "v", _table(_vectors()), vector_index="hnsw", vector_metric="l2", hnsw_settings=CHOSEN
        )
        if change == "upsert":
            changed = engine.upsert_rows("v", _table(_vectors(5, seed=9), start=1000))
        else:
            assert engine.delete_rows("v", [0, 1, 2]) == 3
            changed = engine.tables["v"]
        assert changed.version != first.version
        assert changed.hnsw_settings == CHOSEN
        assert [(a.column, a.function) for a in changed.ann_indexes] == [("emb", "l2_distance")]
        assert [index.expansion_add for index in built] == [40, 40]
        assert _shape(built[-1]) == (8, 96, "ScalarKind.F16")
        assert _shape(_opened(engine)) == (8, 96, "ScalarKind.F16")
    with LocalEngine(tmp_path / "db") as engine:
        assert _shape(_opened(engine)) == (8, 96, "ScalarKind.F16")


def test_a_catalog_without_settings_reads_as_the_defaults(tmp_path: Path, built: list[Any]) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("v", _table(_vectors()), vector_index="hnsw", hnsw_settings=CHOSEN)
    # As a database written before settings were recorded: its indexes built with defaults.
    path = tmp_path / "db" / "catalog.json"
    catalog = json.loads(path.read_text())
    del catalog["tables"]["v"]["hnsw_settings"]
    path.write_text(json.dumps(catalog))
    with LocalEngine(tmp_path / "db") as engine:
        assert engine.tables["v"].hnsw_settings is None
        assert int(_opened(engine).expansion_search) == 64
        changed = engine.upsert_rows("v", _table(_vectors(5, seed=9), start=1000))
        assert changed.hnsw_settings == HnswSettings()
        assert _shape(built[-1]) == (16, 64, "ScalarKind.I8")
        assert built[-1].expansion_add == 64


def test_a_search_asks_the_index_for_its_expansion_search(tmp_path: Path) -> None:
    settings = HnswSettings(expansion_search=96)
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("v", _table(_vectors()), vector_index="hnsw", hnsw_settings=settings)
        index = engine._loaded("v").vector_index("emb")
        asked: list[int] = []
        real = index.hnsw

        class Recording:
            expansion_search = real.expansion_search

            def search(self, vector: np.ndarray, count: int, **options: Any) -> Any:
                asked.append(count)
                return real.search(vector, count, **options)

        index.hnsw = Recording()
        query = _vectors(1, seed=5)[0].tolist()
        for limit in (1, 10, 150):
            plan = SearchPlan(
                source=NearestNeighborSearch(table="v", column="emb", query_vector=query),
                limit=limit,
                columns=["id"],
            )
            assert len(engine.search(plan).keys) == limit
    assert asked == [96, 96, 151]


def test_settings_the_index_cannot_take_are_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        with pytest.raises(HnswSettingsError, match="'int8' is for cosine indexes only"):
            engine.load_table(
                "v",
                _table(_vectors()),
                vector_index="hnsw",
                vector_metric="dot",
                hnsw_settings=HnswSettings(storage="int8"),
            )
        with pytest.raises(HnswSettingsError, match="pass vector_index='hnsw' too") as raised:
            engine.load_table("v", _table(_vectors()), hnsw_settings=HnswSettings())
        assert raised.value.setting == "hnsw_settings"
        with pytest.raises(HnswSettingsError, match="must be HnswSettings, got") as raised:
            engine.load_table(
                "v",
                _table(_vectors()),
                vector_index="hnsw",
                hnsw_settings={"connectivity": 8},  # type: ignore[arg-type]
            )
        assert raised.value.value == {"connectivity": 8}
        huge = _vectors() * 1e5
        with pytest.raises(HnswSettingsError, match=r"column 'emb' holds .*use 'float32'"):
            engine.load_table(
                "v",
                _table(huge),
                vector_index="hnsw",
                hnsw_settings=HnswSettings(storage="float16"),
            )
        assert engine.tables == {}
    assert not list((tmp_path / "db" / "staging").glob("*"))


# -- hdq load --------------------------------------------------------------------------------


def _invoke(*arguments: str) -> Result:
    return CliRunner().invoke(main, list(arguments))


def _jsonl(tmp_path: Path) -> Path:
    source = tmp_path / "docs.jsonl"
    rows = [{"id": str(i), "body": f"fox number {i} of the river"} for i in range(40)]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return source


def test_hdq_load_options_reach_the_index(tmp_path: Path) -> None:
    database = tmp_path / "db"
    result = _invoke(
        "load", str(_jsonl(tmp_path)), "--database", str(database), "--embedder", "hashing",
        "--vector-index", "hnsw", "--hnsw-connectivity", "8", "--hnsw-expansion-add", "40",
        "--hnsw-expansion-search", "96", "--hnsw-storage", "float16", "--format", "json",
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    (table,) = json.loads(result.stdout)["tables"]
    assert table["hnsw_settings"] == CHOSEN.to_document()
    with LocalEngine(database) as engine:
        assert engine.tables["docs"].hnsw_settings == CHOSEN
        assert _shape(engine._loaded("docs").vector_index("body_embedding").hnsw) == (
            8,
            96,
            "ScalarKind.F16",
        )


def test_hdq_load_without_options_records_the_defaults(tmp_path: Path) -> None:
    result = _invoke(
        "load", str(_jsonl(tmp_path)), "--database", str(tmp_path / "db"), "--embedder",
        "hashing", "--vector-index", "hnsw", "--format", "json",
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    assert json.loads(result.stdout)["tables"][0]["hnsw_settings"] == HnswSettings().to_document()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--hnsw-connectivity", "8"], "--hnsw-connectivity needs --vector-index hnsw"),
        (["--hnsw-storage", "int8"], "--hnsw-storage needs --vector-index hnsw"),
        (
            ["--vector-index", "hnsw", "--hnsw-connectivity", "1"],
            "Invalid value for '--hnsw-connectivity': 1 is not in the range 2<=x<=100.",
        ),
        (
            ["--vector-index", "hnsw", "--hnsw-storage", "f16"],
            "Invalid value for '--hnsw-storage': 'f16' is not one of 'float32', 'float16', "
            "'int8'.",
        ),
        (
            ["--engine", "postgres", "--database", "postgresql://nobody@127.0.0.1:1/none",
             "--vector-index", "hnsw", "--hnsw-storage", "int8"],
            "--hnsw-storage int8 is for --engine local: pgvector's vector type stores float32",
        ),
        (
            ["--engine", "postgres", "--database", "postgresql://nobody@127.0.0.1:1/none",
             "--vector-index", "hnsw", "--hnsw-expansion-search", "96"],
            "--hnsw-expansion-search is for --engine local: on postgres a search sets "
            "hnsw.ef_search to the rows it ranks",
        ),
    ],
)  # fmt: skip
def test_hdq_load_refuses_options_it_cannot_use_as_a_usage_error(
    tmp_path: Path, options: list[str], message: str
) -> None:
    database = tmp_path / "db"
    result = _invoke("load", str(_jsonl(tmp_path)), "--database", str(database), *options)
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.splitlines()[0] == f"hdq load: error: {message}"
    assert not (database / "catalog.json").exists()


def test_hdq_load_names_the_option_of_a_setting_the_data_cannot_take(tmp_path: Path) -> None:
    source = tmp_path / "points.parquet"
    huge = (_vectors(20) * 1e5).tolist()
    pq.write_table(pa.table({"id": list(range(20)), "emb": pa.array(huge, VECTOR_TYPE)}), source)
    result = _invoke(
        "load", str(source), "--database", str(tmp_path / "db"), "--no-embed",
        "--vector-index", "hnsw", "--hnsw-storage", "float16",
    )  # fmt: skip
    assert result.exit_code == EXIT_INVALID_PLAN
    (line,) = [line for line in result.stderr.splitlines() if not line.startswith("note:")]
    assert line.startswith("hdq load: error: --hnsw-storage 'float16' holds magnitudes up to")
    assert "column 'emb'" in line


def test_hdq_load_passes_the_options_to_postgres(tmp_path: Path, postgres_url: str) -> None:
    from hotdata_retrieval.engines.postgres import PostgresEngine

    result = _invoke(
        "load", str(_jsonl(tmp_path)), "--engine", "postgres", "--database", postgres_url,
        "--embedder", "hashing", "--table", "cli_tuned", "--vector-index", "hnsw",
        "--hnsw-connectivity", "8", "--hnsw-expansion-add", "40",
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    with PostgresEngine(postgres_url) as engine:
        found = engine.sql(
            "SELECT reloptions FROM pg_class WHERE relname = 'cli_tuned__body_embedding__hnsw'"
        )
        assert sorted(found.column("reloptions").to_pylist()[0]) == [
            "ef_construction=40",
            "m=8",
        ]


# -- an HNSW index of no vectors (a table name of this section's own: the session's
# PostgreSQL server is shared with other test files) ------------------------------------

NO_VECTORS = "vector_index='hnsw' indexes vector columns, and table 'no_vectors' would hold none"


def test_an_hnsw_index_of_a_table_without_vectors_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    rows = pa.table({"id": [1, 2], "body": ["red fox", "blue river"]})
    with LocalEngine(tmp_path / "db") as engine:
        with pytest.raises(EngineError, match=NO_VECTORS):
            engine.load_table("no_vectors", rows, text_columns=["body"], vector_index="hnsw")
        assert engine.tables == {}
        # a column of vectors, or one embedded, is what the index is of
        entry = engine.load_table("no_vectors", _table(_vectors(4)), vector_index="hnsw")
        assert [index.column for index in entry.ann_indexes] == ["emb"]
    assert not list((tmp_path / "db" / "staging").glob("*"))


def test_postgres_refuses_an_hnsw_index_of_a_table_without_vectors(postgres_url: str) -> None:
    from hotdata_retrieval.engines.postgres import PostgresEngine

    rows = pa.table({"id": [1, 2], "body": ["red fox", "blue river"]})
    with PostgresEngine(postgres_url) as engine:
        with pytest.raises(EngineError, match=NO_VECTORS):
            engine.load_table("no_vectors", rows, text_columns=["body"], vector_index="hnsw")
        found = engine.sql("SELECT count(*) AS n FROM pg_class WHERE relname = 'no_vectors'")
        assert found.column("n").to_pylist() == [0]


@pytest.mark.parametrize("engine", ["local", "postgres"])
def test_hdq_load_refuses_vector_index_hnsw_with_no_embed(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    database = (
        request.getfixturevalue("postgres_url") if engine == "postgres" else str(tmp_path / "db")
    )
    result = _invoke(
        "load", str(_jsonl(tmp_path)), "--engine", engine, "--database", database,
        "--table", "no_vectors", "--no-embed", "--vector-index", "hnsw",
    )  # fmt: skip
    assert result.exit_code != EXIT_OK
    assert NO_VECTORS in result.stderr
    assert "without --no-embed" in result.stderr
    if engine == "local":
        assert not (tmp_path / "db" / "catalog.json").exists()
