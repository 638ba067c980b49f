"""The examples of ``README.md`` and ``docs/`` run, print what they show, and keep the README's
guarantees, so the documentation cannot drift from the code.

Every fenced block of ``README.md`` and ``docs/**/*.md`` whose language is ``python``,
``console``, ``bash``, ``sh`` or ``shell`` runs, in document order, one markdown file per
test, in a scratch directory holding a copy of the demo database (``.hdq``, built once per
session by ``hdq demo``) and the files the examples name (:data:`EXAMPLE_FILES`, standing in
for the reader's own files):

- ``python``: executed; a file's blocks share one namespace, and top-level ``await`` runs.
  The Hotdata engine's examples run against the in-process fake of its REST API
  (``tests/hotdata_api.py``) serving the demo table.
- ``console``: each ``$ command`` runs in bash; the lines below it are what it prints —
  standard output when it exits 0, standard error otherwise, followed by ``[exit N]`` —
  compared after :func:`normalize`.
- ``bash``, ``sh``, ``shell``: each ``hdq`` command (alone, in a pipeline or after ``&&``)
  runs and must exit 0. The other commands are checked, not run: ``pip install`` names only
  extras and packages ``pyproject.toml`` declares, ``python3 -m venv`` and ``activate`` are
  allowed, a ``pytest`` line is one ``.ci/run`` runs, and a benchmark script exists and takes
  every option shown. Any other command fails the test.

Every SQL statement an example prints (``hdq explain``, and Python that prints SQL) is held to
the README's "What the SQL guarantees" by :func:`guarantee_violations`, and lints clean.

A block preceded by ``<!-- docs-test: skip REASON -->`` does not run; :data:`SKIPPED` lists
every such block, so none is skipped silently.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs
import pytest
import sqlglot
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from sqlglot import exp

from hotdata_retrieval.compile import get_dialect
from hotdata_retrieval.lint import lint

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN_LANGUAGES = frozenset({"python", "console", "bash", "sh", "shell"})
SKIP_MARKER = re.compile(r"<!--\s*docs-test:\s*skip\b\s*(?P<reason>.*?)\s*-->")
SKIPPED: dict[str, list[str]] = {}
"""Every block a ``docs-test: skip`` marker keeps from running: file -> the markers' reasons."""

EXAMPLE_FILES: dict[str, str] = {
    # A BEIR directory (README: hdq load scifact/).
    "scifact/corpus.jsonl": "".join(
        json.dumps({"_id": identifier, "title": title, "text": text}) + "\n"
        for identifier, title, text in [
            (
                "d1",
                "Vitamin D and fractures",
                "Vitamin D supplements lower the risk of hip "
                "fractures in older adults with low serum levels.",
            ),
            ("d2", "Calcium intake", "Dietary calcium and bone mineral density in women."),
            ("d3", "Statins", "Statin therapy reduces cardiovascular events."),
            ("d4", "Sleep and memory", "Sleep consolidates declarative memory."),
        ]
    ),
    "scifact/queries.jsonl": json.dumps({"_id": "q1", "text": "vitamin D prevents fractures"})
    + "\n",
    "scifact/qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
    # README: hdq lint query.sql
    "query.sql": "SELECT id, score FROM bm25_search('default.public.tickets', 'body', 'crash', 5)\n"
    "ORDER BY score DESC LIMIT 5\n",
    # docs/cli.md: hdq explain --plan plan.json
    "plan.json": json.dumps(
        {
            "table": "tickets",
            "branches": [{"kind": "text", "column": "body", "query_text": "E4012"}],
            "limit": 5,
        }
    )
    + "\n",
}

_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b")
_SHELL_OPERATORS = frozenset({"|", "||", "&&", ">", ">>", "<", "2>", ";"})
_HYBRID_API_KEY = "docs-key"


# -- reading the markdown --------------------------------------------------------------------


@attrs.frozen
class Block:
    """One fenced code block: where it is, its language, its text (fence indent removed)."""

    path: Path
    line: int
    language: str
    text: str
    skip_reason: str | None

    @property
    def where(self) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of the markdown file ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = re.match(r"^(?P<indent> *)(?P<fence>`{3,})(?P<info>.*)$", lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        language = (opening["info"].split() or [""])[0].lower()
        previous = next((line for line in reversed(lines[:index]) if line.strip()), "")
        marker = SKIP_MARKER.fullmatch(previous.strip())
        body: list[str] = []
        start = index + 1
        index += 1
        while index < len(lines) and lines[index].strip() != fence:
            body.append(lines[index][indent:] if lines[index][:indent].isspace() else lines[index])
            index += 1
        if index == len(lines):
            raise AssertionError(f"{path}:{start}: unclosed code fence")
        index += 1
        blocks.append(
            Block(
                path=path,
                line=start,
                language=language,
                text="\n".join(body) + "\n",
                skip_reason=None if marker is None else marker["reason"],
            )
        )
    return blocks


def runnable_blocks(path: Path) -> list[Block]:
    return [block for block in read_blocks(path) if block.language in RUN_LANGUAGES]


@attrs.frozen
class ConsoleCommand:
    command: str
    output: str
    exit_code: int


def console_commands(block: Block) -> list[ConsoleCommand]:
    """The ``$ command`` lines of a console block, each with the output shown below it."""
    commands: list[ConsoleCommand] = []
    lines = block.text.splitlines()
    index = 0
    while index < len(lines):
        if not lines[index].startswith("$ "):
            raise AssertionError(f"{block.where}: console output before any '$ ' command")
        command = lines[index][2:]
        while command.endswith("\\") and index + 1 < len(lines):
            index += 1
            command += "\n" + lines[index]
        index += 1
        output: list[str] = []
        while index < len(lines) and not lines[index].startswith("$ "):
            output.append(lines[index])
            index += 1
        exit_code = 0
        if output and (status := re.fullmatch(r"\[exit (\d+)\]", output[-1].strip())):
            exit_code = int(status.group(1))
            output.pop()
        commands.append(ConsoleCommand(command, "\n".join(output), exit_code))
    return commands


def shell_lines(text: str) -> list[str]:
    """The command lines of a shell block, continuation lines joined, comments kept."""
    joined: list[str] = []
    pending = ""
    for line in text.splitlines():
        if pending:
            line = pending + "\n" + line
            pending = ""
        if line.rstrip().endswith("\\"):
            pending = line
            continue
        if line.strip() and not line.strip().startswith("#"):
            joined.append(line)
    if pending:
        joined.append(pending)
    return joined


def shell_segments(line: str) -> list[list[str]]:
    """The ``&&``-separated commands of one line, as shell tokens (operators kept)."""
    lexer = shlex.shlex(line.replace("\\\n", " "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    segments: list[list[str]] = [[]]
    for token in lexer:
        if token == "&&":
            segments.append([])
        else:
            segments[-1].append(token)
    return [segment for segment in segments if segment]


def runs_hdq(tokens: list[str]) -> bool:
    return tokens[0] == "hdq" or any(
        after == "hdq" for before, after in itertools.pairwise(tokens) if before == "|"
    )


def shell_text(tokens: list[str]) -> str:
    return " ".join(token if token in _SHELL_OPERATORS else shlex.quote(token) for token in tokens)


# -- what commands that are not run must be ------------------------------------------------


def _declared() -> tuple[set[str], set[str]]:
    """The package's extras, and every distribution its metadata names."""
    info = metadata.metadata("hotdata-retrieval")
    extras = set(info.get_all("Provides-Extra") or [])
    names = {
        canonicalize_name(Requirement(text).name)
        for text in metadata.requires("hotdata-retrieval") or []
    }
    return extras, names


def setup_problem(tokens: list[str], line: str) -> str | None:
    """Why a command the examples do not run is wrong, or None when it is one of the allowed
    set-up commands and names only what exists."""
    program, arguments = tokens[0], tokens[1:]
    if program in {"python3", "python"} and arguments[:2] == ["-m", "venv"]:
        return None
    if program in {".", "source"} and len(arguments) == 1 and arguments[0].endswith("activate"):
        return None
    if program == "pip" and arguments[:1] == ["install"]:
        extras, names = _declared()
        for argument in arguments[1:]:
            if argument.startswith("-"):
                continue
            wanted = re.fullmatch(r"\.(?:\[(?P<extras>[^\]]*)\])?", argument)
            if wanted is not None:
                unknown = set(filter(None, (wanted["extras"] or "").split(","))) - extras
                if unknown:
                    return f"pip install names extras pyproject.toml lacks: {sorted(unknown)}"
            elif canonicalize_name(Requirement(argument).name) not in names:
                return f"pip install {argument}: not a dependency pyproject.toml declares"
        return None
    if program == "pytest":
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        run = [segment for text in shell_lines(ci) for segment in shell_segments(text)]
        if tokens not in run:
            return f"{shell_text(tokens)}: not a command .ci/run runs"
        return None
    if program == "python" and arguments and arguments[0].startswith("benchmarks/"):
        script = ROOT / arguments[0]
        if not script.is_file():
            return f"no benchmark script {arguments[0]}"
        source = script.read_text(encoding="utf-8")
        for option in arguments[1:]:
            if option.startswith("--") and f'"{option.split("=")[0]}"' not in source:
                return f"{arguments[0]} takes no option {option}"
        return None
    return f"a command the documentation test neither runs nor checks: {shell_text(tokens)}"


# -- the README's guarantees -----------------------------------------------------------------

_DISTANCE_FUNCTIONS = frozenset({"cosine_distance", "l2_distance", "negative_dot_product"})


def _order_keys(select: exp.Select) -> list[exp.Ordered]:
    order = select.args.get("order")
    return list(order.expressions) if order is not None else []


def _is_column(node: exp.Expression, name: str) -> bool:
    return isinstance(node, exp.Column) and node.name == name


def guarantee_violations(sql: str) -> list[str]:
    """How ``sql`` breaks the README's "What the SQL guarantees" (empty: it keeps them all).

    Checked: one statement; every table fully qualified (table references and the table
    functions' first argument); ``bm25_search`` sorted by ``score DESC`` and bounded by a
    LIMIT, with k as its 4th argument exactly when its SELECT has no WHERE; ``vector_search``
    with k, sorted by ``_distance ASC``, never under a LIMIT; nearest-neighbour branches in the
    fast-path shape (unaliased qualified table, ``ORDER BY _distance ASC LIMIT n``, vector
    column not projected); a fused ranking's last sort key its join key, ascending; and no
    lint finding.
    """
    statements = sqlglot.parse(sql, read=get_dialect("hotdata").sqlglot_dialect)
    if len(statements) != 1 or statements[0] is None:
        return [f"{len(statements)} statements, not one"]
    tree = statements[0]
    problems: list[str] = []
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        named = isinstance(table.this, exp.Identifier) and table.name not in ctes
        if named and not (table.catalog and table.db):
            problems.append(f"table {table.sql()} is not catalog.schema.table")
    for call in tree.find_all(exp.Anonymous):
        name = call.name.lower()
        select = call.find_ancestor(exp.Select)
        assert select is not None
        keys = _order_keys(select)
        arguments = call.expressions
        if name in {"bm25_search", "vector_search"}:
            table_argument = arguments[0]
            if not (
                isinstance(table_argument, exp.Literal) and table_argument.this.count(".") == 2
            ):
                problems.append(f"{name}: table {table_argument.sql()} is not fully qualified")
        if name == "bm25_search":
            if not (keys and _is_column(keys[0].this, "score") and keys[0].args.get("desc")):
                problems.append("bm25_search without ORDER BY score DESC")
            if select.args.get("limit") is None:
                problems.append("bm25_search without a LIMIT")
            filtered = select.args.get("where") is not None
            if len(arguments) != (3 if filtered else 4):
                problems.append(
                    f"bm25_search with {len(arguments)} arguments "
                    f"{'under' if filtered else 'without'} a WHERE"
                )
        elif name == "vector_search":
            if len(arguments) != 4:
                problems.append("vector_search without k")
            if not (
                keys and _is_column(keys[0].this, "_distance") and not keys[0].args.get("desc")
            ):
                problems.append("vector_search without ORDER BY _distance ASC")
            limit, offset = select.args.get("limit"), select.args.get("offset")
            if limit is None:
                problems.append("vector_search without a LIMIT")
            elif arguments[3:]:
                skipped = 0 if offset is None else int(offset.expression.sql())
                if int(limit.expression.sql()) + skipped != int(arguments[3].sql()):
                    problems.append("vector_search under a LIMIT + OFFSET other than its k")
        elif name in _DISTANCE_FUNCTIONS:
            source = select.args.get("from_") or select.args.get("from")
            table = source.this if source is not None else None
            if not (isinstance(table, exp.Table) and table.catalog and table.db) or table.alias:
                problems.append(f"{name}: not over the unaliased, fully qualified base table")
            if not (
                keys and _is_column(keys[0].this, "_distance") and not keys[0].args.get("desc")
            ):
                problems.append(f"{name}: not ORDER BY _distance ASC")
            if select.args.get("limit") is None:
                problems.append(f"{name}: no LIMIT")
            vector = arguments[0]
            if any(_is_column(column, vector.name) for column in select.expressions):
                problems.append(f"{name}: the vector column {vector.name} is projected")
    if "fused" in ctes and isinstance(tree, exp.Select):
        keys = _order_keys(tree)
        last = keys[-1] if keys else None
        if not (
            last is not None
            and isinstance(last.this, exp.Column)
            and last.this.table == "fused"
            and not last.args.get("desc")
        ):
            problems.append("the fused ranking's ties are not broken by its key ascending")
    problems += [f"lint: {finding.code} {finding.message}" for finding in lint(sql)]
    return problems


def printed_sql(command: str, stdout: str) -> str | None:
    """The SQL a successful ``hdq explain`` printed, or None for any other command."""
    tokens = shell_segments(command)
    if not tokens or tokens[-1][:2] != ["hdq", "explain"] or ">" in tokens[-1]:
        return None
    if "--print-schema" in tokens[-1]:
        return None
    if "json" in tokens[-1] and "--format" in tokens[-1]:
        return str(json.loads(stdout)["sql"])
    return stdout


# -- running ---------------------------------------------------------------------------------


def normalize(text: str, directory: Path) -> str:
    """``text`` without what varies between runs: the scratch directory's path, durations,
    trailing spaces and trailing blank lines."""
    for form in {str(directory.resolve()), str(directory)}:
        text = text.replace(form + os.sep, "").replace(form, ".")
    text = _DURATION.sub("<duration>", text)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


def command_environment() -> dict[str, str]:
    binaries = Path(sys.executable).parent
    if not (binaries / "hdq").exists():
        raise AssertionError(f"no hdq next to {sys.executable}: install the package first")
    environment = {
        **os.environ,
        "PATH": f"{binaries}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "COLUMNS": "100",
    }
    environment.pop("HDQ_DATABASE", None)
    return environment


def run_shell(command: str, directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=directory,
        env=command_environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="session")
def demo_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database ``hdq demo`` builds (the README's first command), once per session."""
    directory = tmp_path_factory.mktemp("demo")
    result = run_shell("hdq demo", directory)
    assert result.returncode == 0, result.stderr
    return directory / ".hdq"


@contextlib.contextmanager
def hotdata_api(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The fake Hotdata API over a copy of the demo database, as the ``support`` database
    with the demo's BM25 and vector indexes, configured through the environment."""
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    shutil.copytree(directory / ".hdq", directory / "hotdata-api")
    with (
        LocalEngine(directory / "hotdata-api") as engine,
        FakeHotdataApi(engine, api_key=_HYBRID_API_KEY, database_name="support") as api,
    ):
        api.add_index("tickets", index_type="bm25", columns=["body"])
        api.add_index("tickets", index_type="vector", columns=["body_embedding"], metric="cosine")
        monkeypatch.setenv("HOTDATA_API_KEY", _HYBRID_API_KEY)
        monkeypatch.setenv("HOTDATA_API_URL", api.url)
        monkeypatch.setenv("HOTDATA_WORKSPACE", api.workspace_id)
        yield


def run_python(block: Block, namespace: dict[str, Any]) -> str:
    """Execute ``block`` in ``namespace`` (top-level await allowed); returns its stdout."""
    code = compile(block.text, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        result = eval(code, namespace)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    return stdout.getvalue()


def run_document(path: Path, directory: Path) -> list[str]:
    """Run every runnable block of ``path`` in ``directory``; returns the failures."""
    failures: list[str] = []
    namespace: dict[str, Any] = {"__name__": "__docs__"}

    def check_sql(where: str, sql: str | None) -> None:
        if sql is not None:
            failures.extend(f"{where}: {problem}" for problem in guarantee_violations(sql))

    for block in runnable_blocks(path):
        if block.skip_reason is not None:
            continue
        if block.language == "python":
            try:
                stdout = run_python(block, namespace)
            except Exception as error:
                failures.append(f"{block.where}: {type(error).__name__}: {error}")
                continue
            if stdout.lstrip().startswith(("SELECT", "WITH")):
                check_sql(block.where, stdout)
        elif block.language == "console":
            for command in console_commands(block):
                result = run_shell(command.command, directory)
                shown = result.stdout if command.exit_code == 0 else result.stderr
                if result.returncode != command.exit_code:
                    failures.append(
                        f"{block.where}: $ {command.command}\nexited {result.returncode}, "
                        f"not {command.exit_code}:\n{result.stderr}"
                    )
                elif normalize(shown, directory) != normalize(command.output, directory):
                    failures.append(
                        f"{block.where}: $ {command.command}\nprinted:\n{shown}\nthe "
                        f"documentation shows:\n{command.output}"
                    )
                elif command.exit_code != 0 and result.stdout:
                    failures.append(f"{block.where}: $ {command.command}: a failure with stdout")
                elif command.exit_code == 0:
                    check_sql(block.where, printed_sql(command.command, result.stdout))
        else:
            for line in shell_lines(block.text):
                for tokens in shell_segments(line):
                    if not runs_hdq(tokens):
                        problem = setup_problem(tokens, line)
                        if problem is not None:
                            failures.append(f"{block.where}: {problem}")
                        continue
                    command = shell_text(tokens)
                    result = run_shell(command, directory)
                    if result.returncode != 0:
                        failures.append(
                            f"{block.where}: {command}\nexited {result.returncode}:\n"
                            f"{result.stderr[-2000:]}"
                        )
                    else:
                        check_sql(block.where, printed_sql(command, result.stdout))
    return failures


def _document_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize(
    "path",
    [path for path in DOCUMENTS if runnable_blocks(path)],
    ids=_document_id,
)
def test_the_examples_run(
    path: Path,
    demo_database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shutil.copytree(demo_database, tmp_path / ".hdq")
    for name, content in EXAMPLE_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HDQ_DATABASE", raising=False)
    uses_hotdata = any(
        "HotdataEngine" in block.text
        for block in runnable_blocks(path)
        if block.language == "python"
    )
    with hotdata_api(tmp_path, monkeypatch) if uses_hotdata else contextlib.nullcontext():
        failures = run_document(path, tmp_path)
    assert not failures, "\n\n".join(failures)


def test_every_skipped_block_is_listed() -> None:
    found: dict[str, list[str]] = {}
    for path in DOCUMENTS:
        for block in runnable_blocks(path):
            if block.skip_reason is not None:
                assert block.skip_reason, f"{block.where}: a skip marker needs a reason"
                found.setdefault(_document_id(path), []).append(block.skip_reason)
    assert found == SKIPPED


def test_the_documents_have_examples_of_each_kind() -> None:
    languages = [block.language for path in DOCUMENTS for block in runnable_blocks(path)]
    assert languages.count("python") >= 10
    assert languages.count("console") >= 8
    assert {"bash", "sh"} <= set(languages)


# -- the test's own machinery ----------------------------------------------------------------


def test_blocks_markers_and_console_output_are_read(tmp_path: Path) -> None:
    document = tmp_path / "example.md"
    document.write_text(
        "Intro.\n\n```python\nx = 1\n```\n\n<!-- docs-test: skip needs a server -->\n\n"
        "```python\nconnect()\n```\n\n- item\n\n  ```console\n  $ hdq a \\\n  --b\n  out\n"
        "  [exit 2]\n  $ hdq c\n  ```\n\n```text\nnot run\n```\n",
        encoding="utf-8",
    )
    blocks = read_blocks(document)
    assert [(block.language, block.line, block.skip_reason) for block in blocks] == [
        ("python", 3, None),
        ("python", 9, "needs a server"),
        ("console", 15, None),
        ("text", 23, None),
    ]
    assert [block.language for block in runnable_blocks(document)] == [
        "python",
        "python",
        "console",
    ]
    assert console_commands(blocks[2]) == [
        ConsoleCommand("hdq a \\\n--b", "out", 2),
        ConsoleCommand("hdq c", "", 0),
    ]


def test_shell_lines_are_split_into_commands() -> None:
    text = (
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[local]' && hdq demo\n"
        "# a comment\n"
        'hdq explain --table docs \\\n    --query "a b"      # the SQL\n'
        "echo '{\"a\": 1}' | hdq explain --plan -\n"
    )
    lines = shell_lines(text)
    assert len(lines) == 3
    segments = [segment for line in lines for segment in shell_segments(line)]
    assert [runs_hdq(segment) for segment in segments] == [False, False, False, True, True, True]
    assert shell_text(segments[4]) == "hdq explain --table docs --query 'a b'"
    assert shell_text(segments[5]) == "echo '{\"a\": 1}' | hdq explain --plan -"


@pytest.mark.parametrize(
    ("line", "allowed"),
    [
        ("pip install -e '.[local]'", True),
        ("pip install -e '.[test,bench]'", True),
        ("pip install ir-measures", True),
        ("pip install -e '.[gpu]'", False),
        ("pip install requests-oauthlib", False),
        ("pytest -n auto --hypothesis-profile=ci", True),
        ("pytest --hypothesis-profile=ci", False),
        ("pytest -x", False),
        ("python benchmarks/bench_compile.py --write docs/benchmarks.md", True),
        ("python benchmarks/bench_compile.py --frobnicate", False),
        ("python benchmarks/bench_nothing.py", False),
        ("rm -rf .hdq", False),
    ],
)
def test_commands_that_are_not_run_are_checked(line: str, allowed: bool) -> None:
    [tokens] = shell_segments(line)
    assert (setup_problem(tokens, line) is None) == allowed


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        (
            "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q') "
            "ORDER BY score DESC, id ASC LIMIT 5",
            "bm25_search with 3 arguments without a WHERE",
        ),
        (
            "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 5) "
            "WHERE lang = 'en' ORDER BY score DESC, id ASC LIMIT 5",
            "bm25_search with 4 arguments under a WHERE",
        ),
        (
            "SELECT id, score FROM bm25_search('docs', 'body', 'q', 5) "
            "ORDER BY score DESC, id ASC LIMIT 5",
            "bm25_search: table 'docs' is not fully qualified",
        ),
        (
            "SELECT id, _distance FROM vector_search('default.public.docs', 'body', 'q', 5) "
            "ORDER BY _distance ASC, id ASC",
            "vector_search without a LIMIT",
        ),
        (
            "SELECT id, _distance FROM vector_search('default.public.docs', 'body', 'q', 5) "
            "ORDER BY _distance ASC, id ASC LIMIT 3",
            "vector_search under a LIMIT + OFFSET other than its k",
        ),
        (
            "SELECT id, embedding, cosine_distance(embedding, ARRAY[0.5, 0.25]) AS _distance "
            'FROM "default".public.docs ORDER BY _distance ASC LIMIT 3',
            "cosine_distance: the vector column embedding is projected",
        ),
        (
            "SELECT id, cosine_distance(embedding, ARRAY[0.5, 0.25]) AS _distance "
            "FROM public.docs ORDER BY _distance ASC LIMIT 3",
            "table public.docs is not catalog.schema.table",
        ),
        ("SELECT 1; SELECT 2", "2 statements, not one"),
    ],
)
def test_the_guarantee_check_can_fail(sql: str, problem: str) -> None:
    assert problem in guarantee_violations(sql)
