"""The core install (``pip install hotdata-retrieval``, no extras) runs ``hdq explain``,
``hdq lint`` and ``hdq spec export``, and every command that needs an extra says, in one line,
which one to install.

Each command runs in a subprocess whose imports are limited to the standard library, the
package itself and the distributions the core install brings (its requirements without an
extra marker, followed transitively through the installed metadata): any other import fails
as it would in a fresh core-only environment. ``.ci/run`` also installs the bare package into
an empty virtual environment and runs the same commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import hotdata_retrieval
from hotdata_retrieval.cli import main
from hotdata_retrieval.extras import EXTRA_MODULES, install_command
from hotdata_retrieval.spec import export_cases

DISTRIBUTION = "hotdata-retrieval"

RUNNER = """
import importlib.abc
import json
import os
import sys

ALLOWED = frozenset(json.loads(os.environ["CORE_ONLY_MODULES"]))


class CoreOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        top = fullname.partition(".")[0]
        if top in sys.stdlib_module_names or top in ALLOWED:
            return None
        raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


sys.meta_path.insert(0, CoreOnly())
if sys.argv[1] == "--import":
    import importlib

    failures = {}
    for name in sys.argv[2:]:
        try:
            importlib.import_module(name)
        except ImportError as error:
            failures[name] = str(error)
    print(json.dumps(failures))
else:
    from hotdata_retrieval.cli import main

    main(sys.argv[1:], prog_name="hdq")
"""


@cache
def core_modules() -> frozenset[str]:
    """Top-level modules of the distributions a core install brings, and the package's own."""
    wanted = {canonicalize_name(DISTRIBUTION)}
    pending = [DISTRIBUTION]
    while pending:
        for text in metadata.requires(pending.pop()) or []:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            name = canonicalize_name(requirement.name)
            if name not in wanted:
                wanted.add(name)
                pending.append(requirement.name)
    modules = {
        module
        for module, distributions in metadata.packages_distributions().items()
        if any(canonicalize_name(d) in wanted for d in distributions)
    }
    return frozenset(modules | {"hotdata_retrieval"})


def run_core_only(
    *args: str, cwd: Path, stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``hdq ARGS`` (or ``--import MODULE...``) with only the core's modules importable."""
    environment = {
        **os.environ,
        "CORE_ONLY_MODULES": json.dumps(sorted(core_modules())),
        "PYTHONPATH": str(Path(hotdata_retrieval.__file__).parents[1]),
        "NO_COLOR": "1",
    }
    environment.pop("HDQ_DATABASE", None)
    return subprocess.run(
        [sys.executable, "-c", RUNNER, *args],
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_core_has_none_of_the_extras_modules() -> None:
    core = core_modules()
    assert {"sqlglot", "click", "rich", "attrs"} <= core
    for extra, modules in EXTRA_MODULES.items():
        assert not set(modules) & core, f"the core install brings a module of {extra}"


def test_the_runner_refuses_what_the_core_does_not_bring(tmp_path: Path) -> None:
    result = run_core_only("--import", "pyarrow", "numpy", "sqlglot", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(json.loads(result.stdout)) == ["numpy", "pyarrow"]


def package_modules() -> list[str]:
    root = Path(hotdata_retrieval.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


NEEDS_AN_EXTRA = {
    "hotdata_retrieval._http.pool_manager": "hotdata",
    "hotdata_retrieval._http.transport": "turbopuffer",
    "hotdata_retrieval.adapters.langchain": "langchain",
    "hotdata_retrieval.adapters.llamaindex": "llamaindex",
    "hotdata_retrieval.adapters.ibis": "ibis",
    "hotdata_retrieval.engines.local": "local",
}
"""Modules that cannot import without an extra (with their submodules)."""


def test_every_module_imports_without_extras_or_names_the_extra(tmp_path: Path) -> None:
    result = run_core_only("--import", *package_modules(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    failures: dict[str, str] = json.loads(result.stdout)
    expected = {
        module
        for module in package_modules()
        if any(module == m or module.startswith(m + ".") for m in NEEDS_AN_EXTRA)
    }
    assert set(failures) == expected
    for module, message in failures.items():
        extra = next(e for m, e in NEEDS_AN_EXTRA.items() if module.startswith(m))
        assert install_command(extra) in message, (module, message)
        assert "\n" not in message


def full_install(*args: str, stdin: str = "") -> tuple[int, str]:
    """The same command in this process, where every extra is installed."""
    result = CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout


def test_help_lists_every_command(tmp_path: Path) -> None:
    result = run_core_only("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listed = {line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines() if line}
    assert listed == set(main.list_commands(click.Context(main)))
    assert {"explain", "lint", "spec", "search", "load", "demo", "mcp"} <= listed


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "--table", "docs", "--text-column", "body", "--query", "error E1234"],
        [
            "explain",
            "--table",
            "docs",
            "--text-column",
            "body",
            "--vector-column",
            "embedding",
            "--query",
            "error E1234",
            "--vector",
            "[0.12, -0.5, 0.33]",
            "--filter",
            "lang = 'en'",
            "--format",
            "json",
        ],
    ],
    ids=["text", "hybrid-json"],
)
def test_explain_runs_and_matches_the_full_install(tmp_path: Path, args: list[str]) -> None:
    result = run_core_only(*args, cwd=tmp_path)
    assert (result.returncode, result.stdout) == full_install(*args), result.stderr
    assert result.returncode == 0


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 5)\n"
        "ORDER BY score DESC LIMIT 5\n",
        "SELECT * FROM vector_search('default.public.docs', 'body', 'q', 20) LIMIT 3;\n",
    ],
    ids=["clean", "finding"],
)
def test_lint_runs_and_matches_the_full_install(tmp_path: Path, sql: str) -> None:
    for args in (["lint", "-"], ["lint", "--fix", "-"], ["lint", "--format", "json", "-"]):
        result = run_core_only(*args, cwd=tmp_path, stdin=sql)
        assert (result.returncode, result.stdout) == full_install(*args, stdin=sql), (
            args,
            result.stderr,
        )
        assert "Traceback" not in result.stderr


def test_spec_export_writes_the_same_cases(tmp_path: Path) -> None:
    result = run_core_only("spec", "export", "cases", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    reference = export_cases(tmp_path / "reference")
    assert len(result.stdout.splitlines()) == len(reference)
    for path in [*reference, tmp_path / "reference" / "index.json"]:
        assert (tmp_path / "cases" / path.name).read_text() == path.read_text()


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["search", "crash on start", "--table", "tickets"], "local"),
        (["load", "tickets.jsonl"], "local"),
        (["load", "tickets.jsonl", "--embedder", "hashing"], "local"),
        (["demo"], "local"),
        (["demo", "--embedder", "hashing", "--format", "json"], "local"),
        (["mcp", "--table", "tickets"], "mcp"),
        (["spec", "verify"], "local"),
        (["lint", "--local-db", "database", "-"], "local"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_engine_commands_name_the_extra(tmp_path: Path, args: list[str], extra: str) -> None:
    (tmp_path / "tickets.jsonl").write_text('{"id": "1", "body": "the app crashes"}\n')
    (tmp_path / "database").mkdir()
    (tmp_path / "database" / "catalog.json").write_text("{}")
    result = run_core_only(*args, cwd=tmp_path, stdin="SELECT 1")
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].endswith(install_command(extra)), lines[0]
    assert "needs the " + extra + " extra" in lines[0]
    assert lines[0].count("hdq ") == 1, lines[0]  # the prefix names the command, once
    assert not (tmp_path / ".hdq").exists()
