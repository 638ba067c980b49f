WITH "facet_candidates" AS (
  SELECT
    "id",
    "lang",
    "_distance"
  FROM (
    SELECT
      "id",
      "lang",
      NULLIF("docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"), CAST('NaN' AS DOUBLE PRECISION)) AS "_distance",
      "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
    FROM "public"."docs"
    WHERE
      "title" <> 'x'
    ORDER BY
      "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
    FETCH FIRST 200 ROWS WITH TIES
  ) AS "nearest"
  ORDER BY
    "_order" ASC,
    "id" ASC
  LIMIT 200
), "facet_counts" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "_distance" ASC, "id" ASC) AS "_rank_position",
    COUNT(*) OVER (PARTITION BY "lang") AS "_facet_count_1",
    ROW_NUMBER() OVER (PARTITION BY "lang" ORDER BY "_distance" ASC, "id" ASC) AS "_facet_row_1"
  FROM "facet_candidates"
  WHERE
    "_distance" IS NOT NULL
)
SELECT
  "id",
  "_distance",
  "lang",
  "_rank_position",
  "_facet_count_1",
  "_facet_row_1"
FROM "facet_counts"
WHERE
  (
    "_rank_position" <= 3
  ) OR (
    "_facet_row_1" = 1 AND "lang" IS NOT NULL
  )
ORDER BY
  "_rank_position" ASC