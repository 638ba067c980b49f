"""Every example plan's exact SQL, pinned as a reviewable ``.sql`` snapshot."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp
from syrupy.assertion import SnapshotAssertion

from hotdata_retrieval import to_sql
from tests.plans import PLANS


@pytest.mark.parametrize("name", sorted(PLANS))
def test_sql_snapshot(name: str, sql_snapshot: SnapshotAssertion) -> None:
    sql = to_sql(PLANS[name])
    assert sql == sql_snapshot
    statements = sqlglot.parse(sql, read="hotdata")
    assert len(statements) == 1
    assert isinstance(statements[0], exp.Select)
