"""``hdq lint --fix --write`` changes only the fixed statements' text, byte for byte, and
replaces the file atomically: a failed write leaves the original untouched (issue 9, item 5).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval.cli.lint import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, lint
from hotdata_retrieval.lint import fix
from hotdata_retrieval.lint import lint as lint_sql

BOM = b"\xef\xbb\xbf"
ORDER = "ORDER BY score DESC"


def run(*args: str) -> Result:
    return CliRunner().invoke(lint, list(args), catch_exceptions=False)


def fix_file(path: Path) -> Result:
    return run(str(path), "--fix", "--write", "-q")


def sql_file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "queries.sql"
    path.write_bytes(data)
    return path


# --- one test per reported fault, with the exact bytes --------------------------------------


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_line_endings_are_kept_everywhere(tmp_path: Path, newline: str) -> None:
    nl = newline
    text = (
        f"SELECT  id   FROM f1.public.results;{nl}{nl}"
        f"SELECT id{nl}FROM bm25_search('default.public.docs', 'body', 'q', 5){nl}LIMIT 5;{nl}"
        f"SELECT 2{nl}"
    )
    path = sql_file(tmp_path, text.encode())
    result = fix_file(path)
    assert result.exit_code == EXIT_CLEAN
    expected = (
        f"SELECT  id   FROM f1.public.results;{nl}{nl}"
        f"SELECT id{nl}FROM bm25_search('default.public.docs', 'body', 'q', 5){nl}"
        f"ORDER BY score DESC{nl}LIMIT 5;{nl}"
        f"SELECT 2{nl}"
    )
    assert path.read_bytes() == expected.encode()


def test_carriage_returns_in_string_literals_are_data(tmp_path: Path) -> None:
    path = sql_file(
        tmp_path,
        b"SELECT 'a\rb' AS s;\n"
        b"SELECT id, 'x\ry\r\nz' AS t FROM bm25_search('docs', 'body', 'one\rtwo', 5) LIMIT 5;\n",
    )
    assert fix_file(path).exit_code == EXIT_CLEAN
    assert path.read_bytes() == (
        b"SELECT 'a\rb' AS s;\n"
        b"SELECT id, 'x\ry\r\nz' AS t FROM bm25_search('default.public.docs', 'body', "
        b"'one\rtwo', 5) ORDER BY score DESC LIMIT 5;\n"
    )


def test_comments_keep_their_form_and_place_and_are_not_duplicated(tmp_path: Path) -> None:
    path = sql_file(
        tmp_path,
        b"-- first\n"
        b"SELECT id -- the key\n"
        b"FROM bm25_search('default.public.docs', 'body', 'q', 5) /* no order yet */\n"
        b"LIMIT 5; -- trailing\n"
        b'/* block */ SELECT r."driverId" FROM f1.public.results AS r -- last\n',
    )
    assert fix_file(path).exit_code == EXIT_CLEAN
    assert path.read_bytes() == (
        b"-- first\n"
        b"SELECT id -- the key\n"
        b"FROM bm25_search('default.public.docs', 'body', 'q', 5) /* no order yet */\n"
        b"ORDER BY score DESC\n"
        b"LIMIT 5; -- trailing\n"
        b"/* block */ SELECT r.driverid FROM f1.public.results AS r -- last\n"
    )


def test_a_byte_order_mark_is_read_and_kept(tmp_path: Path) -> None:
    path = sql_file(tmp_path, BOM + b"SELECT id FROM bm25_search('docs', 'body', 'q', 5);\r\n")
    report = run(str(path), "--ignore", "HDQ014")
    assert report.exit_code == EXIT_FINDINGS
    assert report.stdout.startswith(f"{path}:1:16: HDQ010 [error] ")  # the mark is no column
    assert fix_file(path).exit_code == EXIT_CLEAN
    assert path.read_bytes() == BOM + (
        b"SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5) "
        b"ORDER BY score DESC;\r\n"
    )


def test_the_fix_api_keeps_a_byte_order_mark() -> None:
    result = fix("\ufeffSELECT id FROM docs ORDER BY cosine_distance(emb, ARRAY[1.0, 2.0]) LIMIT 3")
    assert result.sql == (
        '\ufeffSELECT id FROM "default".public.docs '
        "ORDER BY cosine_distance(emb, ARRAY[1.0, 2.0]) LIMIT 3"
    )
    assert lint_sql("\ufeffSELECT 1") == []


class _FullDisk:
    """A file handle on a disk that fills up two thirds of the way through the write."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._handle.close()

    def write(self, data: bytes) -> int:
        self._handle.write(data[: len(data) * 2 // 3])
        self._handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        self._handle.flush()

    def fileno(self) -> int:
        return int(self._handle.fileno())


def _no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _fail_write(monkeypatch: pytest.MonkeyPatch) -> None:
    real_fdopen = os.fdopen

    def fdopen(descriptor: int, *args: Any, **kwargs: Any) -> _FullDisk:
        return _FullDisk(real_fdopen(descriptor, *args, **kwargs))

    monkeypatch.setattr(os, "fdopen", fdopen)


FAILURES: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "write": _fail_write,
    "fsync": lambda monkeypatch: monkeypatch.setattr(os, "fsync", _no_space),
    "replace": lambda monkeypatch: monkeypatch.setattr(os, "replace", _no_space),
}


@pytest.mark.parametrize("step", list(FAILURES))
def test_a_full_disk_leaves_the_file_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    statements = [
        f"SELECT id FROM bm25_search('docs', 'body', 'q{number}', 5) LIMIT 5;\r\n"
        if number % 3 == 0
        else f"SELECT {number} AS n; -- {number}\n"
        for number in range(2000)
    ]
    original = "".join(statements).encode()
    path = sql_file(tmp_path, original)
    FAILURES[step](monkeypatch)
    result = fix_file(path)
    assert result.exit_code == EXIT_ERROR
    assert result.stdout == ""
    assert result.stderr == (
        f"hdq lint: error: cannot write {str(path)!r}: No space left on device; "
        "the file is unchanged\n"
    )
    assert path.read_bytes() == original
    assert sorted(os.listdir(tmp_path)) == ["queries.sql"]  # no temporary file left behind


def test_the_file_is_replaced_with_its_permission_bits(tmp_path: Path) -> None:
    path = sql_file(tmp_path, b"SELECT id FROM bm25_search('default.public.docs', 'b', 'q', 5)\n")
    path.chmod(0o640)
    inode = path.stat().st_ino
    assert fix_file(path).exit_code == EXIT_CLEAN
    assert path.read_bytes() == (
        b"SELECT id FROM bm25_search('default.public.docs', 'b', 'q', 5) ORDER BY score DESC\n"
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode  # a new file renamed into place, not rewritten in place
    assert sorted(os.listdir(tmp_path)) == ["queries.sql"]


def test_a_clean_file_is_not_rewritten(tmp_path: Path) -> None:
    path = sql_file(tmp_path, b"SELECT 1;\r\n")
    inode = path.stat().st_ino
    assert fix_file(path).exit_code == EXIT_CLEAN
    assert path.stat().st_ino == inode
    assert path.read_bytes() == b"SELECT 1;\r\n"


def test_a_symbolic_link_keeps_pointing_at_the_fixed_file(tmp_path: Path) -> None:
    target = sql_file(tmp_path, b"SELECT id FROM bm25_search('default.public.docs', 'b', 'q', 5)")
    link = tmp_path / "link.sql"
    link.symlink_to(target.name)
    assert fix_file(link).exit_code == EXIT_CLEAN
    assert link.is_symlink()
    assert target.read_bytes() == (
        b"SELECT id FROM bm25_search('default.public.docs', 'b', 'q', 5) ORDER BY score DESC"
    )


# --- the fix API splices its edits into the text ---------------------------------------------

VEC = "ARRAY[0.1, 0.2]"

SPLICED = {
    "a middle item is dropped with its comma; comments stay": (
        f"SELECT id,\r\n  emb, /* vec */\r\n  cosine_distance(emb, {VEC}) AS d\r\n"
        "FROM c.s.t ORDER BY d LIMIT 3",
        f"SELECT id,\r\n  /* vec */\r\n  cosine_distance(emb, {VEC}) AS d\r\n"
        "FROM c.s.t ORDER BY d LIMIT 3",
    ),
    "a last item is dropped with the comma before it": (
        f"SELECT id, emb -- the vector\nFROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3",
        f"SELECT id -- the vector\nFROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3",
    ),
    "a table is qualified in place, inside EXPLAIN, its comments kept": (
        f"EXPLAIN -- plan\nSELECT id FROM sales . docs /* t */ "
        f"ORDER BY cosine_distance(emb, {VEC}) LIMIT 3",
        f'EXPLAIN -- plan\nSELECT id FROM "default".sales . docs /* t */ '
        f"ORDER BY cosine_distance(emb, {VEC}) LIMIT 3",
    ),
    "ORDER BY on its own line after a trailing comment, in the statement's line endings": (
        "-- lead\r\nSELECT id\r\nFROM bm25_search('default.public.docs', 'body', 'q', 5) -- why"
        "\r\n",
        "-- lead\r\nSELECT id\r\nFROM bm25_search('default.public.docs', 'body', 'q', 5) -- why"
        "\r\nORDER BY score DESC\r\n",
    ),
    "ORDER BY indented like the FROM, inside the brackets, after a WHERE ... IS NULL": (
        "(\n    SELECT id\n    FROM bm25_search('default.public.docs', 'body', 'q', 5)\n"
        "    WHERE x IS NULL\n)",
        "(\n    SELECT id\n    FROM bm25_search('default.public.docs', 'body', 'q', 5)\n"
        "    WHERE x IS NULL\n    ORDER BY score DESC\n)",
    ),
    "ORDER BY before OFFSET and FETCH": (
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 9)\tOFFSET 2 "
        "FETCH FIRST 3 ROWS ONLY",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 9)\tORDER BY score DESC\t"
        "OFFSET 2 FETCH FIRST 3 ROWS ONLY",
    ),
    "k goes after the last argument, before a comment": (
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q' /* text */) "
        "ORDER BY score DESC LIMIT 5 OFFSET 2",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 7 /* text */) "
        "ORDER BY score DESC LIMIT 5 OFFSET 2",
    ),
    "a quoted name is lower-cased where it stands": (
        'SELECT r."driverId" -- key\r\n, r."Race Name" FROM f1.public.results AS r',
        'SELECT r.driverid -- key\r\n, r."race name" FROM f1.public.results AS r',
    ),
}


@pytest.mark.parametrize(("sql", "expected"), SPLICED.values(), ids=list(SPLICED))
def test_fix_splices_only_the_repair(sql: str, expected: str) -> None:
    result = fix(sql)
    assert result.sql == expected
    assert result.findings == ()
    assert fix(result.sql).sql == result.sql


def test_lines_are_counted_at_a_lone_carriage_return() -> None:
    findings = lint_sql("SELECT 1;\rSELECT id FROM bm25_search('default.public.docs', 'b', 'q', 5)")
    assert [(finding.code, finding.line, finding.column) for finding in findings] == [
        ("HDQ010", 2, 16)
    ]


# --- property: random files keep every byte a fix does not own -------------------------------

_NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])

COMMENT_ENDS = st.sampled_from(["\n", "\r\n"])
"""How a ``--`` comment's line ends, here: the engine ends the comment only at a line feed
(``tests/test_lint_line_comments.py`` covers a carriage return alone)."""


@st.composite
def _spaces(draw: st.DrawFn, comment_ends: st.SearchStrategy[str] = COMMENT_ENDS) -> str:
    """What may stand between two tokens: white space, a block or a line comment."""
    newline = draw(_NEWLINES)
    comment_end = draw(comment_ends)
    return draw(
        st.sampled_from(
            [" ", "\t", newline, newline + "  ", " /* c; 'x' */ ", f" -- c; 'x'{comment_end}"]
        )
    )


@st.composite
def _literals(draw: st.DrawFn) -> str:
    pieces = ["a", " ", "\r", "\n", "\r\n", ";", "--", "/*", "''"]
    return "'" + "".join(draw(st.lists(st.sampled_from(pieces), max_size=6))) + "'"


@st.composite
def _gaps(draw: st.DrawFn, comment_ends: st.SearchStrategy[str] = COMMENT_ENDS) -> str:
    """What may stand between statements (after the ``;``)."""
    newline = draw(_NEWLINES)
    comment_end = draw(comment_ends)
    return draw(
        st.sampled_from(
            [
                "",
                newline,
                newline * 2,
                f" -- note; 'x'{comment_end}",
                f"{newline}/* a{newline}block; */{newline}",
                f"{newline}-- lead{comment_end}",
            ]
        )
    )


def _trailing_space(text: str) -> str:
    return text[len(text.rstrip()) :] or " "


Template = Callable[[Callable[[], str], Callable[[], str]], tuple[str, str]]


def _unfixable_literal(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    text = f"SELECT{s()}{lit()}{s()}AS{s()}s"
    return text, text


def _unfixable_descending(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    vector = "ARRAY[" + ", ".join(f"0.{digit}" for digit in range(1, 10)) + "]"  # a long one
    text = f"SELECT{s()}id{s()}FROM{s()}c.s.t{s()}ORDER BY cosine_distance(emb, {vector}){s()}DESC"
    text += f"{s()}LIMIT 3"
    return text, text


def _clean(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    text = f"SELECT{s()}id,{s()}title{s()}FROM{s()}f1.public.results{s()}WHERE{s()}title ={s()}"
    text += lit()
    return text, text


def _order_and_table(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    a, b, c, d, e, f, g, h = (s() for _ in range(8))
    query = lit()
    head = f"SELECT{a}*{b}FROM{c}vector_search("
    tail = f",{d}'body',{e}{query},{f}20){g}"
    return (
        f"{head}'docs'{tail}LIMIT{h}3",
        f"{head}'default.public.docs'{tail}ORDER BY _distance ASC{_trailing_space(g)}LIMIT{h}3",
    )


def _quoted_name(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    a, b, c = s(), s(), s()
    rest = f",{b}{lit()}{c}FROM f1.public.results AS r"
    return f'SELECT{a}r."driverId"{rest}', f"SELECT{a}r.driverid{rest}"


def _qualified_table(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    a, b, c, d = s(), s(), s(), s()
    head = f"SELECT{a}id{b}FROM{c}"
    tail = f"{d}ORDER BY cosine_distance(emb, {VEC}) LIMIT 3"
    return f"{head}sales.docs{tail}", f'{head}"default".sales.docs{tail}'


def _dropped_column(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    a, b, c, d = s(), s(), s(), s()
    tail = f"cosine_distance(emb, {VEC}) AS d{d}FROM c.s.t ORDER BY d LIMIT 3"
    return f"SELECT{a}id,{b}emb,{c}{tail}", f"SELECT{a}id,{b}{c.lstrip()}{tail}"


def _added_k(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    a, b, c = s(), s(), s()
    head = f"SELECT id FROM bm25_search('default.public.docs',{a}'body',{b}{lit()}"
    tail = f"{c}){s()}ORDER BY score DESC{s()}LIMIT 5"
    return head + tail, f"{head}, 5{tail}"


def _appended_order(s: Callable[[], str], lit: Callable[[], str]) -> tuple[str, str]:
    text = f"SELECT{s()}id{s()}FROM bm25_search('default.public.docs', 'body', {lit()},{s()}5)"
    return text, f"{text} {ORDER}"  # the ``;`` follows on the same line


TEMPLATES: list[Template] = [
    _unfixable_literal,
    _unfixable_descending,
    _clean,
    _order_and_table,
    _quoted_name,
    _qualified_table,
    _dropped_column,
    _added_k,
    _appended_order,
]


@st.composite
def sql_files(
    draw: st.DrawFn, comment_ends: st.SearchStrategy[str] = COMMENT_ENDS
) -> tuple[bytes, bytes]:
    """A file of random statements and its expected bytes after ``--fix`` (the expected
    bytes hold only when every ``--`` comment ends at a line feed)."""

    def space() -> str:
        return draw(_spaces(comment_ends))

    def literal() -> str:
        return draw(_literals())

    bom = draw(st.sampled_from(["", "\ufeff"]))
    before = [bom, draw(_gaps(comment_ends))]
    after = list(before)
    for template in draw(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=5)):
        original, fixed = template(space, literal)
        gap = draw(_gaps(comment_ends))
        before += [original, ";", gap]
        after += [fixed, ";", gap]
    return "".join(before).encode(), "".join(after).encode()


@settings(deadline=None)
@given(sql_files())
def test_fix_write_changes_only_the_fixed_statements(case: tuple[bytes, bytes]) -> None:
    original, expected = case
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "queries.sql"
        path.write_bytes(original)
        first = fix_file(path)
        assert first.exit_code in (EXIT_CLEAN, EXIT_FINDINGS), first.stderr
        assert path.read_bytes() == expected
        second = fix_file(path)  # idempotent: nothing left to fix
        assert second.exit_code == first.exit_code
        assert path.read_bytes() == expected
        assert os.listdir(directory) == ["queries.sql"]
