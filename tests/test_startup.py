"""What ``import hotdata_retrieval``, ``hdq --help`` and compiling for one dialect load.

A command's start-up is the imports it pays for; these tests pin which modules stay unloaded
(the timings themselves are in ``benchmarks/bench_startup.py``: no clock here).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

import hotdata_retrieval
from hotdata_retrieval.cli import COMMANDS, main

PACKAGE = Path(hotdata_retrieval.__file__).parent


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def top_level(modules: set[str]) -> set[str]:
    return {module.partition(".")[0] for module in modules}


def test_importing_the_package_loads_no_compiler() -> None:
    loaded = loaded_after("import hotdata_retrieval")
    assert "sqlglot" not in top_level(loaded)
    assert "hotdata_retrieval.compile" not in loaded


def test_help_loads_no_command_and_no_sql_library() -> None:
    code = (
        "import sys\nfrom hotdata_retrieval.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    loaded = loaded_after(code)
    assert not top_level(loaded) & {"sqlglot", "rich", "attrs", "attr", "tantivy", "pyarrow"}
    assert not {f"hotdata_retrieval.cli.{name}" for name in COMMANDS} & loaded


def test_compiling_for_one_dialect_loads_no_other() -> None:
    code = (
        "from hotdata_retrieval import Bm25Search, SearchPlan, to_sql\n"
        "to_sql(SearchPlan(source=Bm25Search(table='docs', column='body', query_text='x'),"
        " limit=3), dialect='hotdata')"
    )
    loaded = loaded_after(code)
    assert "sqlglot.dialects.postgres" in loaded  # the Hotdata dialect builds on it
    store_modules = {"sqlglot.dialects.duckdb", "sqlglot.dialects.sqlite"}
    assert not store_modules & loaded
    assert not {"duckdb", "sqlite", "postgres"} & {
        module.rpartition(".")[2] for module in loaded if module.startswith("hotdata_retrieval.")
    }


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
def test_a_store_dialect_is_imported_when_asked_for(dialect: str) -> None:
    loaded = loaded_after(
        f"from hotdata_retrieval.compile import get_dialect\nget_dialect({dialect!r})"
    )
    assert f"hotdata_retrieval.compile.{dialect}" in loaded


def test_every_listed_command_loads_as_itself() -> None:
    context = click.Context(main)
    assert main.list_commands(context) == sorted(COMMANDS)
    for name, command in COMMANDS.items():
        loaded = main.get_command(context, name)
        assert isinstance(loaded, click.Command)
        assert loaded.name == name, command.location
        assert command.summary.endswith("."), name


def test_help_lists_each_command_with_its_summary() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hotdata_retrieval", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "80", "PATH": ""},
    )
    for name, command in COMMANDS.items():
        assert f"  {name.ljust(8)} {command.summary}\n" in result.stdout


def _names_imported_for_type_checkers() -> dict[str, str]:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    )
    return {
        alias.name: statement.module or ""
        for statement in block.body
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }


def test_type_checkers_see_the_names_the_package_exports() -> None:
    imported = _names_imported_for_type_checkers()
    exported = {
        name: module for module, names in hotdata_retrieval._EXPORTED_FROM.items() for name in names
    }
    assert imported == exported
    assert set(hotdata_retrieval.__all__) == set(exported)


def test_every_exported_name_resolves_to_its_module_object() -> None:
    import importlib

    import hotdata_retrieval.engines as engines

    for package in (hotdata_retrieval, engines):
        for module, names in package._EXPORTED_FROM.items():
            for name in names:
                assert getattr(package, name) is getattr(importlib.import_module(module), name)
                assert name in dir(package)
        with pytest.raises(AttributeError, match="no_such_name"):
            package.no_such_name  # noqa: B018


def test_the_engine_registry_loads_no_engine() -> None:
    loaded = loaded_after("import hotdata_retrieval.engines.registry")
    assert "hotdata_retrieval.engines.base" not in loaded
    assert "sqlglot" not in top_level(loaded)
