"""Long work reports progress off a terminal: steady lines on standard error, not silence.

rich prints nothing of a live bar until the work ends when standard error is a file or a
pipe; these tests redirect it and check the lines a log would hold.
"""

from __future__ import annotations

import io
import sys

import pytest

from hotdata_retrieval._progress import progress_report
from hotdata_retrieval.embed import HashingEmbedder, embed_in_batches


class _Clock:
    """A clock the test moves by hand, in seconds."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_line_comes_after_the_first_step_then_every_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    clock = _Clock()
    with progress_report("embedding", 721, interval=5.0, clock=clock) as report:
        for _ in range(721 // 10):
            clock.now += 1.0
            report.advance(10)
        report.advance(721 - report.completed)
    lines = log.getvalue().splitlines()
    # the first line after the first step, then one per 5 s of the 72 s, then the last one
    assert lines[0] == "embedding: 10/721 (1%), 1 s"
    assert lines[-1] == "embedding: 721/721 (100%), 72 s"
    assert len(lines) == 1 + 72 // 5 + 1
    counts = [int(line.split(": ")[1].split("/")[0]) for line in lines]
    assert counts == sorted(counts)
    # well before the work is half done, a line said so
    assert any(count < 721 // 2 for count in counts[1:])


def test_lines_go_to_the_standard_error_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``hdq --quiet`` swaps standard error for a buffer: the lines must follow it."""
    before, after = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", before)
    clock = _Clock()
    with progress_report("rows", 4, clock=clock) as report:
        monkeypatch.setattr(sys, "stderr", after)
        report.advance(4)
    assert before.getvalue() == ""
    assert after.getvalue() == "rows: 4/4 (100%), 0 s\n"


def test_a_disabled_report_counts_and_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    with progress_report("rows", 3, enabled=False) as report:
        report.advance(2)
        report.update(3)
    assert report.completed == 3
    assert log.getvalue() == ""


def test_embedding_off_a_terminal_prints_lines_as_it_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    seen: list[str] = []

    def on_batch(start: int, _vectors: object) -> None:
        seen.append(log.getvalue())

    embed_in_batches(
        HashingEmbedder(dimensions=8),
        ["a b"] * 10,
        batch_size=4,
        on_batch=on_batch,
        description="embedding",
    )
    # the first batch's line was written before the second batch started
    assert seen[1].startswith("embedding: 4/10 (40%)")
    assert log.getvalue().splitlines()[-1].startswith("embedding: 10/10 (100%)")
