"""Developer sessions: ``nox -s tests``, ``lint``, ``typecheck``, ``snapshots``, ``bench``, and
the downstream checks ``integrations`` (``integrations-langchain``, ``integrations-ibis`` and
``integrations-llamaindex``; not in CI).
"""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite as the README does (every core; hypothesis 'ci' profile: 300
    examples per property)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-n", "auto", "--hypothesis-profile=ci", *session.posargs)


@nox.session
def snapshots(session: nox.Session) -> None:
    """Rewrite the SQL snapshots after a deliberate change; review the diff like code."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests", "--snapshot-update", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package."""
    session.install("-e", ".[local,hotdata]", "mypy")
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """Run the benchmarks and print the ratios recorded in docs/benchmarks.md."""
    session.install("-e", ".[bench]")
    session.run("python", "benchmarks/bench_compile.py", *session.posargs)


LANGCHAIN = "hotdata-langchain==0.17.0"
IBIS = "hotdata-ibis==0.7.0"

LANGCHAIN_DIFFERENCES = (
    "tests/test_search.py::test_vector_search_sql_bounds_with_the_argument_not_a_trailing_limit",
    "tests/test_search.py::test_hybrid_sql_ranks_both_pathways_and_adds_reciprocal_ranks",
    "tests/test_search.py::test_hybrid_sql_keeps_the_shape_the_vector_index_rewrite_survives",
    "tests/test_search.py::test_hybrid_sql_breaks_ties_on_the_join_key",
    "tests/test_search.py::test_hybrid_sql_sorts_on_the_expression_not_the_score_alias",
    "tests/test_vectorstore.py::test_search_sql_shape",
)
"""hotdata-langchain's tests that pin bytes of its hand-built statements where the library's
differ on purpose (docs/integrations.md says why, one by one): deselected, so any other
failure fails the session."""

LLAMAINDEX_REPOSITORY = "https://github.com/hotdata-dev/hotdata-llamaindex"
LLAMAINDEX_COMMIT = "1fe65b3de4248209c2c957defba1931899658fbd"
"""hotdata-llamaindex 0.1.0 (HEAD 1fe65b3): it has no release on the package index, so its
source comes from its repository at this commit (or from a checkout of it, named by the
``HOTDATA_LLAMAINDEX_SOURCE`` environment variable)."""

IBIS_WITHOUT_THEIR_SCRIPT = ("tests/test_update_changelog.py",)
"""hotdata-ibis's tests that need scripts/update_changelog.py, which its sdist lacks."""


def _sdist(session: nox.Session, requirement: str) -> str:
    """Download and unpack ``requirement``'s published sdist; return its folder."""
    import glob
    import tarfile

    target = session.create_tmp()
    session.run(
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--no-binary",
        ":all:",
        requirement,
        "--dest",
        target,
    )
    (archive,) = glob.glob(f"{target}/*.tar.gz")
    with tarfile.open(archive) as opened:
        opened.extractall(target, filter="data")
    return archive[: -len(".tar.gz")]


def _their_suite(session: nox.Session, folder: str, *options: str, **run: object) -> None:
    """Run the unpacked package's own tests, from its folder (``python -m pytest`` puts the
    folder on the path, as their ``tests`` package imports expect)."""
    with session.chdir(folder):
        session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, **run)


@nox.session(name="integrations-langchain")
def integrations_langchain(session: nox.Session) -> None:
    """hotdata-langchain 0.17.0's own suite with its builders, its VectorStore query and its
    SQL helpers delegated to hotdata_retrieval.builders (downstream/langchain_builders.py),
    less the 6 tests that pin the hand-built bytes (:data:`LANGCHAIN_DIFFERENCES`)."""
    folder = _sdist(session, LANGCHAIN)
    session.install("-e", ".", folder, "pytest", "langchain-tests", "langgraph")
    _their_suite(
        session,
        folder,
        "-p",
        "langchain_builders",
        *(f"--deselect={test}" for test in LANGCHAIN_DIFFERENCES),
        env={"PYTHONPATH": f"{session.invoked_from}/downstream"},
    )


@nox.session(name="integrations-ibis")
def integrations_ibis(session: nox.Session) -> None:
    """hotdata-ibis 0.7.0's own suite with its ``semantic_search`` delegated to
    hotdata_retrieval.adapters.ibis (downstream/ibis_semantic_search.py; its sdist lacks
    tests/conftest.py: ../shared/downstream/ has it; 2 of its tests need a script the sdist
    lacks), in an environment of the library with its ``[ibis]`` extra beside hotdata-ibis,
    which ``pip check`` accepts. hotdata-ibis needs hotdata>=0.12, which every
    hotdata-framework release the [hotdata] extra could take excludes or fails on
    (docs/integrations.md, "Installing beside an integration")."""
    import shutil

    folder = _sdist(session, IBIS)
    conftest = f"{session.invoked_from}/../shared/downstream/hotdata-ibis-0.7.0-tests-conftest.py"
    shutil.copy(conftest, f"{folder}/tests/conftest.py")
    session.install("-e", ".[ibis]", folder, "pytest", "pytest-httpserver", "httpx")
    session.run("pip", "check")
    _their_suite(
        session,
        folder,
        "-p",
        "ibis_semantic_search",
        *(f"--ignore={path}" for path in IBIS_WITHOUT_THEIR_SCRIPT),
        env={"PYTHONPATH": f"{session.invoked_from}/downstream"},
    )


def _llamaindex_checkout(session: nox.Session) -> str:
    """A fresh copy of hotdata-llamaindex at :data:`LLAMAINDEX_COMMIT`, cloned from
    ``HOTDATA_LLAMAINDEX_SOURCE`` (a checkout or a repository's URL) or from its repository;
    any other commit is refused."""
    import os

    target = f"{session.create_tmp()}/hotdata-llamaindex"
    source = os.environ.get("HOTDATA_LLAMAINDEX_SOURCE", LLAMAINDEX_REPOSITORY)
    session.run("rm", "-rf", target, external=True)
    session.run("git", "clone", "--quiet", source, target, external=True)
    session.run("git", "-C", target, "checkout", "--quiet", LLAMAINDEX_COMMIT, external=True)
    return target


@nox.session(name="integrations-llamaindex")
def integrations_llamaindex(session: nox.Session) -> None:
    """hotdata-llamaindex 0.1.0's own suite (its 24 tests) with downstream/
    hotdata-llamaindex.patch applied: a vector store in a Hotdata managed table and hybrid
    and BM25 retrievers, all from hotdata_retrieval.adapters.llamaindex over the library's
    HotdataEngine, and the patch's tests of them (docs/integrations.md)."""
    folder = _llamaindex_checkout(session)
    patch = f"{session.invoked_from}/downstream/hotdata-llamaindex.patch"
    session.run("git", "-C", folder, "apply", "--check", patch, external=True)
    session.run("git", "-C", folder, "apply", patch, external=True)
    session.install("-e", ".[hotdata,llamaindex,local]", folder, "pytest")
    session.run("pip", "check")
    _their_suite(session, folder)


@nox.session(name="integrations", venv_backend="none")
def integrations(session: nox.Session) -> None:
    """The three downstream checks, each in its own environment (their pins conflict)."""
    session.notify("integrations-langchain")
    session.notify("integrations-ibis")
    session.notify("integrations-llamaindex")
