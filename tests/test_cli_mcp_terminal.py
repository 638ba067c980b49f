"""``hdq mcp`` started by hand in a terminal says what it is, in one line on stderr, and then
serves as usual; started by a client (stdin a pipe) it says nothing (issue 9)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from hotdata_retrieval.cli.mcp import TERMINAL_NOTICE, terminal_notice
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from tests.test_adapters_mcp import _load

TIMEOUT = 60.0
"""Seconds the server may take to start and answer before the test fails."""

COMMAND = "from hotdata_retrieval.cli.mcp import mcp; mcp()"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("hdq")
    with LocalEngine(directory, embedder=HashingEmbedder()) as engine:
        _load(engine)
    return directory


def _read_line(descriptor: int, deadline: float) -> bytes:
    """One line from ``descriptor``, or what came before the deadline."""
    data = b""
    while not data.endswith(b"\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([descriptor], [], [], 0.2)
        if ready:
            chunk = os.read(descriptor, 1)
            if not chunk:
                break
            data += chunk
    return data


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """A pseudo-terminal: ``(controller, terminal)`` descriptors."""
    controller, device = pty.openpty()
    yield controller, device
    for descriptor in (controller, device):
        with contextlib.suppress(OSError):  # the test may have closed it
            os.close(descriptor)


def test_the_notice_is_for_a_terminal_only(terminal: tuple[int, int]) -> None:
    _, device = terminal
    with os.fdopen(os.dup(device), "rb", buffering=0) as stream:
        assert terminal_notice(stream) == TERMINAL_NOTICE
    assert terminal_notice(io.BytesIO(b"")) is None
    closed = io.StringIO()
    closed.close()
    assert terminal_notice(closed) is None
    assert "\n" not in TERMINAL_NOTICE and "docs/adapters.md" in TERMINAL_NOTICE


def test_hdq_mcp_in_a_terminal_says_so_then_serves(
    database: Path, terminal: tuple[int, int]
) -> None:
    controller, device = terminal
    process = subprocess.Popen(
        [sys.executable, "-c", COMMAND, "--database", str(database), "--table", "docs"],
        stdin=device,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        deadline = time.monotonic() + TIMEOUT
        notice = _read_line(process.stderr.fileno(), deadline)
        assert notice.decode() == TERMINAL_NOTICE + "\n"
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "terminal", "version": "0"},
            },
        }
        os.write(controller, json.dumps(request).encode() + b"\n")
        reply = json.loads(_read_line(process.stdout.fileno(), deadline))
        assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "hotdata-retrieval"
        os.write(controller, b"\x04")  # Ctrl-D: end of input
        assert process.wait(timeout=TIMEOUT) == 0
        assert process.stderr.read() == b""  # nothing more than the one line
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_hdq_mcp_started_by_a_client_says_nothing(database: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-c", COMMAND, "--database", str(database), "--table", "docs"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert finished.returncode == 0
    assert finished.stderr == b""
    assert finished.stdout == b""


def test_hdq_mcp_with_its_standard_input_closed_says_so(database: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "hotdata_retrieval", "mcp", "--database", str(database),
         "--table", "docs"],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
        preexec_fn=lambda: os.close(0),  # the child closes its fd 0 before exec
    )  # fmt: skip
    assert "Traceback" not in finished.stderr
    assert finished.returncode == 2
    assert finished.stderr.splitlines()[0] == (
        "hdq mcp: error: standard input is closed: an MCP client writes its requests there"
    )
    assert finished.stdout == ""
