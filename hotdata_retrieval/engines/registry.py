"""The engines the library can open by name: one registry the command line, its help texts and
the extras read.

Each :class:`EngineKind` says what an engine is called (``--engine local``), which dialect its
SQL is compiled for (``hdq explain --engine``), which extra it needs (``pip install
'hotdata-retrieval[<extra>]'``), what ``--database`` names for it, and where its class lives,
imported only when an engine is opened:

>>> [kind.name for kind in engine_kinds()]
['local', 'sqlite', 'postgres', 'duckdb', 'lancedb', 'turbopuffer', 'hotdata']
>>> engine_kind("duckdb").dialect, engine_kind("duckdb").extra
('duckdb', 'duckdb')

Another engine that meets the engine contract (:class:`~hotdata_retrieval.engines.base.Engine`)
joins with :func:`register_engine`; registered before :mod:`hotdata_retrieval.cli` is
imported, every command that takes ``--engine`` offers it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import attrs

from hotdata_retrieval.errors import UnknownEngineError
from hotdata_retrieval.extras import EXTRA_MODULES, require_extra


def _extra(instance: Any, attribute: Any, value: str) -> None:
    if value not in EXTRA_MODULES:
        raise ValueError(f"engine extra {value!r} is not one of {', '.join(EXTRA_MODULES)}")


@attrs.frozen(kw_only=True)
class EngineKind:
    """One engine the library opens by name.

    Attributes:
        name: its name on the command line (``local``, ``sqlite``, ...).
        dialect: the registered dialect its SQL is compiled for, or ``None`` for an engine
            that runs no SQL (LanceDB).
        extra: the package extra it needs (a key of
            :data:`~hotdata_retrieval.extras.EXTRA_MODULES`).
        location: what ``--database`` names for it, in words (``a database file``).
        engine_class: where its class lives, ``"module:Class"``; the class is imported when an
            engine is opened, and called with the location and ``embedder=``.
        embedded: whether the database lives in this process's files under the library's own
            format (the local engine), rather than in a store it reads and writes.
        location_is_path: whether the location is a file or directory (a server's URL is
            not).
        constructor: the name of the class's method that opens an engine on a location, in
            place of the class itself (``from_env``: the Hotdata engine reads its API key and
            workspace from the environment); ``None``, the class.
        location_variable: the environment variable naming the location when ``--database``
            is not given (``HOTDATA_DATABASE``), or ``None``: then ``--database`` is needed.
        loadable: whether ``hdq load`` writes tables to it (the engine has ``load_table``).

    Raises:
        ValueError: ``extra`` is no extra of the package.
    """

    name: str
    dialect: str | None
    extra: str = attrs.field(validator=_extra)
    location: str
    engine_class: str
    embedded: bool = False
    location_is_path: bool = True
    constructor: str | None = None
    location_variable: str | None = None
    loadable: bool = True

    def load_class(self) -> Callable[..., Any]:
        """The engine's class, its extra checked first.

        Raises:
            MissingExtraError: the extra is not installed.
        """
        require_extra(self.extra, needed_by=f"the {self.name} engine")
        module, _, name = self.engine_class.partition(":")
        engine: Callable[..., Any] = getattr(importlib.import_module(module), name)
        return engine

    def open(self, location: str, **options: Any) -> Any:
        """An engine of this kind on ``location`` (``options`` go to its class).

        Raises:
            MissingExtraError: the extra is not installed.
            EngineError: the engine cannot open ``location``.
        """
        engine_class = self.load_class()
        if self.constructor is not None:
            return getattr(engine_class, self.constructor)(location, **options)
        return engine_class(location, **options)


_ENGINES: dict[str, EngineKind] = {}


def register_engine(kind: EngineKind) -> EngineKind:
    """Make ``kind`` openable by name (it replaces one registered under the same name).

    Returns:
        ``kind``.
    """
    _ENGINES[kind.name] = kind
    return kind


def engine_kinds() -> tuple[EngineKind, ...]:
    """The registered engines, in registration order (``local`` first)."""
    return tuple(_ENGINES.values())


def kind_of_engine(engine: Any) -> EngineKind | None:
    """The registered kind ``engine`` is an instance of (of its class or a subclass), or
    ``None``. Only classes already imported are looked at: an engine's class is, so nothing is
    imported to answer.

    >>> kind_of_engine(object()) is None
    True
    """
    for kind in _ENGINES.values():
        module, _, name = kind.engine_class.partition(":")
        engine_class = getattr(sys.modules.get(module), name, None)
        if isinstance(engine_class, type) and isinstance(engine, engine_class):
            return kind
    return None


def engine_kind(name: str) -> EngineKind:
    """The engine registered as ``name``.

    Raises:
        UnknownEngineError: none is.
    """
    try:
        return _ENGINES[name]
    except KeyError:
        raise UnknownEngineError(name, tuple(_ENGINES)) from None


register_engine(
    EngineKind(
        name="local",
        dialect="hotdata",
        extra="local",
        location="a database directory",
        engine_class="hotdata_retrieval.engines.local:LocalEngine",
        embedded=True,
    )
)
register_engine(
    EngineKind(
        name="sqlite",
        dialect="sqlite",
        extra="sqlite",
        location="a database file",
        engine_class="hotdata_retrieval.engines.sqlite:SqliteEngine",
    )
)
register_engine(
    EngineKind(
        name="postgres",
        dialect="postgres",
        extra="postgres",
        location="a postgresql:// URL",
        engine_class="hotdata_retrieval.engines.postgres:PostgresEngine",
        location_is_path=False,
    )
)
register_engine(
    EngineKind(
        name="duckdb",
        dialect="duckdb",
        extra="duckdb",
        location="a database file",
        engine_class="hotdata_retrieval.engines.duckdb:DuckdbEngine",
    )
)
register_engine(
    EngineKind(
        name="lancedb",
        dialect=None,
        extra="lancedb",
        location="a database directory",
        engine_class="hotdata_retrieval.engines.lancedb:LancedbEngine",
    )
)
register_engine(
    EngineKind(
        name="turbopuffer",
        dialect=None,
        extra="turbopuffer",
        location="a namespace prefix",
        engine_class="hotdata_retrieval.engines.turbopuffer:TurbopufferEngine",
        location_is_path=False,
    )
)
register_engine(
    EngineKind(
        name="hotdata",
        dialect="hotdata",
        extra="hotdata",
        location="a database id or name in the workspace",
        engine_class="hotdata_retrieval.engines.hotdata:HotdataEngine",
        location_is_path=False,
        constructor="from_env",
        location_variable="HOTDATA_DATABASE",
        loadable=False,
    )
)
