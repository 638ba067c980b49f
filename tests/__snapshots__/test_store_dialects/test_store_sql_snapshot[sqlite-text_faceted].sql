WITH "facet_candidates" AS (
  SELECT
    "id",
    "body",
    "lang",
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
), "facet_counts" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "_rank_position",
    COUNT(*) OVER (PARTITION BY "lang") AS "_facet_count_1",
    ROW_NUMBER() OVER (PARTITION BY "lang" ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "_facet_row_1",
    COUNT(*) OVER (PARTITION BY "doc_id") AS "_facet_count_2",
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "_facet_row_2"
  FROM "facet_candidates"
)
SELECT
  "id",
  "body",
  "score",
  "lang",
  "doc_id",
  "_rank_position",
  "_facet_count_1",
  "_facet_row_1",
  "_facet_count_2",
  "_facet_row_2"
FROM "facet_counts"
WHERE
  (
    "_rank_position" > 2 AND "_rank_position" <= 7
  )
  OR (
    "_facet_row_1" = 1 AND "lang" IS NOT NULL
  )
  OR (
    "_facet_row_2" = 1 AND "doc_id" IS NOT NULL
  )
ORDER BY
  "_rank_position" ASC NULLS LAST