"""A package's public names resolved on first use (PEP 562), so importing the package loads
none of the modules behind them until a name is read."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], exported_from: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of package ``package`` (its ``globals()`` are
    ``namespace``) that import each name of ``exported_from`` (module → names) when it is
    first read, and keep it in ``namespace``.

    Raises (from ``__getattr__``):
        AttributeError: a name the package does not export.
    """
    module_of = {name: module for module, names in exported_from.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(module_of))

    return __getattr__, __dir__
