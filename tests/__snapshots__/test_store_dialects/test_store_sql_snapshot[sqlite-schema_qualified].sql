SELECT
  "id",
  "body",
  "score"
FROM (
  SELECT
    "base".*,
    -bm25("tickets__body__fts") AS "score"
  FROM "support"."tickets__body__fts"
  JOIN "support"."tickets" AS "base"
    ON "base"."rowid" = "tickets__body__fts"."rowid"
  WHERE
    "tickets__body__fts" MATCH '"x"'
)
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC NULLS LAST
LIMIT 10