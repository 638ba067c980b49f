"""Shared test configuration: hypothesis profiles and the SQL snapshot extension."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

# No deadline in either profile: a per-example time limit is a wall-clock assertion, and a
# loaded machine trips it without any test being wrong.
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=1000,
    deadline=None,
    # CI machines are shared and slow; at 1,000 examples a strategy's rare rejections can
    # trip these timing and rejection-rate checks without any test being wrong.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


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
