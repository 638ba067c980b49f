WITH "group_candidates" AS (
  SELECT
    "id",
    "body",
    "doc_id",
    "score"
  FROM (
    SELECT
      "base".*,
      -bm25("docs__body__fts") AS "score"
    FROM "main"."docs__body__fts"
    JOIN "main"."docs" AS "base"
      ON "base"."rowid" = "docs__body__fts"."rowid"
    WHERE
      "docs__body__fts" MATCH '"error" OR "e1234" OR "upgrad"'
  )
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC NULLS LAST
  LIMIT 200
), "group_positions" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "_rank_position"
  FROM "group_candidates"
  WHERE
    "doc_id" IS NOT NULL
), "group_members" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "_rank_position" ASC NULLS LAST) AS "_group_row",
    MIN("_rank_position") OVER (PARTITION BY "doc_id") AS "_group_first"
  FROM "group_positions"
), "group_ranks" AS (
  SELECT
    *,
    DENSE_RANK() OVER (ORDER BY "_group_first" ASC NULLS LAST) AS "_group_rank"
  FROM "group_members"
  WHERE
    "_group_row" <= 1
)
SELECT
  "id",
  "body",
  "doc_id",
  "score"
FROM "group_ranks"
WHERE
  "_group_rank" <= 5
ORDER BY
  "_group_rank" ASC NULLS LAST,
  "_group_row" ASC NULLS LAST