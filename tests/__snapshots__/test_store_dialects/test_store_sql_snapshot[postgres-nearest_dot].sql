SELECT
  "id",
  "_distance"
FROM (
  SELECT
    "id",
    "docs"."embedding" OPERATOR(public.<#>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_distance",
    "docs"."embedding" OPERATOR(public.<#>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
  FROM "public"."docs"
  ORDER BY
    "docs"."embedding" OPERATOR(public.<#>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
  FETCH FIRST 10 ROWS WITH TIES
) AS "nearest"
ORDER BY
  "_order" ASC,
  "id" ASC
LIMIT 10