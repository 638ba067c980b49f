"""Every option of every ``hdq`` command says what it does in ``--help``.

The reference is click's own command tree, walked from the ``hdq`` group (every command and
subcommand, loaded as ``hdq --help`` loads them): an option added without ``help=`` shows in
``--help`` as a bare name and a default, which tells a new user nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main


def _commands(
    command: click.Command, path: tuple[str, ...], parent: click.Context | None
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    context = click.Context(command, info_name=path[-1], parent=parent)
    if isinstance(command, click.Group):
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            assert sub is not None
            yield from _commands(sub, (*path, name), context)
    else:
        yield path, command


COMMANDS = dict(_commands(main, ("hdq",), None))


def test_the_walk_finds_the_commands() -> None:
    names = {" ".join(path) for path in COMMANDS}
    assert {"hdq search", "hdq load", "hdq explain", "hdq demo", "hdq tune", "hdq lint"} <= names


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_option_says_what_it_does(path: tuple[str, ...]) -> None:
    command = COMMANDS[path]
    bare = [
        "/".join(parameter.opts)
        for parameter in command.params
        if isinstance(parameter, click.Option)
        and not parameter.hidden
        and not (parameter.help or "").strip()
    ]
    assert bare == [], f"{' '.join(path)}: options without a help text: {bare}"


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_help_text_is_shown(path: tuple[str, ...]) -> None:
    """What ``--help`` prints carries each option's first words (the texts are not lost on
    the way to the screen, whatever formatting a command applies)."""
    result = CliRunner().invoke(main, [*path[1:], "--help"], terminal_width=10_000)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    for parameter in COMMANDS[path].params:
        if isinstance(parameter, click.Option) and not parameter.hidden and parameter.help:
            first_words = " ".join(parameter.help.split()[:3])
            assert first_words in flat, (parameter.opts, first_words)


_DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def _synopses() -> dict[str, str]:
    """Each ``## `hdq X``` section of docs/cli.md: its first ``text`` block, the synopsis."""
    text = _DOCS.read_text(encoding="utf-8")
    found = {}
    for section in re.finditer(r"^## `hdq (\w+)`\n(.*?)(?=^## |\Z)", text, re.S | re.M):
        block = re.search(r"```text\n(.*?)```", section.group(2), re.S)
        if block is not None:
            found[section.group(1)] = block.group(1)
    return found


SYNOPSES = _synopses()
DOCUMENTED = sorted(path for path in COMMANDS if path[1] in SYNOPSES)


def test_the_documented_commands_are_found() -> None:
    assert {"search", "load", "explain", "demo", "tune", "lint", "ddn"} <= set(SYNOPSES)


@pytest.mark.parametrize("path", DOCUMENTED, ids=" ".join)
def test_every_option_is_in_the_commands_synopsis(path: tuple[str, ...]) -> None:
    """docs/cli.md's synopsis of each command names every option ``--help`` shows (but
    ``--help``, ``--quiet`` and ``--verbose``, which every command takes, as the document
    says once)."""
    synopsis = SYNOPSES[path[1]]
    missing = [
        "/".join(parameter.opts)
        for parameter in COMMANDS[path].params
        if isinstance(parameter, click.Option)
        and not parameter.hidden
        and parameter.name not in ("help", "quiet", "verbose")
        and not any(re.search(re.escape(name) + r"(?![\w-])", synopsis) for name in parameter.opts)
    ]
    assert missing == [], f"{' '.join(path)}: not in docs/cli.md's synopsis: {missing}"
