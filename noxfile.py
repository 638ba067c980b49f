"""Developer sessions: ``nox -s tests``, ``lint``, ``typecheck``, ``snapshots``, ``bench``."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (hypothesis 'ci' profile: 1,000 examples per property)."""
    session.install("-e", ".[test]")
    session.run("pytest", "--hypothesis-profile=ci", *session.posargs)


@nox.session
def snapshots(session: nox.Session) -> None:
    """Rewrite the SQL snapshots after a deliberate change; review the diff like code."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests", "--snapshot-update", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package."""
    session.install("-e", ".[local,hotdata]", "mypy")
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """Run the benchmarks and print the ratios recorded in docs/benchmarks.md."""
    session.install("-e", ".[bench]")
    session.run("python", "benchmarks/bench_compile.py", *session.posargs)
