WITH "cursor_candidates" AS (
  SELECT
    "id",
    "_distance"
  FROM (
    SELECT
      "id",
      NULLIF("docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"), CAST('NaN' AS DOUBLE PRECISION)) AS "_distance",
      "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
    FROM "public"."docs"
    ORDER BY
      "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
    FETCH FIRST 9 ROWS WITH TIES
  ) AS "nearest"
  ORDER BY
    "_order" ASC,
    "id" ASC
  LIMIT 9
)
SELECT
  "id",
  "_distance"
FROM "cursor_candidates"
WHERE
  "_distance" > CAST('0.25' AS DOUBLE PRECISION)
  OR (
    "_distance" = CAST('0.25' AS DOUBLE PRECISION) AND "id" > 17
  )
ORDER BY
  "_distance" ASC,
  "id" ASC
LIMIT 3