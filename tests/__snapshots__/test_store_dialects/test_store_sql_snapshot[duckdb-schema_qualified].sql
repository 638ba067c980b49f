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
      "fts_hdq_text_t7_support_7_tickets_body".match_bm25("base"."rowid", 'x') AS "score"
    FROM "support"."tickets" AS "base"
  )
  WHERE
    NOT "score" IS NULL
)
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC
LIMIT 10