"""The one way the library makes a rich console: ``NO_COLOR`` honoured for every style.

rich's own ``NO_COLOR`` handling drops colours but keeps bold, italic and underline
(measured with rich 14: a table's header stays ``ESC[1m`` bold); the convention
(https://no-color.org) asks for no ANSI styling at all, so a set, non-empty ``NO_COLOR``
turns the console's colour system off, which writes plain text. A non-terminal output gets
plain text from rich already.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console


def make_console(*, stderr: bool = False, **options: Any) -> Console:
    """A rich console on standard output (or ``stderr``), plain text under ``NO_COLOR``;
    ``options`` go to :class:`rich.console.Console`."""
    if os.environ.get("NO_COLOR"):
        options.setdefault("color_system", None)
    return Console(stderr=stderr, **options)
