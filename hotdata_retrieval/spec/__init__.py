"""The conformance kit of ``docs/spec/hybrid_search.md``.

:func:`build_cases` makes the cases (fixture corpus, plan, expected rows computed without SQL);
:func:`export_cases` writes them as JSON and :func:`load_cases` reads them back;
:func:`verify` runs them on an engine as the compiled CTE statement (in the engine's own
dialect; through its ``search`` where it runs no SQL) and, where the engine has it, as a native
``hybrid_search`` call, and reports every difference. Importing this package
registers the ``hotdata-native`` dialect.
"""

from __future__ import annotations

import json
from pathlib import Path

from hotdata_retrieval.spec.cases import CASE_FORMAT, DIVERGENCES, Case, CaseError, build_cases
from hotdata_retrieval.spec.native import HOTDATA_NATIVE, HYBRID_SEARCH_FUNCTION, native_profile
from hotdata_retrieval.spec.verify import (
    CaseReport,
    EngineUnavailableError,
    FormResult,
    Report,
    engine_dialect,
    open_engine,
    opened_engine,
    verify,
)

__all__ = [
    "CASE_FORMAT",
    "DIVERGENCES",
    "HOTDATA_NATIVE",
    "HYBRID_SEARCH_FUNCTION",
    "Case",
    "CaseError",
    "CaseReport",
    "EngineUnavailableError",
    "FormResult",
    "Report",
    "build_cases",
    "engine_dialect",
    "export_cases",
    "load_cases",
    "native_profile",
    "open_engine",
    "opened_engine",
    "verify",
]

INDEX_FILE = "index.json"


def export_cases(directory: str | Path, cases: list[Case] | None = None) -> list[Path]:
    """Write each case to ``<directory>/<name>.json`` and a list of them to ``index.json``;
    returns the case files written. The directory is created if needed."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    chosen = build_cases() if cases is None else cases
    written = []
    for case in chosen:
        path = target / f"{case.name}.json"
        path.write_text(json.dumps(case.to_document(), indent=2) + "\n", encoding="utf-8")
        written.append(path)
    index = {
        "format": CASE_FORMAT,
        "spec": "docs/spec/hybrid_search.md",
        "cases": [f"{case.name}.json" for case in chosen],
    }
    (target / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return written


def load_cases(directory: str | Path) -> list[Case]:
    """Read the cases listed in ``<directory>/index.json``, in order.

    Raises:
        CaseError: a missing or unreadable file, or a document that is not a case.
    """
    source = Path(directory)
    try:
        index = json.loads((source / INDEX_FILE).read_text(encoding="utf-8"))
        names = index["cases"]
        return [
            Case.from_document(json.loads((source / name).read_text(encoding="utf-8")))
            for name in names
        ]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CaseError(f"cannot read the cases in {source}: {error}") from None
