WITH "group_candidates" AS (
  SELECT
    "id",
    "body",
    "doc_id",
    "score"
  FROM (
    SELECT
      *
    FROM (
      SELECT
        "base".*,
        "fts_hdq_text_t4_main_4_docs_body".match_bm25("base"."rowid", 'error e1234 upgrad') AS "score"
      FROM "main"."docs" AS "base"
    )
    WHERE
      NOT "score" IS NULL
  )
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC
  LIMIT 200
), "group_positions" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC) AS "_rank_position"
  FROM "group_candidates"
  WHERE
    "doc_id" IS NOT NULL
), "group_members" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "_rank_position" ASC) AS "_group_row",
    MIN("_rank_position") OVER (PARTITION BY "doc_id") AS "_group_first"
  FROM "group_positions"
), "group_ranks" AS (
  SELECT
    *,
    DENSE_RANK() OVER (ORDER BY "_group_first" ASC) AS "_group_rank"
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
  "_group_rank" ASC,
  "_group_row" ASC