"""Every lint rule: shapes that must fire and shapes that must stay quiet.

Includes every "yes" and "no" row of the shape table in engine contract §2.3 and the test
vectors of §6 that are facts about SQL text. The §2.3 rows write their tables schematically
(``FROM t``); the "yes" rows are written here with the fully qualified name the rewrite needs
(a bare ``t`` is itself the "two-part or bare" row, a "no").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import sqlglot

from hotdata_retrieval import (
    Bm25Search,
    HotdataRetrievalError,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.compile.compiler import JOIN_CHAIN_MAX_BRANCHES
from hotdata_retrieval.lint import (
    RULES,
    IndexCatalog,
    SqlParseError,
    UnknownRuleError,
    fix,
    lint,
)

VEC = "ARRAY[0.1, -0.2, 0.3]"

CATALOG = IndexCatalog.from_dict(
    {
        "indexes": [
            {"table": "c.s.t", "columns": ["emb"], "kind": "vector", "metric": "cosine"},
            {"table": "docs", "columns": ["body", "title"], "kind": "bm25"},
            {"table": "docs", "columns": ["embedding"], "kind": "vector", "metric": "cosine"},
            {"table": "drafts", "columns": ["body"], "kind": "bm25", "status": "pending"},
            {
                "table": "drafts",
                "columns": ["embedding"],
                "kind": "vector",
                "metric": "l2",
                "status": "pending",
            },
            {
                "table": "notes",
                "columns": ["body_embedding"],
                "kind": "vector",
                "metric": "cosine",
                "source_column": "body",
            },
            {
                "table": "memos",
                "columns": ["body_embedding"],
                "kind": "vector",
                "source_column": "body",
                "status": "pending",
            },
        ],
        "tables": [
            {"table": "c.s.t", "unique_keys": [["id"]]},
            {"table": "docs", "unique_keys": ["id"]},
        ],
    }
)


def codes(sql: str, catalog: IndexCatalog | None = CATALOG) -> list[str]:
    return sorted({finding.code for finding in lint(sql, catalog)})


def gathered_fusion(key: str, branches: int = 5) -> str:
    """A fusion of five or more branches as the compiler writes it: every candidate key
    gathered once (``fused_keys``, a UNION of each branch's keys) and each branch LEFT JOINed
    to it (``docs/sql-shapes.md``, Fusion)."""
    names = [f"b{index}" for index in range(branches)]
    ctes = [
        f"{name} AS (SELECT {key}, RANK() OVER (ORDER BY score DESC) AS branch_rank FROM "
        f"bm25_search('default.public.docs', 'body', 'q{index}', 20))"
        for index, name in enumerate(names)
    ]
    keys = " UNION ".join(f"SELECT {key} FROM {name}" for name in names)
    score = " + ".join(f"COALESCE(1.0 / (60 + {name}.branch_rank), 0)" for name in names)
    joins = " ".join(f"LEFT JOIN {name} ON {name}.{key} = fused_keys.{key}" for name in names)
    return (
        f"WITH {', '.join(ctes)}, fused_keys AS ({keys}), fused AS (SELECT fused_keys.{key} "
        f"AS {key}, {score} AS score FROM fused_keys {joins}) "
        f"SELECT {key}, score FROM fused ORDER BY score DESC, {key} ASC LIMIT 10"
    )


# -- engine contract §2.3: the shape table -------------------------------------------------

YES_SHAPES = {
    "distance aliased in the select list": (
        f"SELECT id, content, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d ASC LIMIT 5"
    ),
    "distance only in ORDER BY": (
        f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 5"
    ),
    "distance only in ORDER BY, with WHERE": (
        f"SELECT id FROM c.s.t WHERE category = 'x' ORDER BY cosine_distance(emb, {VEC}) LIMIT 5"
    ),
    "where absorbed, aliased distance": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS _distance FROM c.s.t "
        "WHERE category = 'x' AND year > 2020 ORDER BY _distance ASC LIMIT 5"
    ),
    "select only the distance": (
        f"SELECT cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d LIMIT 5"
    ),
    "double alias": (
        f"SELECT * FROM (SELECT id, l, cosine_distance(emb, {VEC}) AS _distance "
        "FROM c.s.t AS t0) AS t1 ORDER BY t1._distance ASC LIMIT 3"
    ),
    "double alias with WHERE inside": (
        f"SELECT * FROM (SELECT id, l, cosine_distance(emb, {VEC}) AS _distance "
        "FROM c.s.t AS t0 WHERE l = 'x') AS t1 ORDER BY t1._distance ASC LIMIT 3"
    ),
    "double alias with an explicit outer column list": (
        f"SELECT t1.id, t1._distance FROM (SELECT id, l, cosine_distance(emb, {VEC}) "
        "AS _distance FROM c.s.t AS t0) AS t1 ORDER BY t1._distance ASC LIMIT 3"
    ),
    "three-part quoted": (
        f'SELECT id FROM "c"."s"."t" ORDER BY cosine_distance(emb, {VEC}) LIMIT 5'
    ),
    "three-part unquoted": f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 5",
    "vector pathway in a CTE, ranked outside": (
        f"WITH near AS (SELECT id, cosine_distance(emb, {VEC}) AS dist FROM c.s.t "
        "ORDER BY dist LIMIT 20), "
        "near_ranked AS (SELECT id, ROW_NUMBER() OVER (ORDER BY dist ASC) AS rank FROM near) "
        "SELECT id FROM near_ranked WHERE rank <= 10"
    ),
    "LIMIT k OFFSET m": (
        f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 5 OFFSET 10"
    ),
}

NO_SHAPES = {
    "SELECT * (lookup provider lacks the vector column)": (
        f"SELECT * FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 5",
        "HDQ002",
    ),
    "SELECT * with WHERE": (
        f"SELECT * FROM c.s.t WHERE x = 1 ORDER BY cosine_distance(emb, {VEC}) LIMIT 5",
        "HDQ002",
    ),
    "projecting the vector column": (
        f"SELECT id, emb, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d LIMIT 5",
        "HDQ002",
    ),
    "ORDER BY dist DESC": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d DESC LIMIT 5",
        "HDQ005",
    ),
    "no LIMIT": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d ASC",
        "HDQ004",
    ),
    "distance function differs from the index metric": (
        f"SELECT id, l2_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d ASC LIMIT 5",
        "HDQ003",
    ),
    "single alias on the scan, no outer wrap": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS dist FROM c.s.t AS t0 ORDER BY dist ASC "
        "LIMIT 5",
        "HDQ008",
    ),
    "single alias on the scan with WHERE, no outer wrap": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS dist FROM c.s.t AS t0 WHERE t0.x = 1 "
        "ORDER BY dist ASC LIMIT 5",
        "HDQ008",
    ),
    "double alias + metric mismatch": (
        f"SELECT * FROM (SELECT id, l, l2_distance(emb, {VEC}) AS _distance FROM c.s.t AS t0) "
        "AS t1 ORDER BY t1._distance ASC LIMIT 3",
        "HDQ003",
    ),
    "double alias + vector in output": (
        f"SELECT * FROM (SELECT id, emb, cosine_distance(emb, {VEC}) AS _distance "
        "FROM c.s.t AS t0) AS t1 ORDER BY t1._distance ASC LIMIT 3",
        "HDQ002",
    ),
    "two-part schema.table": (
        f"SELECT id FROM s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 5",
        "HDQ001",
    ),
    "bare table": (
        f"SELECT id FROM t ORDER BY cosine_distance(emb, {VEC}) LIMIT 5",
        "HDQ001",
    ),
    "ROW_NUMBER over every row, rank filtered": (
        f"WITH ranked AS (SELECT id, ROW_NUMBER() OVER (ORDER BY cosine_distance(emb, {VEC})) "
        "AS rank FROM c.s.t) SELECT id FROM ranked WHERE rank <= 10",
        "HDQ009",
    ),
}


@pytest.mark.parametrize("sql", YES_SHAPES.values(), ids=list(YES_SHAPES))
def test_shape_table_yes_rows_lint_clean(sql: str) -> None:
    assert codes(sql) == []


@pytest.mark.parametrize(("sql", "code"), NO_SHAPES.values(), ids=list(NO_SHAPES))
def test_shape_table_no_rows_fire(sql: str, code: str) -> None:
    assert code in codes(sql)


# -- engine contract §6: the test vectors about SQL text ---------------------------------

CONTRACT_VECTORS = {
    "1 bm25 without ORDER BY": (
        "SELECT * FROM bm25_search('default.public.docs', 'body', 'q', 5)",
        ["HDQ010"],
    ),
    "2 bm25 top-k shape": (
        "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 5) "
        "ORDER BY score DESC LIMIT 5",
        [],
    ),
    "3 bm25 on a column with no BM25 index": (
        "SELECT id, score FROM bm25_search('default.public.docs', 'summary', 'q', 5) "
        "ORDER BY score DESC LIMIT 5",
        ["HDQ020"],
    ),
    "4 bm25 without k, ORDER BY score DESC LIMIT n": (
        "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q') "
        "ORDER BY score DESC LIMIT 5",
        ["HDQ012"],
    ),
    "5 provider-backed semantic top-k": (
        "SELECT id, _distance FROM vector_search('default.public.notes', 'body', 'q', 5) "
        "ORDER BY _distance ASC",
        [],
    ),
    "6 vector_search with a trailing LIMIT": (
        "SELECT * FROM vector_search('default.public.notes', 'body', 'q', 20) LIMIT 3",
        ["HDQ011"],
    ),
    "7 plain-index top-k": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS _distance FROM c.s.t ORDER BY _distance "
        "ASC LIMIT 5",
        [],
    ),
    "8 plain-index top-k with WHERE": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS _distance FROM c.s.t "
        "WHERE category = 'x' ORDER BY _distance ASC LIMIT 5",
        [],
    ),
    "9 l2_distance against a cosine index": (
        f"SELECT id, l2_distance(emb, {VEC}) AS _distance FROM c.s.t ORDER BY _distance ASC "
        "LIMIT 5",
        ["HDQ003"],
    ),
    "10 DESC": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS _distance FROM c.s.t "
        "ORDER BY _distance DESC LIMIT 5",
        ["HDQ005"],
    ),
    "11 no LIMIT": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS _distance FROM c.s.t ORDER BY _distance ASC",
        ["HDQ004"],
    ),
    "12 projecting the vector column": (
        f"SELECT id, emb, cosine_distance(emb, {VEC}) AS _distance FROM c.s.t "
        "ORDER BY _distance ASC LIMIT 5",
        ["HDQ002"],
    ),
    "12 SELECT *": (
        f"SELECT *, cosine_distance(emb, {VEC}) AS _distance FROM c.s.t "
        "ORDER BY _distance ASC LIMIT 5",
        ["HDQ002"],
    ),
    "13 alias without the outer wrap": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS _distance FROM c.s.t AS t0 "
        "ORDER BY _distance ASC LIMIT 5",
        ["HDQ008"],
    ),
    "13 alias with the outer wrap": (
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS dist FROM c.s.t AS t0) AS t1 "
        "ORDER BY t1.dist LIMIT 5",
        [],
    ),
    "14 two-part reference": (
        f"SELECT id, cosine_distance(emb, {VEC}) AS _distance FROM s.t ORDER BY _distance "
        "ASC LIMIT 5",
        ["HDQ001", "HDQ023"],
    ),
    "19 to_tsvector": (
        "SELECT id FROM default.public.docs WHERE to_tsvector(body) IS NOT NULL",
        ["HDQ040"],
    ),
    "21 quoted mixed-case column": (
        'SELECT r."driverId" FROM f1.public.results AS r',
        ["HDQ043"],
    ),
    "21 the same, unquoted": ("SELECT r.driverId FROM f1.public.results AS r", []),
}


@pytest.mark.parametrize(("sql", "expected"), CONTRACT_VECTORS.values(), ids=list(CONTRACT_VECTORS))
def test_contract_test_vectors(sql: str, expected: list[str]) -> None:
    assert codes(sql) == expected


# -- each rule: fires / stays quiet ----------------------------------------------------

FIRES = [
    # HDQ001
    ("HDQ001", f"SELECT id FROM public.t ORDER BY l2_distance(emb, {VEC}) LIMIT 3"),
    (
        "HDQ001",
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM items AS t0) AS t1 "
        "ORDER BY t1.d LIMIT 3",
    ),
    # HDQ002
    (
        "HDQ002",
        f"SELECT t.*, cosine_distance(t.emb, {VEC}) AS d FROM c.s.t ORDER BY d LIMIT 3",
    ),
    (
        "HDQ002",
        f"SELECT id, emb AS vector, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d LIMIT 3",
    ),
    # HDQ004
    ("HDQ004", f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC})"),
    ("HDQ004", f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) OFFSET 5"),
    # HDQ005
    ("HDQ005", f"SELECT id FROM c.s.t ORDER BY negative_dot_product(emb, {VEC}) DESC LIMIT 3"),
    # HDQ006
    (
        "HDQ006",
        f"SELECT id FROM c.s.t ORDER BY cosine_distance(CAST(emb AS FLOAT[]), {VEC}) LIMIT 3",
    ),
    ("HDQ006", f"SELECT id FROM c.s.t ORDER BY 1 - cosine_distance(emb, {VEC}) DESC LIMIT 3"),
    (
        "HDQ006",
        f"SELECT id, 1 - cosine_distance(emb, {VEC}) AS sim FROM c.s.t ORDER BY sim DESC LIMIT 3",
    ),
    # HDQ007
    ("HDQ007", "SELECT id FROM c.s.t ORDER BY cosine_distance(emb, $1) LIMIT 3"),
    (
        "HDQ007",
        "SELECT id FROM c.s.t ORDER BY cosine_distance(emb, (SELECT q FROM c.s.queries)) LIMIT 3",
    ),
    ("HDQ007", "SELECT id FROM c.s.t ORDER BY cosine_distance(emb, other_emb) LIMIT 3"),
    # HDQ008
    (
        "HDQ008",
        f"SELECT t0.id FROM c.s.t t0 ORDER BY cosine_distance(t0.emb, {VEC}) LIMIT 3",
    ),
    # HDQ009
    (
        "HDQ009",
        f"SELECT id FROM c.s.t QUALIFY ROW_NUMBER() OVER (ORDER BY cosine_distance(emb, {VEC})) "
        "<= 10",
    ),
    (
        "HDQ009",
        f"SELECT id FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t) AS x "
        "QUALIFY RANK() OVER (ORDER BY d) <= 10",
    ),
    # HDQ010
    ("HDQ010", "SELECT id, _distance FROM vector_search('default.public.notes', 'body', 'q', 5)"),
    (
        "HDQ010",
        "WITH hits AS (SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 5)) "
        "SELECT id FROM hits",
    ),
    ("HDQ010", "SELECT id FROM bm25_search('default.public.docs', 'body', 'q') LIMIT 5"),
    # HDQ011
    (
        "HDQ011",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 20) LIMIT 5",
    ),
    (
        "HDQ011",
        "SELECT id FROM (SELECT * FROM vector_search('default.public.notes', 'body', 'q', 20)) "
        "AS v LIMIT 3",
    ),
    (
        "HDQ011",
        "WITH top AS (SELECT id FROM vector_search('default.public.notes', 'body', 'q', 20) "
        "LIMIT 3) SELECT id FROM top ORDER BY id",
    ),
    # HDQ012
    (
        "HDQ012",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q') "
        "ORDER BY score DESC, id ASC LIMIT 10",
    ),
    # HDQ013
    (
        "HDQ013",
        "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 10) "
        "ORDER BY score DESC LIMIT 5 OFFSET 10",
    ),
    (
        "HDQ013",
        "SELECT id FROM vector_search('default.public.notes', 'body', 'q', 3) "
        "ORDER BY _distance LIMIT 5",
    ),
    # HDQ014
    (
        "HDQ014",
        "SELECT id, score FROM bm25_search('public.docs', 'body', 'q', 5) ORDER BY score DESC "
        "LIMIT 5",
    ),
    # HDQ015
    (
        "HDQ015",
        "SELECT id FROM vector_search('default.public.notes', 'body', 'q') ORDER BY _distance",
    ),
    (
        "HDQ015",
        "SELECT id FROM bm25_search('default.public.docs', body, 'q', 5) ORDER BY score DESC "
        "LIMIT 5",
    ),
    (
        "HDQ015",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 0) ORDER BY score DESC",
    ),
    (
        "HDQ015",
        "SELECT id FROM bm25_search('a.b.c.d', 'body', 'q', 5) ORDER BY score DESC LIMIT 5",
    ),
    (
        "HDQ015",
        "SELECT id FROM vector_search_vector('c.s.t', 'emb', some_column, 5) ORDER BY _distance",
    ),
    # HDQ003
    (
        "HDQ003",
        f"SELECT id FROM default.public.docs ORDER BY negative_dot_product(embedding, {VEC}) "
        "LIMIT 5",
    ),
    # HDQ020
    (
        "HDQ020",
        "SELECT id FROM bm25_search('default.public.notes', 'body', 'q', 5) ORDER BY score DESC "
        "LIMIT 5",
    ),
    # HDQ021
    (
        "HDQ021",
        "SELECT id FROM vector_search('default.public.docs', 'body', 'q', 5) ORDER BY _distance",
    ),
    (
        "HDQ021",
        "SELECT id FROM vector_search('default.public.docs', 'embedding', 'q', 5) "
        "ORDER BY _distance",
    ),
    (
        "HDQ021",
        f"SELECT id FROM vector_search_vector('c.s.t', 'other', {VEC}, 5) ORDER BY _distance",
    ),
    # HDQ022
    (
        "HDQ022",
        "SELECT id FROM bm25_search('default.public.drafts', 'body', 'q', 5) "
        "ORDER BY score DESC LIMIT 5",
    ),
    (
        "HDQ022",
        "SELECT id FROM vector_search('default.public.memos', 'body', 'q', 5) ORDER BY _distance",
    ),
    (
        "HDQ022",
        f"SELECT id FROM default.public.drafts ORDER BY l2_distance(embedding, {VEC}) LIMIT 5",
    ),
    # HDQ023
    (
        "HDQ023",
        f"SELECT id FROM default.public.docs ORDER BY cosine_distance(title_embedding, {VEC}) "
        "LIMIT 5",
    ),
    # HDQ024
    (
        "HDQ024",
        "WITH a AS (SELECT doc_id, ROW_NUMBER() OVER (ORDER BY score DESC) AS r "
        "FROM bm25_search('default.public.docs', 'body', 'q', 20)), "
        f"b AS (SELECT doc_id, ROW_NUMBER() OVER (ORDER BY d) AS r FROM (SELECT doc_id, "
        f"cosine_distance(embedding, {VEC}) AS d FROM default.public.docs ORDER BY d LIMIT 20) "
        "AS n) SELECT COALESCE(a.doc_id, b.doc_id) AS doc_id FROM a FULL OUTER JOIN b "
        "ON a.doc_id = b.doc_id",
    ),
    ("HDQ024", gathered_fusion("doc_id")),
    ("HDQ024", gathered_fusion("doc_id", branches=2)),
    # HDQ030
    (
        "HDQ030",
        "SELECT b.id, b.score + n._distance AS mixed "
        "FROM bm25_search('default.public.docs', 'body', 'q', 20) AS b "
        "JOIN vector_search('default.public.notes', 'body', 'q', 20) AS n ON b.id = n.id "
        "ORDER BY mixed DESC LIMIT 10",
    ),
    (
        "HDQ030",
        "WITH t AS (SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 20) "
        "ORDER BY score DESC LIMIT 20), "
        f"v AS (SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d LIMIT 20) "
        "SELECT t.id FROM t JOIN v ON t.id = v.id WHERE t.score > v.d",
    ),
    (
        "HDQ030",
        "SELECT b.id, 0.5 * b.score + 0.5 * (1 - n._distance) AS s "
        "FROM bm25_search('default.public.docs', 'body', 'q', 20) AS b "
        "JOIN vector_search('default.public.notes', 'body', 'q', 20) AS n ON b.id = n.id "
        "ORDER BY s DESC LIMIT 10",
    ),
    # HDQ031
    (
        "HDQ031",
        f"SELECT * FROM (SELECT id, lang, cosine_distance(emb, {VEC}) AS d FROM c.s.t "
        "ORDER BY d LIMIT 10) AS x WHERE x.lang = 'en'",
    ),
    (
        "HDQ031",
        "WITH hits AS (SELECT id, lang, score FROM bm25_search('default.public.docs', 'body', "
        "'q', 10) ORDER BY score DESC LIMIT 10) SELECT id FROM hits WHERE lang = 'en' "
        "ORDER BY score DESC",
    ),
    # HDQ040
    ("HDQ040", "SELECT id FROM docs WHERE to_tsvector(body) @@ plainto_tsquery('refund')"),
    ("HDQ040", "SELECT ts_rank(v, q) FROM docs"),
    # HDQ041
    ("HDQ041", "SELECT to_char(created_at, 'YYYY-MM-DD') FROM docs"),
    ("HDQ041", "SELECT to_date(day, 'DD/MM/YYYY') FROM docs"),
    ("HDQ041", "SELECT to_timestamp(ts, 'YYYY-MM-DD HH24:MI:SS') FROM docs"),
    # HDQ042
    ("HDQ042", "SELECT date_sub(created_at, 7) FROM docs"),
    ("HDQ042", "SELECT datediff(a, b) FROM docs"),
    # HDQ043
    ("HDQ043", 'SELECT "Title" FROM docs'),
    ("HDQ043", 'SELECT id FROM "Default"."Public"."Docs"'),
    ("HDQ043", 'SELECT d."raceId" FROM docs AS d WHERE d."driverId" = 1'),
    # HDQ025: pattern matching on a BM25-indexed column, through an alias and a subquery
    ("HDQ025", "SELECT id FROM docs WHERE body ILIKE '%disk full%'"),
    ("HDQ025", "SELECT d.id FROM default.public.docs AS d WHERE d.title LIKE 'Disk%'"),
    ("HDQ025", "SELECT id FROM docs WHERE body ~* 'dis[ck]'"),
    ("HDQ025", "SELECT id FROM (SELECT id, body AS b FROM docs) AS x WHERE x.b ILIKE '%disk%'"),
    ("HDQ025", "SELECT id FROM docs WHERE lower(body) LIKE '%disk%'"),
    # HDQ050: the engine reads the lines after a `--` comment ended by a lone \r as comment
    ("HDQ050", "SELECT 1 AS a -- note\r, 2 AS b"),
    ("HDQ050", "-- all queries\rSELECT 1"),
]


@pytest.mark.parametrize(("code", "sql"), FIRES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(FIRES)])
def test_rule_fires(code: str, sql: str) -> None:
    assert code in codes(sql)


QUIET = [
    # HDQ001: a CTE name is not a table; a 3-part name is fine
    (
        "HDQ001",
        f"WITH x AS (SELECT id, emb FROM c.s.t) SELECT id FROM x "
        f"ORDER BY cosine_distance(emb, {VEC}) LIMIT 3",
    ),
    ("HDQ001", "SELECT id FROM docs ORDER BY id LIMIT 3"),  # not distance-ranked
    # HDQ002: the vector column outside the output, or excluded from a star
    (
        "HDQ002",
        f"SELECT * EXCLUDE (emb) FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3",
    ),
    ("HDQ002", "SELECT * FROM c.s.t ORDER BY id LIMIT 3"),
    # HDQ004: LIMIT given; FETCH FIRST counts too
    (
        "HDQ004",
        f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) FETCH FIRST 3 ROWS ONLY",
    ),
    # HDQ004/HDQ005: a sort over an already bounded top-k is not a ranking over the table
    (
        "HDQ004",
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d "
        "LIMIT 5) AS x ORDER BY x.d",
    ),
    (
        "HDQ005",
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d "
        "LIMIT 5) AS x ORDER BY x.d DESC",
    ),
    # HDQ006: the column may be qualified
    ("HDQ006", f"SELECT id FROM c.s.t ORDER BY cosine_distance(t.emb, {VEC}) LIMIT 3"),
    # HDQ006: a distance breaking the ties of another ranking is no ranking by distance
    (
        "HDQ006",
        "SELECT b.id FROM fused JOIN c.s.t AS b ON b.id = fused.id ORDER BY fused.score DESC, "
        f"COALESCE(fused.d, cosine_distance(b.emb, {VEC})) ASC, fused.id LIMIT 3",
    ),
    # HDQ007: literal vectors in every form
    (
        "HDQ007",
        "SELECT id FROM c.s.t ORDER BY cosine_distance(emb, make_array(1.0, -2, 3)) LIMIT 3",
    ),
    ("HDQ007", "SELECT id FROM c.s.t ORDER BY cosine_distance(emb, ARRAY[-1, 2e-3, .5]) LIMIT 3"),
    # HDQ008: the alias with the outer wrap; an alias on a table that is not ranked
    (
        "HDQ008",
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t AS t0) AS t1 "
        "ORDER BY t1.d LIMIT 3",
    ),
    ("HDQ008", "SELECT t0.id FROM c.s.t AS t0 ORDER BY t0.id LIMIT 3"),
    # HDQ009: no rank filter; or the ranking follows a bounded top-k
    (
        "HDQ009",
        f"SELECT id, ROW_NUMBER() OVER (ORDER BY cosine_distance(emb, {VEC})) AS r FROM c.s.t",
    ),
    ("HDQ009", "SELECT id FROM c.s.t QUALIFY ROW_NUMBER() OVER (ORDER BY id) <= 3"),
    # HDQ010: aggregates, ranked readers, explicit orders
    ("HDQ010", "SELECT count(*) FROM bm25_search('default.public.docs', 'body', 'q', 50)"),
    (
        "HDQ010",
        "SELECT lang, max(score) FROM bm25_search('default.public.docs', 'body', 'q', 50) "
        "GROUP BY lang",
    ),
    (
        "HDQ010",
        "WITH hits AS (SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 50)) "
        "SELECT id, ROW_NUMBER() OVER (ORDER BY score DESC) AS r FROM hits",
    ),
    ("HDQ010", "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5) ORDER BY id"),
    (
        "HDQ010",
        "SELECT id FROM docs WHERE id IN (SELECT id FROM bm25_search('default.public.docs', "
        "'body', 'q', 5)) ORDER BY id",
    ),
    # HDQ011: sorted before the cut
    (
        "HDQ011",
        "SELECT id FROM vector_search('default.public.notes', 'body', 'q', 20) "
        "ORDER BY _distance LIMIT 3",
    ),
    # HDQ012: k given, or no LIMIT, or not sorted by score
    (
        "HDQ012",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5) ORDER BY score DESC "
        "LIMIT 5",
    ),
    (
        "HDQ012",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q') ORDER BY score DESC",
    ),
    (
        # a filter in the same SELECT: k would be applied before it and drop rows it keeps
        "HDQ012",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q') WHERE lang = 'en' "
        "ORDER BY score DESC LIMIT 10",
    ),
    # HDQ013: k covers LIMIT + OFFSET
    (
        "HDQ013",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 15) ORDER BY score DESC "
        "LIMIT 5 OFFSET 10",
    ),
    # HDQ014 / HDQ015: well-formed calls
    (
        "HDQ014",
        "SELECT id FROM bm25_search('default.analytics.\"support tickets\"', 'body', 'q', 5) "
        "ORDER BY score DESC LIMIT 5",
    ),
    (
        "HDQ015",
        f"SELECT id FROM vector_search_vector('c.s.t', 'emb', {VEC}, 5) ORDER BY _distance",
    ),
    # HDQ020-HDQ024 stay quiet without a catalog
    (
        "HDQ020",
        "SELECT id FROM bm25_search('default.public.docs', 'title', 'q', 5) ORDER BY score DESC "
        "LIMIT 5",
    ),
    # HDQ003 / HDQ023: the function matches the index
    ("HDQ003", f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3"),
    ("HDQ023", f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3"),
    # HDQ021 / HDQ022: a ready provider-backed index over the text column
    (
        "HDQ021",
        "SELECT id FROM vector_search('default.public.notes', 'body', 'q', 5) ORDER BY _distance",
    ),
    (
        "HDQ022",
        "SELECT id FROM vector_search('default.public.notes', 'body', 'q', 5) ORDER BY _distance",
    ),
    # HDQ024: the key is declared unique
    (
        "HDQ024",
        "WITH a AS (SELECT id, ROW_NUMBER() OVER (ORDER BY score DESC) AS r "
        "FROM bm25_search('default.public.docs', 'body', 'q', 20)), "
        f"b AS (SELECT id, ROW_NUMBER() OVER (ORDER BY d) AS r FROM (SELECT id, "
        f"cosine_distance(embedding, {VEC}) AS d FROM default.public.docs ORDER BY d LIMIT 20) "
        "AS n) SELECT COALESCE(a.id, b.id) AS id FROM a FULL OUTER JOIN b ON a.id = b.id",
    ),
    ("HDQ024", gathered_fusion("id")),
    # HDQ024: a LEFT JOIN that joins no branch to the gathered keys is not a fusion
    (
        "HDQ024",
        "SELECT d.id FROM default.public.docs AS d "
        "LEFT JOIN default.public.notes AS n ON n.doc_id = d.id",
    ),
    (
        "HDQ024",
        "WITH a AS (SELECT doc_id FROM bm25_search('default.public.docs', 'body', 'q', 20)), "
        "k AS (SELECT doc_id FROM a UNION SELECT doc_id FROM default.public.notes) "
        "SELECT k.doc_id FROM k LEFT JOIN default.public.notes AS n ON n.doc_id = k.doc_id",
    ),
    # HDQ030: fusing ranks is right; one scale alone is fine
    (
        "HDQ030",
        "WITH t AS (SELECT id, ROW_NUMBER() OVER (ORDER BY score DESC) AS r FROM "
        "bm25_search('default.public.docs', 'body', 'q', 20)), "
        "v AS (SELECT id, ROW_NUMBER() OVER (ORDER BY _distance) AS r FROM "
        "vector_search('default.public.notes', 'body', 'q', 20)) "
        "SELECT COALESCE(t.id, v.id) AS id, COALESCE(1.0 / (60 + t.r), 0) + "
        "COALESCE(1.0 / (60 + v.r), 0) AS score FROM t FULL OUTER JOIN v ON t.id = v.id "
        "ORDER BY score DESC LIMIT 10",
    ),
    (
        "HDQ030",
        "SELECT id, score * 2 AS s FROM bm25_search('default.public.docs', 'body', 'q', 5) "
        "WHERE score > 8 ORDER BY score DESC LIMIT 5",
    ),
    # HDQ031: the filter inside the top-k
    (
        "HDQ031",
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t "
        "WHERE lang = 'en' ORDER BY d LIMIT 10) AS x",
    ),
    (
        "HDQ031",
        "SELECT * FROM (SELECT id, lang FROM docs ORDER BY id LIMIT 10) AS x WHERE x.lang = 'en'",
    ),
    (
        "HDQ031",
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t "
        "ORDER BY d LIMIT 10) AS x WHERE x.d < 0.3",
    ),
    # HDQ040-HDQ042: the engine's own functions
    ("HDQ040", "SELECT id FROM docs WHERE body ILIKE '%refund%'"),
    ("HDQ041", "SELECT to_char(created_at, '%Y-%m-%d'), to_timestamp(1700000000) FROM docs"),
    ("HDQ041", "SELECT to_timestamp(ts, '%Y-%m-%dT%H:%M:%S', '%Y-%m-%d') FROM docs"),
    ("HDQ042", "SELECT created_at - INTERVAL '7 days' FROM docs"),
    # HDQ043: lower-case quoted names, and names the statement defines itself
    ("HDQ043", 'SELECT "title", "my column", "select" FROM docs'),
    ("HDQ043", 'SELECT score AS "Fused Score" FROM fused ORDER BY "Fused Score" DESC'),
    ("HDQ043", 'WITH "Hits" AS (SELECT id FROM docs) SELECT "Hits".id FROM "Hits"'),
    # HDQ025: a column with no BM25 index, a negated match (an exclusion), no pattern match
    ("HDQ025", "SELECT id FROM docs WHERE lang LIKE 'en%'"),
    ("HDQ025", "SELECT id FROM notes WHERE body ILIKE '%disk%'"),
    ("HDQ025", "SELECT id FROM docs WHERE body NOT ILIKE '%spam%'"),
    ("HDQ025", "SELECT id FROM docs WHERE body = 'disk full'"),
    # HDQ050: a comment ended at a line feed, a \r inside a block comment or a string
    ("HDQ050", "SELECT 1 AS a -- note\r\n, 2 AS b"),
    ("HDQ050", "SELECT 1 AS a /* note\r */, 2 AS b, 'x -- y\rz' AS c"),
]


@pytest.mark.parametrize(("code", "sql"), QUIET, ids=[f"{c}-{i}" for i, (c, _) in enumerate(QUIET)])
def test_rule_stays_quiet(code: str, sql: str) -> None:
    catalog = None if code == "HDQ020" else CATALOG
    assert code not in codes(sql, catalog)


def test_every_rule_has_cases_that_fire_and_stay_quiet() -> None:
    fired = {code for code, _ in FIRES} | {code for _, code in NO_SHAPES.values()}
    quiet = {code for code, _ in QUIET}
    for rule in RULES:
        assert rule.code in fired, rule.code
        assert rule.code in quiet, rule.code


def test_catalog_rules_are_silent_without_a_catalog() -> None:
    sql = (
        f"SELECT id, l2_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d LIMIT 5; "
        "SELECT id FROM bm25_search('default.public.nothing', 'x', 'q', 5) "
        "ORDER BY score DESC LIMIT 5"
    )
    assert codes(sql, None) == []
    assert codes(sql) == ["HDQ003", "HDQ020"]


HITS = "vector_search('default.public.notes', 'body', 'q', 5)"

CTE_VISIBILITY = {
    "a CTE read by a later one": (
        f"WITH a AS (SELECT * FROM {HITS}), b AS (SELECT * FROM a) SELECT * FROM b LIMIT 2",
        ["HDQ011"],
    ),
    "a CTE written later is a table": (
        f"WITH b AS (SELECT * FROM a), a AS (SELECT * FROM {HITS}) SELECT * FROM b LIMIT 2",
        [],
    ),
    "RECURSIVE: a CTE written later": (
        f"WITH RECURSIVE b AS (SELECT * FROM a), a AS (SELECT * FROM {HITS}) "
        "SELECT * FROM b LIMIT 2",
        ["HDQ011"],
    ),
    "RECURSIVE: a CTE reading itself": (
        f"WITH RECURSIVE a AS (SELECT * FROM {HITS} UNION ALL SELECT * FROM a) "
        "SELECT * FROM a LIMIT 2",
        ["HDQ011"],
    ),
    "unquoted names fold to lower case": (
        f"WITH Hits AS (SELECT * FROM {HITS}) SELECT * FROM HITS LIMIT 3",
        ["HDQ011"],
    ),
    "an outer CTE read in a subquery": (
        f"WITH a AS (SELECT * FROM {HITS}) SELECT * FROM (SELECT * FROM a) AS x LIMIT 2",
        ["HDQ011"],
    ),
    "an outer CTE read in a WHERE subquery": (
        f"WITH a AS (SELECT id FROM {HITS}) "
        "SELECT id FROM docs WHERE id IN (SELECT id FROM a LIMIT 3)",
        ["HDQ011"],
    ),
    "an inner WITH hides the outer CTE of that name": (
        f"WITH a AS (SELECT * FROM {HITS}) "
        "SELECT * FROM (WITH a AS (SELECT id FROM docs) SELECT * FROM a) AS x LIMIT 2",
        [],
    ),
    "a CTE's own name in its body is the table": (
        f"WITH t AS (SELECT id, cosine_distance(emb, {VEC}) AS d FROM t) "
        "SELECT id FROM t ORDER BY d LIMIT 3",
        ["HDQ001"],
    ),
    "the WITH of an INSERT": (
        f"INSERT INTO t WITH a AS (SELECT id FROM {HITS}) SELECT * FROM a LIMIT 2",
        ["HDQ011"],
    ),
}


@pytest.mark.parametrize(("sql", "expected"), CTE_VISIBILITY.values(), ids=list(CTE_VISIBILITY))
def test_a_name_in_from_reads_the_cte_it_can_see(sql: str, expected: list[str]) -> None:
    """Which relation a name reads follows SQL's scoping of CTEs (the lineage the rules use
    runs through them): of every enclosing WITH, the nearest first; inside a CTE only those
    written before it, unless the WITH is RECURSIVE; unquoted names without case."""
    assert codes(sql, None) == expected


@pytest.mark.parametrize(
    "count", [2, JOIN_CHAIN_MAX_BRANCHES, JOIN_CHAIN_MAX_BRANCHES + 1, 3 * JOIN_CHAIN_MAX_BRANCHES]
)
def test_a_compiled_fusion_on_a_key_not_declared_unique_is_caught_in_either_form(
    count: int,
) -> None:
    """Up to four branches chain FULL OUTER JOINs; from five on each branch is LEFT JOINed
    to the gathered keys. HDQ024 reads both: one finding per join when the catalog does not
    declare the key unique, none when it does."""
    branches = [
        Bm25Search(table="docs", column="body", query_text=f"q{index}")
        if index % 2 == 0
        else NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.1, 0.2])
        for index in range(count)
    ]
    sql = to_sql(SearchPlan(source=ReciprocalRankFusion(branches=branches), limit=10))
    gathered = count > JOIN_CHAIN_MAX_BRANCHES
    assert ("fused_keys" in sql) == gathered
    assert ("FULL OUTER JOIN" in sql) != gathered
    indexes = [
        {"table": "docs", "columns": ["body"], "kind": "bm25"},
        {"table": "docs", "columns": ["embedding"], "kind": "vector", "metric": "cosine"},
    ]
    unique = IndexCatalog.from_dict(
        {"indexes": indexes, "tables": [{"table": "docs", "unique_keys": ["id"]}]}
    )
    assert lint(sql, unique) == []
    findings = lint(sql, IndexCatalog.from_dict({"indexes": indexes}))
    assert [finding.code for finding in findings] == ["HDQ024"] * (count if gathered else count - 1)
    for finding in findings:
        assert finding.message.startswith("the fusion joins on id, which the catalog does not")
        assert "default.public.docs" in finding.message
        assert re.fullmatch(r"\S.* = \w+\.id", sql[finding.start : finding.end])  # the ON


def test_pending_distance_index_is_a_warning_and_a_pending_search_an_error() -> None:
    findings = lint(
        f"SELECT id FROM default.public.drafts ORDER BY l2_distance(embedding, {VEC}) LIMIT 5;"
        "SELECT id FROM bm25_search('default.public.drafts', 'body', 'q', 5) "
        "ORDER BY score DESC LIMIT 5",
        CATALOG,
    )
    assert [(f.code, f.severity.value) for f in findings] == [
        ("HDQ022", "warning"),
        ("HDQ022", "error"),
    ]


# -- positions, messages, statements ---------------------------------------------------------


def test_positions_point_at_the_offending_expression() -> None:
    sql = (
        "SELECT id,\n"
        "       emb,\n"
        f"       cosine_distance(emb, {VEC}) AS d\n"
        "FROM docs\n"
        "ORDER BY d DESC\n"
        "LIMIT 5"
    )
    found = {finding.code: finding for finding in lint(sql)}
    assert sorted(found) == ["HDQ001", "HDQ002", "HDQ005"]
    assert (found["HDQ002"].line, found["HDQ002"].column) == (2, 8)
    assert sql[found["HDQ002"].start : found["HDQ002"].end] == "emb"
    assert (found["HDQ001"].line, found["HDQ001"].column) == (4, 6)
    assert sql[found["HDQ001"].start : found["HDQ001"].end] == "docs"
    assert (found["HDQ005"].line, found["HDQ005"].column) == (5, 10)


def test_function_spans_cover_the_whole_call() -> None:
    sql = "SELECT *\nFROM vector_search('default.public.notes', 'body', 'q', 20)\nLIMIT 3"
    (finding,) = lint(sql)
    assert sql[finding.start : finding.end] == (
        "vector_search('default.public.notes', 'body', 'q', 20)"
    )
    assert (finding.line, finding.column) == (2, 6)


def test_messages_name_the_expression_and_suggest_a_fix() -> None:
    (finding,) = lint(
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q') ORDER BY score DESC LIMIT 7"
    )
    assert "bm25_search('default.public.docs', 'body', 'q')" in finding.message
    assert finding.suggestion == "pass k = 7 as the 4th argument"
    assert "\n" not in finding.message and "\n" not in finding.suggestion


def test_every_statement_of_a_file_is_linted_with_positions_in_the_file() -> None:
    sql = (
        "SELECT 1;\n"
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5);\n"
        "\n"
        f"SELECT id FROM t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3;\n"
    )
    findings = lint(sql)
    assert [(f.code, f.line) for f in findings] == [("HDQ010", 2), ("HDQ001", 4)]


def test_statements_around_the_queries() -> None:
    sql = (
        "SHOW TABLES;\n"
        f"EXPLAIN ANALYZE SELECT id FROM t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3;\n"
        "CREATE TABLE top AS SELECT * FROM bm25_search('default.public.docs', 'body', 'q') "
        "LIMIT 5;\n"
        "INSERT INTO hits SELECT id FROM vector_search('default.public.docs', 'body', 'q', 5);\n"
        "SELECT id FROM default.public.pinned UNION ALL "
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5)\n"
    )
    findings = lint(sql)
    # the query of an EXPLAIN is linted; a LIMIT pushed into a CREATE ... AS loses no rows,
    # and the order of inserted rows does not matter; a UNION arm is part of the result
    assert [(f.code, f.line) for f in findings] == [("HDQ001", 2), ("HDQ010", 5)]
    assert sql[findings[0].start : findings[0].end] == "t"


def test_long_vectors_keep_positions_after_them() -> None:
    vector = "ARRAY[" + ", ".join(f"{i / 1000:.3f}" for i in range(384)) + "]"
    sql = (
        f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {vector}) DESC LIMIT 5; "
        "SELECT * FROM t x"
    )
    (finding,) = lint(sql)
    assert finding.code == "HDQ005"
    assert sql[finding.start :].startswith("cosine_distance(emb, ARRAY[0.000")
    assert sql[finding.start : finding.end].endswith("0.383])")
    trailing = lint(sql + f" ORDER BY l2_distance(x.v, {vector}) LIMIT 2")
    assert [f.code for f in trailing][-2:] == ["HDQ001", "HDQ008"]
    assert sql[trailing[-1].start : trailing[-1].end] == "t x"


def test_a_vector_like_text_inside_a_string_is_left_alone() -> None:
    vector = "ARRAY[" + ", ".join(["1"] * 10) + "]"
    sql = f"SELECT '{vector}' AS s FROM c.s.t ORDER BY cosine_distance(emb, {vector}) LIMIT 1"
    assert lint(sql) == []


def test_parse_errors_carry_line_and_column() -> None:
    with pytest.raises(SqlParseError) as raised:
        lint("SELECT 1;\nSELECT id FROM docs WHERE (x = 1")
    assert raised.value.line == 2
    assert raised.value.column is not None
    with pytest.raises(SqlParseError) as raised:
        lint("SELECT 'unterminated")
    assert raised.value.line == 1


def test_ignore_skips_rules_and_rejects_unknown_codes() -> None:
    sql = f"SELECT id FROM t ORDER BY cosine_distance(emb, {VEC}) DESC LIMIT 3"
    assert {f.code for f in lint(sql)} == {"HDQ001", "HDQ005"}
    assert {f.code for f in lint(sql, ignore=["hdq001"])} == {"HDQ005"}
    with pytest.raises(ValueError, match="HDQ999"):
        lint(sql, ignore=["HDQ999"])


@pytest.mark.parametrize(
    ("ignore", "codes", "message"),
    [
        (["HDQ001", "HDQ999"], ["HDQ999"], r"^unknown rule code\(s\): HDQ999; see hdq lint"),
        ([1], [1], r"^unknown rule code\(s\): 1;"),
        ("HDQ001", ["HDQ001"], r"^ignore takes a collection of rule codes, got the string"),
    ],
)
def test_unknown_rule_codes_are_a_typed_error(ignore: Any, codes: list[Any], message: str) -> None:
    for run in (lint, fix):
        with pytest.raises(UnknownRuleError, match=message) as raised:
            run("SELECT 1", ignore=ignore)
        assert isinstance(raised.value, HotdataRetrievalError)
        assert raised.value.codes == codes


def test_defaults_complete_names_in_suggestions_and_catalog_lookups() -> None:
    (finding,) = lint(
        f"SELECT id FROM t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3", default_catalog="f1"
    )
    assert finding.suggestion == "write f1.public.t"


# -- the rules' own records ---------------------------------------------------------------


def test_rule_codes_are_stable_and_documented() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "lint.md").read_text()
    for rule in RULES:
        assert re.fullmatch(r"HDQ\d{3}", rule.code)
        assert rule.code in docs, rule.code
        assert "engine contract" in rule.rationale.lower() or "§" in rule.rationale, rule.code
        assert rule.summary and "\n" not in rule.summary


def test_lint_silences_only_its_own_sqlglot_warnings(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    import sqlglot

    sqlglot_logger = logging.getLogger("sqlglot")
    level = sqlglot_logger.level
    with caplog.at_level(logging.WARNING, logger="sqlglot"):
        assert lint("SHOW TABLES;\nSELECT 1;\n") == []
        assert [r for r in caplog.records if r.name == "sqlglot"] == []
        sqlglot.parse_one("SHOW TABLES", read="postgres")  # outside lint: still logged
    assert any("SHOW TABLES" in r.getMessage() for r in caplog.records if r.name == "sqlglot")
    assert sqlglot_logger.level == level


def test_a_pattern_match_suggests_a_search_call_that_parses() -> None:
    (finding,) = [
        f
        for f in lint("SELECT id FROM docs WHERE body LIKE '%it''s full%'", CATALOG)
        if f.code == "HDQ025"
    ]
    assert "bm25_search('default.public.docs', 'body', 'it''s full', k)" in finding.suggestion
    call = finding.suggestion.split("FROM ", 1)[1].split(" ORDER BY")[0]
    sqlglot.parse_one(f"SELECT * FROM {call}")  # the suggested call is valid SQL
