"""The local engine's agent SQL in a worker process (:mod:`hotdata_retrieval.engines._worker`).

Some statements cannot be stopped from inside the process that runs them on DataFusion: it
folds constants and plans long expressions before any batch exists, so a time limit checked
between batches comes too late (``repeat(md5('x'), 50000000)`` in the ``SELECT`` list); a
scalar that allocates gigabytes is invisible to its memory pool, and a failed allocation aborts
the process; a 10,000-term expression overflows the planner's stack. The engine's
``stream_sql`` therefore runs each statement in a worker process that opens the same database
directory (read-only use) and follows its catalog as any engine does
(:class:`LocalSqlOpener`); inside, DataFusion's memory pool is set to the memory limit too, so
sorts, joins and aggregates fail earlier and more gently than the worker's resident-set limit.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.engines._worker import SessionOpener, WorkerSession
from hotdata_retrieval.engines._worker import SqlWorker as SqlWorker
from hotdata_retrieval.engines.limits import SqlLimits

if TYPE_CHECKING:
    import pyarrow as pa

logger = logging.getLogger(__name__)


@attrs.frozen
class LocalSqlOpener(SessionOpener):
    """Opens the local database directory ``root`` in the worker.

    Attributes:
        root: the database directory.
        catalog: the catalog three-part names use.
        schema: the schema.
        embedder: the engine's embedder, pickled, for ``vector_search`` and ``vector_distance``
            in the worker's SQL (``None``: semantic SQL reports that the engine has none).
    """

    root: str
    catalog: str
    schema: str
    embedder: bytes | None = None

    def open(self) -> WorkerSession:
        from hotdata_retrieval.engines.local.engine import LocalEngine

        model = None
        if self.embedder is not None:
            with contextlib.suppress(Exception):  # no embedder: semantic SQL says so itself
                model = pickle.loads(self.embedder)
        return _LocalSession(
            LocalEngine(self.root, embedder=model, catalog=self.catalog, schema=self.schema)
        )

    def describe(self) -> str:
        return f"the database {self.root}"


_WARM_UP = "SELECT count(*), min(value), max(value) FROM range(1000)"
"""The statement a fresh worker runs before it reports ready (:meth:`_LocalSession.warm_up`)."""


class _LocalSession(WorkerSession):
    """The worker's engine, running each statement in its agent session."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine  # a LocalEngine (its module is imported in the worker only)

    def stream(
        self, text: str, limits: SqlLimits, context: Any
    ) -> Generator[pa.RecordBatch, None, None]:
        batches: Generator[pa.RecordBatch, None, None] = self.engine._stream_here(
            text, limits=limits
        )
        return batches

    def warm_up(self) -> None:
        # DataFusion starts its runtime and loads its planner's and aggregates' kernels on
        # the first statement: about 28 MiB of resident memory with datafusion 55, more than
        # half of a 32 MiB memory limit, which a fresh worker's first statement was charged.
        for _ in self.engine._stream_here(_WARM_UP, limits=SqlLimits()):
            pass

    def close(self) -> None:
        self.engine.close()


def local_sql_worker(root: Path, *, catalog: str, schema: str, embedder: Any = None) -> SqlWorker:
    """A :class:`~hotdata_retrieval.engines._worker.SqlWorker` over one local database
    directory.

    Args:
        root: the database directory.
        catalog: the catalog three-part names use.
        schema: the schema.
        embedder: the embedder for ``vector_search`` and ``vector_distance`` in the worker's
            SQL; passed by pickling (one that cannot be pickled is left out, and semantic SQL
            then reports that the engine has no embedder).
    """
    pickled = None
    if embedder is not None:
        try:
            pickled = pickle.dumps(embedder)
        except Exception:
            logger.debug("the embedder cannot be pickled; the SQL worker runs without it")
    return SqlWorker(
        LocalSqlOpener(root=str(root), catalog=catalog, schema=schema, embedder=pickled)
    )
