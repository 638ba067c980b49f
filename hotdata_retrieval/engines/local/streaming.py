"""Reading a DataFusion result batch by batch under a deadline that cancels the query.

DataFusion's Python stream offers an awaitable ``__anext__``; awaiting it on an event loop and
cancelling that await drops the Rust future that computes the batch, and dropping the stream
drops the query's tasks — so the engine stops computing, the caller does not merely stop
waiting (measured: an endless recursive query uses no CPU once its stream is cancelled and
dropped). The awaits run on one private event-loop thread, so a caller on any thread — an MCP
worker thread, or a thread that already runs an event loop — can wait with a timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["DeadlineExceeded", "stream_batches"]


class DeadlineExceeded(Exception):
    """The deadline passed before the next batch was ready (the query was cancelled)."""


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _event_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="hdq-sql-streams", daemon=True)
            thread.start()
            _loop = loop
        return _loop


async def _next_batch(stream: Any) -> Any:
    try:
        return await stream.__anext__()
    except StopAsyncIteration:
        return None


def stream_batches(stream: Any, *, deadline: float) -> Iterator[Any]:
    """Yield ``stream``'s batches as ``pyarrow.RecordBatch`` until it ends or ``deadline``
    (a ``time.monotonic()`` value) passes.

    Raises:
        DeadlineExceeded: the deadline passed; the pending batch was cancelled. Closing the
            generator early also drops the stream, which cancels the query.
    """
    loop = _event_loop()
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded
            future = asyncio.run_coroutine_threadsafe(_next_batch(stream), loop)
            try:
                batch = future.result(timeout=remaining)
            except concurrent.futures.TimeoutError:
                future.cancel()
                raise DeadlineExceeded from None
            if batch is None:
                return
            yield batch.to_pyarrow()
    finally:
        del stream
