"""What every benchmark script shares: the machine line, the command line, the load average,
quantiles, and rewriting its own marked section of ``docs/benchmarks.md``."""

from __future__ import annotations

import os
import platform
import re
import shlex
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_version(name: str) -> str:
    """The installed version of distribution ``name``, or ``?``."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def machine(*packages: str) -> str:
    """CPUs, CPU model, OS, Python, and the versions of ``packages`` (distribution names)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    parts = [
        f"{os.cpu_count()} CPUs ({model})",
        f"{platform.system()} {platform.machine()}",
        f"Python {platform.python_version()} ({platform.python_implementation()})",
        *(f"{name} {package_version(name)}" for name in packages),
    ]
    return ", ".join(parts)


def load_average() -> str:
    """The 1-minute load average (other processes compete for the same cores)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def command() -> str:
    """How this script was run, relative to the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        shown = str(script.relative_to(ROOT))
    except ValueError:
        shown = sys.argv[0]
    return shlex.join(["python", shown, *sys.argv[1:]])


def quantile(values: Sequence[float], fraction: float) -> float:
    """The value at ``fraction`` of the sorted ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def write_section(path: Path, body: str, start: str, end: str) -> None:
    """Replace the section of ``path`` between the ``start`` and ``end`` markers with
    ``body`` (append a marked section if there is none)."""
    section = f"{start}\n{body}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _match: section, text, count=1)
    else:
        text = (text.rstrip("\n") + "\n\n" if text else "") + section + "\n"
    path.write_text(text, encoding="utf-8")


def publish(body: str, path: Path | None, start: str, end: str) -> None:
    """Print a report's ``body``; with ``path`` (a script's ``--write``), also rewrite its
    marked section there (:func:`write_section`) and say so on standard error."""
    print(body)
    if path is not None:
        write_section(path, body, start, end)
        print(f"wrote {path}", file=sys.stderr)
