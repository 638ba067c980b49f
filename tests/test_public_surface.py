"""The public surface: every error lives in one module, ``__all__`` only in packages."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import hotdata_retrieval
from hotdata_retrieval import errors

PACKAGE_ROOT = Path(hotdata_retrieval.__file__).parent

# Errors of the command line: they carry exit codes and never leave the process.
COMMAND_LINE_ERRORS = {"CommandError", "InvalidPlanError"}


def _library_sources() -> list[Path]:
    return sorted(PACKAGE_ROOT.rglob("*.py"))


def _defined_exceptions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
            found.append(node.name)
    return found


def test_every_library_error_is_defined_in_the_errors_module() -> None:
    elsewhere = {
        str(path.relative_to(PACKAGE_ROOT)): names
        for path in _library_sources()
        if path.name != "errors.py" or path.parent != PACKAGE_ROOT
        if (names := [n for n in _defined_exceptions(path) if n not in COMMAND_LINE_ERRORS])
    }
    assert elsewhere == {}


def test_every_error_is_exported_from_the_package() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    }
    assert defined - set(hotdata_retrieval.__all__) == set()
    for name in defined:
        assert issubclass(getattr(hotdata_retrieval, name), errors.HotdataRetrievalError)


def test_only_packages_declare_all() -> None:
    declaring = [
        str(path.relative_to(PACKAGE_ROOT))
        for path in _library_sources()
        if path.name != "__init__.py"
        and any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            for node in ast.parse(path.read_text(encoding="utf-8")).body
        )
    ]
    assert declaring == []


def test_every_name_a_package_exports_resolves() -> None:
    for module in pkgutil.walk_packages(hotdata_retrieval.__path__, "hotdata_retrieval."):
        if not module.ispkg:
            continue
        try:
            package = importlib.import_module(module.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name in getattr(package, "__all__", ()):
            assert hasattr(package, name), f"{module.name}.__all__ names missing {name}"


def test_the_errors_module_imports_only_the_standard_library_and_attrs() -> None:
    # the lowest layer: every module may raise its errors, so it reaches up to none of them
    # (not even inside a function, where an import hides from the module's top)
    tree = ast.parse((PACKAGE_ROOT / "errors.py").read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    assert imported, "the walk found no import at all"
    above = sorted(
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "attrs"
    )
    assert above == []
