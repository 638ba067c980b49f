"""A call that returns by its deadline even when what it waits for does not.

Some waits cannot be interrupted from the waiting thread: a store computing one expression
that its own interrupt does not reach, a server that sends one byte every half second (each
byte restarts the socket's timeout). :func:`run_within` runs the work on a daemon thread of
its own and waits for it at most ``timeout`` seconds; work that is late is left to finish on
its thread, which never holds the interpreter's exit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Pending:
    """Work started by :func:`run_within`: its value or error once it has ended."""

    def __init__(self) -> None:
        self._ended = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def done(self) -> bool:
        """Whether the work has ended."""
        return self._ended.is_set()

    def result(self) -> Any:
        """The work's value, or its exception raised here (call once it is done)."""
        if self.error is not None:
            raise self.error
        return self.value


def run_within(function: Callable[[], Any], timeout: float, *, name: str) -> tuple[bool, Pending]:
    """Start ``function()`` on a daemon thread called ``name`` and wait for it at most
    ``timeout`` seconds.

    Returns:
        ``(True, pending)`` when it ended in time (``pending.result()`` is its value or raises
        its exception), ``(False, pending)`` when it did not: it goes on, unwaited for.
    """
    pending = Pending()

    def work() -> None:
        try:
            pending.value = function()
        except BaseException as error:  # handed to the waiting thread through pending
            pending.error = error
        finally:
            pending._ended.set()

    threading.Thread(target=work, daemon=True, name=name).start()
    return pending._ended.wait(max(0.0, timeout)), pending
