SELECT
  "id",
  "body",
  "score"
FROM (
  SELECT
    *
  FROM (
    SELECT
      "base".*,
      "fts_main_docs".match_bm25("base"."rowid", 'error E1234 it''s NEAR-"x"', "fields" := 'body') AS "score"
    FROM "main"."docs" AS "base"
  )
  WHERE
    NOT "score" IS NULL
)
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC
LIMIT 5