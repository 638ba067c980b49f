"""Progress of long work on standard error: a bar on a terminal, steady lines off one.

rich draws a live bar only on a terminal; written to a file or a pipe, its ``Progress``
prints nothing until the work ends, so a load redirected to a log was silent for its whole
run (a SciFact load wrote 0 bytes in 840 s while it embedded). Off a terminal, a
:class:`ProgressReport` prints one plain line per ``interval`` seconds instead, e.g.
``embedding: 240/721 (33%), 12 s``, the first one after the first step and the last one when
the work ends, so a log shows the pace well before the work is half done.

Standard error is looked up when a line is written, so a caller that swallows it (``hdq
--quiet``) swallows the lines too.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

#: Seconds between two progress lines off a terminal.
LINE_INTERVAL_SECONDS = 5.0


class ProgressReport:
    """Counts work done toward a total and reports it: through ``rich`` on a terminal,
    as plain lines every :data:`LINE_INTERVAL_SECONDS` seconds elsewhere.

    Use :func:`progress_report`; call :meth:`advance` (by a count) or :meth:`update` (to a
    total done) as the work goes.
    """

    def __init__(
        self,
        description: str,
        total: int,
        *,
        advance_bar: Callable[[int], None] | None,
        stream: Callable[[], TextIO] | None,
        interval: float,
        clock: Callable[[], float],
    ) -> None:
        self.description = description
        self.total = total
        self.completed = 0
        self._advance_bar = advance_bar
        self._stream = stream
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._last_line: float | None = None

    def advance(self, count: int = 1) -> None:
        """Record ``count`` more units done."""
        self.update(self.completed + count)

    def update(self, completed: int) -> None:
        """Record that ``completed`` units are done in all."""
        step = completed - self.completed
        self.completed = completed
        if self._advance_bar is not None:
            self._advance_bar(step)
        if self._stream is None:
            return
        now = self._clock()
        due = self._last_line is None or now - self._last_line >= self._interval
        if due or completed >= self.total:
            self._write_line(now)

    def _write_line(self, now: float) -> None:
        assert self._stream is not None
        share = f" ({100 * self.completed // self.total}%)" if self.total > 0 else ""
        stream = self._stream()
        stream.write(
            f"{self.description}: {self.completed}/{self.total}{share}, "
            f"{now - self._started:.0f} s\n"
        )
        stream.flush()
        self._last_line = now


@contextmanager
def progress_report(
    description: str,
    total: int,
    *,
    enabled: bool = True,
    transient: bool = False,
    interval: float = LINE_INTERVAL_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[ProgressReport]:
    """Report progress of ``total`` units of work named ``description`` on standard error.

    Args:
        description: what is being done (``"embedding"``), the line's or bar's label.
        total: units of work in all (texts, rows, queries).
        enabled: report at all (``False``: the report counts silently).
        transient: on a terminal, remove the bar when the work ends.
        interval: seconds between two lines off a terminal.
        clock: the time source, in seconds (tests pass their own).

    Yields:
        The :class:`ProgressReport` to advance.
    """
    if not enabled:
        yield ProgressReport(
            description, total, advance_bar=None, stream=None, interval=interval, clock=clock
        )
        return
    if not sys.stderr.isatty():
        yield ProgressReport(
            description,
            total,
            advance_bar=None,
            stream=lambda: sys.stderr,
            interval=interval,
            clock=clock,
        )
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from hotdata_retrieval._console import make_console

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=make_console(stderr=True),
        transient=transient,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield ProgressReport(
            description,
            total,
            advance_bar=lambda step: bar.advance(task, step),
            stream=None,
            interval=interval,
            clock=clock,
        )
