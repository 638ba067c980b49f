"""The public constructors and the search chain are typed for a user's type checker: a
script using plans, the chain and ``to_pandas()`` passes ``mypy --strict``, and each wrong
argument type in its twin fails it (the plan classes' attrs converters state what each field
takes, so mypy sees ``limit: int`` where it would see ``Any``).

The scripts are checked as a user's code is: ``--strict``, the library found on the path and
its own modules' findings silenced (as for an installed package). mypy's cache lives in the
temporary directory, so a later run checks only what changed.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]

USER_SCRIPT = """\
from __future__ import annotations

import numpy as np

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    InList,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    TableUnion,
)
from hotdata_retrieval.engines.local import LocalEngine

text = Bm25Search(table="reviews", column="body", query_text="battery life", name="text")
nearest = NearestNeighborSearch(
    table="reviews", column="embedding", query_vector=np.array([0.1, 0.2]), metric="cosine"
)
rated = Comparison(column="rating", operator=">=", value=4)
plan = SearchPlan(
    source=ReciprocalRankFusion(branches=[text, nearest], weights=[1.0, 2], rank_constant=60),
    columns=["id", "body"],
    limit=5,
    offset=0,
    filter=rated & InList(column="lang", values=["en"]),
    tie_breakers=["created_at desc", ("id", "asc")],
)
union = Bm25Search(table=TableUnion(["memory_v1", "episode_v1"]), column="body", query_text="q")
listed = Bm25Search(table=["memory_v1", "episode_v1"], column="body", query_text="q")

with LocalEngine() as engine:
    frame = engine.search(plan).to_pandas()
    chained = (
        engine.table("reviews")
        .search("battery life", mode="hybrid", fusion="rrf")
        .where("rating >= 4")
        .where({"lang": "en"})
        .select("id", "body")
        .offset(10)
        .limit(10)
    )
    print(chained.explain())
    rows: list[dict[str, object]] = chained.to_list()
    table = chained.to_arrow()
    again = chained.to_pandas()
    keys = chained.run().keys
"""
"""A user's script: plans built by hand, the search chain, results as data frames."""

WRONG_TYPES = """\
from __future__ import annotations

from hotdata_retrieval import Bm25Search, Comparison, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.local import LocalEngine

text = Bm25Search(table="reviews", column="body", query_text=3)  # wrong
Bm25Search(table=7, column="body", query_text="q")  # wrong
NearestNeighborSearch(table="reviews", column="embedding", query_vector="0.1, 0.2")  # wrong
SearchPlan(source=Bm25Search(table="reviews", column="body", query_text="q"), limit="5")  # wrong
SearchPlan(source="reviews")  # wrong
Comparison(column=1, operator=">=", value=4)  # wrong

with LocalEngine() as engine:
    engine.table("reviews").search("q", mode="fuzzy")  # wrong
    engine.table("reviews").search("q", mode="text").limit("10")  # wrong
    engine.table("reviews").search("q", mode="text").where(4)  # wrong
"""
"""The user's script with one wrong argument type on each line marked ``# wrong``."""


def _mypy(tmp_path: Path) -> tuple[str, dict[str, set[int]]]:
    """mypy's report on both scripts, and the lines of each that it finds an error on."""
    (tmp_path / "user_script.py").write_text(USER_SCRIPT)
    (tmp_path / "wrong_types.py").write_text(WRONG_TYPES)
    config = tmp_path / "mypy.ini"
    config.write_text(
        f"[mypy]\nstrict = True\nmypy_path = {ROOT}\n\n"
        "[mypy-hotdata_retrieval.*]\nfollow_imports = silent\n"
    )
    cache = Path(tempfile.gettempdir()) / "hotdata-retrieval-user-typing-cache"
    stdout, stderr, _ = api.run(
        [
            "--config-file",
            str(config),
            "--cache-dir",
            str(cache),
            str(tmp_path / "user_script.py"),
            str(tmp_path / "wrong_types.py"),
        ]
    )
    assert not stderr, stderr
    found: dict[str, set[int]] = {"user_script.py": set(), "wrong_types.py": set()}
    for line in stdout.splitlines():
        match = re.match(r"(?:.*[/\\])?(\w+\.py):(\d+): error:", line)
        if match:
            found.setdefault(match[1], set()).add(int(match[2]))
    return stdout, found


def test_a_users_script_passes_strict_and_each_wrong_type_fails(tmp_path: Path) -> None:
    report, found = _mypy(tmp_path)
    assert found["user_script.py"] == set(), report
    marked = {
        number
        for number, line in enumerate(WRONG_TYPES.splitlines(), start=1)
        if line.endswith("# wrong")
    }
    assert len(marked) == 9
    assert found["wrong_types.py"] == marked, report
