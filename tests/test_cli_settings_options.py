"""``hdq mcp`` and ``hdq ddn`` take the settings every door shares from the same options:
``--filter`` (a condition every search applies) and ``hdq search``'s fusion options (a fused
search's default), read into one ``SearchSettings``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from hotdata_retrieval.adapters import SearchSettings
from hotdata_retrieval.cli import main
from hotdata_retrieval.plan.filters import And, Comparison
from hotdata_retrieval.routing import FusionChoice

ROWS = [
    {"id": 1, "body": "the upgrade failed with error E1234", "status": "open", "tier": 1},
    {"id": 2, "body": "login works after the upgrade", "status": "closed", "tier": 2},
    {"id": 3, "body": "billing page is slow after the upgrade", "status": "open", "tier": 2},
]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("settings-options")
    source = root / "tickets.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    loaded = CliRunner().invoke(
        main, ["load", str(source), "--database", str(root / "db"), "--embedder", "hashing"]
    )
    assert loaded.exit_code == 0, loaded.output
    return root / "db"


SHARED = ["--filter", "status = 'open'", "--filter", "tier <= 2", "--fusion", "dbsf"]
SHARED += ["--alpha", "0.4"]


def test_hdq_mcp_builds_its_settings_from_the_shared_options(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hotdata_retrieval.cli.mcp as command

    seen: list[SearchSettings] = []

    def serve(engine: Any, settings: SearchSettings) -> None:
        seen.append(settings)

    monkeypatch.setattr(command, "serve", serve)
    ran = CliRunner().invoke(
        main, ["mcp", "--database", str(database), "--table", "tickets", *SHARED]
    )
    assert ran.exit_code == 0, ran.output
    (settings,) = seen
    assert settings.filter == And(
        operands=(
            Comparison(column="status", operator="=", value="open"),
            Comparison(column="tier", operator="<=", value=2),
        )
    )
    assert settings.fusion == FusionChoice(method="dbsf", options={"alpha": 0.4})


def test_hdq_ddn_metadata_describes_the_default_fusion(database: Path) -> None:
    common = ["ddn", "metadata", "--database", str(database), "--table", "tickets"]
    printed = CliRunner().invoke(main, [*common, *SHARED])
    assert printed.exit_code == 0, printed.output
    (command,) = [d for d in yaml.safe_load_all(printed.stdout) if d["kind"] == "Command"]
    assert '(default "dbsf")' in command["definition"]["description"]
    plain = CliRunner().invoke(main, common)
    (command,) = [d for d in yaml.safe_load_all(plain.stdout) if d["kind"] == "Command"]
    assert '(default "rrf")' in command["definition"]["description"]


def test_a_filter_that_does_not_read_is_a_usage_error(database: Path) -> None:
    ran = CliRunner().invoke(
        main,
        ["ddn", "metadata", "--database", str(database), "--table", "tickets", "--filter", "x ="],
    )
    assert ran.exit_code != 0
    assert "x =" in ran.output and "Traceback" not in ran.output
