SELECT
  "id",
  "_distance"
FROM (
  SELECT
    "id",
    vector_l2_squared_distance("docs"."embedding", CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector")) AS "_distance",
    "docs"."embedding" OPERATOR(public.<->) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
  FROM "public"."docs"
  WHERE
    "lang" = 'it''s'
    AND (
      "year" >= 2020 OR "order" IN ('a', 'b')
    )
    AND "deleted_at" IS NULL
    AND NOT FALSE
  ORDER BY
    "docs"."embedding" OPERATOR(public.<->) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
  FETCH FIRST 3 ROWS WITH TIES
) AS "nearest"
ORDER BY
  "_order" ASC,
  "id" ASC
LIMIT 3