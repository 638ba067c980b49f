"""Every error class the library defines derives from ``HotdataRetrievalError``, so one
``except`` clause catches everything it raises on purpose."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import hotdata_retrieval
from hotdata_retrieval.errors import HotdataRetrievalError


def _library_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(
        hotdata_retrieval.__path__, prefix="hotdata_retrieval."
    ):
        if module_info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(module_info.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_every_error_class_derives_from_the_base_error() -> None:
    exceptions = _library_exceptions()
    assert "hotdata_retrieval.cli.explain.InvalidPlanError" in exceptions
    strays = sorted(
        name for name, cls in exceptions.items() if not issubclass(cls, HotdataRetrievalError)
    )
    assert strays == []


def test_the_cli_plan_error_is_both_a_library_and_a_click_error() -> None:
    import click

    from hotdata_retrieval.cli.explain import InvalidPlanError

    error = InvalidPlanError("bad\nplan")
    assert isinstance(error, HotdataRetrievalError)
    assert isinstance(error, click.ClickException)
    assert error.message == "bad plan"
    assert error.exit_code == 1
