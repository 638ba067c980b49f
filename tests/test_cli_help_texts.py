"""Every option of every ``hdq`` command says what it does in ``--help``.

The reference is click's own command tree, walked from the ``hdq`` group (every command and
subcommand, loaded as ``hdq --help`` loads them): an option added without ``help=`` shows in
``--help`` as a bare name and a default, which tells a new user nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

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
