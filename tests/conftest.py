"""Shared test configuration: hypothesis profiles, the SQL snapshot extension and the shared
fixtures of tests/door_tables.py."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

pytest_plugins = ["tests.door_tables"]  # door_database, door_engine: the every-door value tests

# Property budgets per profile: "dev" (the default) for a quick local run, "ci" for the
# README's test command and CI (300 examples, so the whole suite finishes in minutes on two
# cores), "thorough" for a long run before a release (1,000). No deadline in any profile: a
# per-example time limit is a wall-clock assertion, and a loaded machine trips it without any
# test being wrong. On shared, slow machines a strategy's rare rejections can trip the timing
# and rejection-rate checks without any test being wrong, so the long profiles suppress them.
_SHARED_MACHINE = [HealthCheck.too_slow, HealthCheck.filter_too_much]
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=_SHARED_MACHINE
)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, suppress_health_check=_SHARED_MACHINE
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The tests never read or write the user's embedding cache (~/.cache/hotdata-retrieval): each
# load embeds its own texts, as the tests expect, and a test of that cache names its own
# directory. Set before any test (and any subprocess a test starts) reads the environment.
os.environ["HDQ_EMBEDDING_CACHE"] = "off"


class SqlSnapshotExtension(SingleFileSnapshotExtension):
    """Stores each snapshot as one reviewable ``.sql`` file."""

    _write_mode = WriteMode.TEXT
    file_extension = "sql"


@pytest.fixture
def sql_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """A snapshot fixture that writes ``tests/__snapshots__/<module>/<test>.sql``."""
    return snapshot.use_extension(SqlSnapshotExtension)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL 16 + pgvector server for the session (the ``pgserver`` wheel's
    binaries, on 127.0.0.1), stopped and removed at the end."""
    from hotdata_retrieval.engines.postgres import throwaway_server

    with throwaway_server() as url:
        yield url
