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
      "fts_support_tickets".match_bm25("base"."rowid", 'x', "fields" := 'body') AS "score"
    FROM "support"."tickets" AS "base"
  )
  WHERE
    NOT "score" IS NULL
)
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC
LIMIT 10