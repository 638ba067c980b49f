"""``NO_COLOR`` (https://no-color.org) turns every style off, not only colours: rich alone
keeps bold and italic under it."""

from __future__ import annotations

import io

import pytest
from rich.table import Table

from hotdata_retrieval._console import make_console


def _rendered(monkeypatch: pytest.MonkeyPatch, no_color: str | None) -> str:
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    output = io.StringIO()
    console = make_console(file=output, force_terminal=True)
    table = Table(title="hits")
    table.add_column("key", style="bold")
    table.add_row("1")
    console.print(table)
    console.print("[bold red]note[/bold red]")
    return output.getvalue()


def test_no_color_writes_plain_text_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _rendered(monkeypatch, "1")
    assert "\x1b[" not in plain
    assert "hits" in plain and "note" in plain


@pytest.mark.parametrize("value", [None, ""])
def test_without_no_color_a_terminal_gets_styles(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    assert "\x1b[1m" in _rendered(monkeypatch, value)  # an empty NO_COLOR is unset
