"""Start-up benchmark: how long ``hdq --help`` and a one-plan ``hdq explain`` take, against
the floor of starting the same Python interpreter that does nothing.

Run from the repository root::

    python benchmarks/bench_startup.py [--rounds N] [--write docs/benchmarks.md]

Three contenders, each a fresh process (``sys.executable``), run side by side in one run,
interleaved round by round with the order rotating each round so machine noise lands on all
alike, each timed wall-clock with ``time.perf_counter_ns`` from spawn to exit:

- ``python -c pass`` (the interpreter's own start-up, ``site`` included: the floor);
- ``python -m hotdata_retrieval --help``;
- ``python -m hotdata_retrieval explain --table docs --text-column body --vector-column
  embedding --query ... --vector [...]`` (a hybrid plan compiled for the default dialect).

Reported: each one's median and its median excess over the floor in the same round. The
issue's target is under 0.3 s for ``hdq --help`` (a user waits on it; not a test assertion:
``tests/test_startup.py`` pins instead which modules stay unloaded).

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import _report  # the scripts' shared reporting helpers

MARK_START = "<!-- bench_startup:start -->"
MARK_END = "<!-- bench_startup:end -->"

CONTENDERS: dict[str, list[str]] = {
    "python -c pass (floor)": ["-c", "pass"],
    "hdq --help": ["-m", "hotdata_retrieval", "--help"],
    "hdq explain (hybrid)": [
        "-m",
        "hotdata_retrieval",
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
    ],
}
FLOOR = "python -c pass (floor)"


def run_once(arguments: list[str]) -> float:
    """Seconds from spawning ``sys.executable arguments`` to its exit (output discarded)."""
    started = time.perf_counter_ns()
    subprocess.run([sys.executable, *arguments], check=True, capture_output=True)
    return (time.perf_counter_ns() - started) / 1e9


def measure(rounds: int) -> dict[str, dict[str, list[float]]]:
    """Per contender, its times and its excess over the floor of the same round (seconds)."""
    names = list(CONTENDERS)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # one warm-up each: the first start reads files from disk
        run_once(CONTENDERS[name])
    for index in range(rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        for name in order:
            times[name].append(run_once(CONTENDERS[name]))
    excess = {
        name: [value - floor for value, floor in zip(times[name], times[FLOOR], strict=True)]
        for name in names
    }
    return {name: {"times": times[name], "excess": excess[name]} for name in names}


def report(results: dict[str, dict[str, list[float]]], rounds: int) -> str:
    when = datetime.date.today().isoformat()
    lines = [
        f"Measured {when} on {_report.machine('sqlglot', 'click')}; load average "
        f"{_report.load_average()} at the start; {rounds} interleaved rounds.",
        f"Command: `{_report.command()}`, from the repository root.",
        "",
        "| command | median (s) | median over the floor (s) |",
        "| --- | ---: | ---: |",
    ]
    for name, result in results.items():
        median = statistics.median(result["times"])
        over = statistics.median(result["excess"])
        target = " (target < 0.3: met)" if name == "hdq --help" and median < 0.3 else ""
        if name == "hdq --help" and median >= 0.3:
            target = " (target < 0.3: not met)"
        shown_over = "—" if name == FLOOR else f"{over:.3f}"
        lines.append(f"| `{name}` | {median:.3f}{target} | {shown_over} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (15)")
    parser.add_argument(
        "--write", type=Path, metavar="PATH", help="rewrite the marked section of this file"
    )
    options = parser.parse_args(argv)
    results = measure(options.rounds)
    _report.publish(report(results, options.rounds), options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
