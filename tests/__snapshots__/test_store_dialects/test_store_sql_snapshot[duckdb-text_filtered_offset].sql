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
      "fts_hdq_text_t4_main_4_docs_body".match_bm25("base"."rowid", 'error e1234 s near x') AS "score"
    FROM "main"."docs" AS "base"
  )
  WHERE
    NOT "score" IS NULL
)
WHERE
  "lang" = 'it''s'
  AND (
    "year" >= 2020 OR "order" IN ('a', 'b')
  )
  AND "deleted_at" IS NULL
  AND NOT FALSE
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC
LIMIT 5
OFFSET 5