"""``docs/licences.md`` lists every requirement ``pyproject.toml`` declares, in its section.

``pyproject.toml`` is the source: the core install's ``dependencies`` and each extra of
``[project.optional-dependencies]``. Each has one section in the page (``## The core
install``, ``## Extra: `name```) whose table has one row per requirement, naming the
distribution and the requirement exactly as declared; a requirement on the package's own
extras (``hotdata-retrieval[local]``) is named in the section's text instead. A requirement
added, removed or re-pinned without the page following fails here, naming it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
LICENCES = ROOT / "docs" / "licences.md"
README = ROOT / "README.md"

#: The section the core install's requirements are listed in.
CORE = "core"

_CORE_HEADING = re.compile(r"^## The core install\s*$")
_EXTRA_HEADING = re.compile(r"^## Extra: `(?P<extra>[^`]+)`\s*$")
_ROW = re.compile(r"^\|\s*`(?P<name>[^`]+)`\s*\|\s*(?P<requirement>[^|]*?)\s*\|")
_BROUGHT_BY = re.compile(r"^brought by `(?P<requirement>[^`]+)`$")


@dataclass
class Section:
    """One section of the page: its rows (distribution -> requirement cell) and its text."""

    rows: dict[str, str] = field(default_factory=dict)
    text: str = ""


def declared(pyproject: str) -> dict[str, list[Requirement]]:
    """The requirements of the core install and of each extra, parsed from pyproject text."""
    project = tomllib.loads(pyproject)["project"]
    groups = {CORE: project.get("dependencies", [])}
    groups.update(project.get("optional-dependencies", {}))
    return {group: [Requirement(text) for text in texts] for group, texts in groups.items()}


def documented(page: str) -> dict[str, Section]:
    """The page's sections by group, each with its table rows (keyed by canonical name)."""
    sections: dict[str, Section] = {}
    current: Section | None = None
    for line in page.splitlines():
        if line.startswith("## "):
            core, extra = _CORE_HEADING.match(line), _EXTRA_HEADING.match(line)
            group = CORE if core else (extra["extra"] if extra else None)
            current = None if group is None else sections.setdefault(group, Section())
            continue
        if current is None:
            continue
        current.text += line + "\n"
        row = _ROW.match(line)
        if row is not None:
            current.rows[canonicalize_name(row["name"])] = row["requirement"]
    return sections


def _cell_requirement(cell: str) -> tuple[Requirement, bool] | None:
    """The requirement a row's cell names and whether it is 'brought by' it, else None."""
    brought = _BROUGHT_BY.match(cell)
    text = brought["requirement"] if brought else cell.strip("`")
    if not brought and not (cell.startswith("`") and cell.endswith("`")):
        return None
    try:
        return Requirement(text), brought is not None
    except InvalidRequirement:
        return None


def _brought_by(named: Requirement, declared: dict[str, Requirement]) -> bool:
    """Whether ``named`` (``psycopg[binary]``) is a declared requirement with those extras."""
    parent = declared.get(canonicalize_name(named.name))
    return parent is not None and bool(named.extras) and named.extras <= parent.extras


def problems(
    requirements: dict[str, list[Requirement]], sections: dict[str, Section], package: str
) -> list[str]:
    """Every way the page's sections disagree with the declared requirements."""
    found: list[str] = []
    own = canonicalize_name(package)
    for group in sorted(requirements.keys() - sections.keys()):
        found.append(f"{group}: declared in pyproject.toml, no section in docs/licences.md")
    for group in sorted(sections.keys() - requirements.keys()):
        found.append(f"{group}: a section in docs/licences.md, not declared in pyproject.toml")
    for group in sorted(requirements.keys() & sections.keys()):
        section = sections[group]
        wanted = [r for r in requirements[group] if canonicalize_name(r.name) != own]
        by_name = {canonicalize_name(r.name): r for r in wanted}
        for requirement in requirements[group]:
            if canonicalize_name(requirement.name) != own:
                continue
            for extra in sorted(requirement.extras):
                if f"`{extra}`" not in section.text:
                    found.append(f"{group}: brings the {extra!r} extra; its section omits it")
        for name, requirement in by_name.items():
            if name not in section.rows:
                found.append(f"{group}: {requirement} is missing from docs/licences.md")
                continue
            cell = _cell_requirement(section.rows[name])
            if cell is None or cell[1] or cell[0] != requirement:
                found.append(
                    f"{group}: {name} is listed as {section.rows[name]!r}, declared as "
                    f"{str(requirement)!r}"
                )
        for name, text in section.rows.items():
            if name in by_name:
                continue
            cell = _cell_requirement(text)
            if cell is None or not cell[1] or not _brought_by(cell[0], by_name):
                found.append(f"{group}: {name} is listed, but pyproject.toml does not declare it")
    return found


def test_every_declared_requirement_is_listed_in_its_section() -> None:
    requirements = declared(PYPROJECT.read_text(encoding="utf-8"))
    sections = documented(LICENCES.read_text(encoding="utf-8"))
    assert problems(requirements, sections, "hotdata-retrieval") == []


PYPROJECT_SAMPLE = """
[project]
name = "sample"
dependencies = ["click>=8.1,<9"]
[project.optional-dependencies]
db = ["psycopg[binary]>=3.1", "pyarrow>=17"]
all = ["sample[db]"]
"""

PAGE_SAMPLE = """
## The core install
| Distribution | Requirement | Licence |
|---|---|---|
| `click` | `click>=8.1,<9` | BSD-3-Clause |

## Extra: `db`
| `psycopg` | `psycopg[binary]>=3.1` | LGPL-3.0-only |
| `psycopg-binary` | brought by `psycopg[binary]` | LGPL-3.0-only |
| `pyarrow` | `pyarrow>=17` | Apache-2.0 |

## Extra: `all`
Everything in `db`.
"""


def test_a_page_that_agrees_has_no_problems() -> None:
    assert problems(declared(PYPROJECT_SAMPLE), documented(PAGE_SAMPLE), "sample") == []


@pytest.mark.parametrize(
    ("page", "problem"),
    [
        (
            PAGE_SAMPLE.replace("| `pyarrow` | `pyarrow>=17` | Apache-2.0 |\n", ""),
            "db: pyarrow>=17 is missing from docs/licences.md",
        ),
        (
            PAGE_SAMPLE.replace("`click>=8.1,<9`", "`click>=8.0`"),
            "core: click is listed as '`click>=8.0`', declared as 'click<9,>=8.1'",
        ),
        (
            PAGE_SAMPLE.replace("## Extra: `all`\nEverything in `db`.\n", ""),
            "all: declared in pyproject.toml, no section in docs/licences.md",
        ),
        (
            PAGE_SAMPLE.replace("Everything in `db`.", "Nothing else."),
            "all: brings the 'db' extra; its section omits it",
        ),
        (
            PAGE_SAMPLE + "| `numpy` | `numpy>=1.26` | BSD-3-Clause |\n",
            "all: numpy is listed, but pyproject.toml does not declare it",
        ),
        (
            PAGE_SAMPLE.replace("brought by `psycopg[binary]`", "brought by `psycopg[pool]`"),
            "db: psycopg-binary is listed, but pyproject.toml does not declare it",
        ),
        (
            PAGE_SAMPLE + "\n## Extra: `gpu`\n",
            "gpu: a section in docs/licences.md, not declared in pyproject.toml",
        ),
    ],
)
def test_each_disagreement_is_named(page: str, problem: str) -> None:
    assert problems(declared(PYPROJECT_SAMPLE), documented(page), "sample") == [problem]


def test_the_readme_links_the_page() -> None:
    assert "docs/licences.md" in README.read_text(encoding="utf-8")


# -- the licence cells against the installed metadata ----------------------------------------

_LICENCE_ROW = re.compile(
    r"^\|\s*`(?P<name>[^`]+)`\s*\|[^|]*\|\s*(?P<licence>[^|]*?)\s*\|\s*(?P<field>[^|]*?)\s*\|"
    r"\s*(?P<version>[^|]*?)\s*\|\s*$"
)
_COPYLEFT = re.compile(r"\b(A?GPL|LGPL|MPL|EPL|CDDL)\b|General Public|Mozilla Public")


def stated_licence(metadata: object) -> tuple[str, str]:
    """A distribution's licence as the page reads it: ``License-Expression`` (PEP 639), else
    ``License`` (its first line), else its ``License ::`` classifiers' last parts, joined;
    with the field it came from."""
    get = metadata.get  # type: ignore[attr-defined]
    expression = get("License-Expression")
    if expression:
        return expression.strip(), "License-Expression"
    licence = (get("License") or "").strip()
    if licence and licence.upper() != "UNKNOWN":
        return licence.splitlines()[0].strip(), "License"
    classifiers = [
        text.split(" :: ")[-1]
        for text in metadata.get_all("Classifier") or []  # type: ignore[attr-defined]
        if text.startswith("License ::") and text != "License :: OSI Approved"
    ]
    return (", ".join(classifiers), "classifier") if classifiers else ("", "—")


def licence_rows(page: str) -> list[tuple[str, str, str, str]]:
    """Each table row's distribution, licence, field and version read."""
    rows = []
    for line in page.splitlines():
        match = _LICENCE_ROW.match(line)
        if match is not None and match["field"] != "Field":
            rows.append((match["name"], match["licence"], match["field"], match["version"]))
    return rows


def test_each_licence_is_what_the_installed_metadata_states() -> None:
    """Every row whose distribution is installed here at the version the page read states
    the licence and field that distribution's metadata gives now (a re-pin that changed its
    licence fails, naming it); rows of other versions, or not installed, say so."""
    import importlib.metadata

    compared = 0
    wrong = []
    for name, licence, field_name, version in licence_rows(LICENCES.read_text(encoding="utf-8")):
        try:
            metadata = importlib.metadata.metadata(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if metadata["Version"] != version:
            continue
        expected, source = stated_licence(metadata)
        if not expected:
            continue  # stated nowhere: the page's cell says what the distribution ships
        compared += 1
        if (licence, field_name) != (expected, source):
            wrong.append(
                f"{name} {version}: page says {licence!r} ({field_name}), "
                f"metadata says {expected!r} ({source})"
            )
    assert wrong == []
    # the test extra installs most of the extras: when few rows match the installed versions,
    # the page was read from versions no longer installed, and wants reading again
    assert compared >= 5, f"only {compared} rows are of installed versions"


def test_every_copyleft_licence_is_named_in_the_warnings() -> None:
    page = LICENCES.read_text(encoding="utf-8")
    warnings = page.split("Worth knowing before redistributing:", 1)[1].split("\n## ", 1)[0]
    copyleft = {name for name, licence, _, _ in licence_rows(page) if _COPYLEFT.search(licence)}
    assert copyleft  # psycopg, pglast, hypothesis at least
    missing = sorted(
        name
        for name in copyleft
        if f"`{name}`" not in warnings and f"`{name.split('-')[0]}`" not in warnings
    )
    assert missing == []
