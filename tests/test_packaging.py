"""The sdist ships the package, its tests and its documentation, and not the CI script
(``.ci/``); both distributions carry the licence.

The sdist is built in-process by the build backend itself (hatchling's sdist builder, under
``[tool.hatch.build.targets.sdist]``; under a second), and its archive is read back.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from hatchling.builders.sdist import SdistBuilder

ROOT = Path(__file__).resolve().parent.parent

#: Hidden files the sdist may hold: hatchling always adds the ignore list, so that a wheel
#: built from the sdist leaves out what the checkout's wheel does.
HIDDEN_ALLOWED = frozenset({".gitignore"})


@pytest.fixture(scope="module")
def builder() -> SdistBuilder:
    return SdistBuilder(str(ROOT))


@pytest.fixture(scope="module")
def sdist_files(builder: SdistBuilder, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The sdist's files, relative to its top directory."""
    directory = str(tmp_path_factory.mktemp("sdist"))
    (archive,) = builder.build(directory=directory, versions=["standard"])
    with tarfile.open(archive) as sdist:
        names = [member.name for member in sdist.getmembers() if member.isfile()]
    return {name.partition("/")[2] for name in names}


def test_the_sdist_leaves_out_the_ci_script(sdist_files: set[str]) -> None:
    assert ".ci/run" not in sdist_files
    hidden = {path for path in sdist_files if any(part.startswith(".") for part in path.split("/"))}
    assert hidden <= HIDDEN_ALLOWED


def test_the_sdist_keeps_the_package_its_tests_and_docs(sdist_files: set[str]) -> None:
    wanted = {
        "PKG-INFO",
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "hotdata_retrieval/__init__.py",
        "hotdata_retrieval/py.typed",
        "tests/conftest.py",
        "docs/cli.md",
        "docs/licences.md",
    }
    assert wanted <= sdist_files


def test_the_metadata_declares_the_licence_file(builder: SdistBuilder) -> None:
    assert builder.metadata.core.license_expression == "Apache-2.0"
    assert builder.metadata.core.license_files == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")
