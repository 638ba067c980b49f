"""The one way the library makes a rich console: ``NO_COLOR`` honoured for every style.

rich's own ``NO_COLOR`` handling drops colours but keeps bold, italic and underline
(measured with rich 14: a table's header stays ``ESC[1m`` bold); the convention
(https://no-color.org) asks for no ANSI styling at all, so a set, non-empty ``NO_COLOR``
turns the console's colour system off, which writes plain text. A non-terminal output gets
plain text from rich already.

rich wraps text at its width, 80 columns when the output is no terminal: a long message on
standard error (a path, a statement) would be broken across lines in a log. A console on
standard error that is no terminal therefore never wraps text (``soft_wrap``): each message
stays one line, as ``click.echo`` writes the commands' errors.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console


def make_console(*, stderr: bool = False, **options: Any) -> Console:
    """A rich console on standard output (or ``stderr``), plain text under ``NO_COLOR``, and
    on a standard error that is no terminal, text never wrapped; ``options`` go to
    :class:`rich.console.Console`."""
    if os.environ.get("NO_COLOR"):
        options.setdefault("color_system", None)
    console = Console(stderr=stderr, **options)
    if stderr and "soft_wrap" not in options and not console.is_terminal:
        console.soft_wrap = True  # a log keeps each message on one line
    return console
