SELECT
  "id",
  "body",
  "score"
FROM (
  SELECT
    "base".*,
    -bm25("docs__body__fts") AS "score"
  FROM "main"."docs__body__fts"
  JOIN "main"."docs" AS "base"
    ON "base"."rowid" = "docs__body__fts"."rowid"
  WHERE
    "docs__body__fts" MATCH '"error" OR "e1234" OR "s" OR "near" OR "x"'
)
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC NULLS LAST
LIMIT 5