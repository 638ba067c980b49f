WITH "facet_candidates" AS (
  SELECT
    "id",
    "lang",
    CASE
      WHEN array_inner_product("docs"."embedding", "docs"."embedding") = 0
      AND list_dot_product(CAST("docs"."embedding" AS DOUBLE[]), CAST("docs"."embedding" AS DOUBLE[])) = 0
      THEN 1.0
      ELSE CAST(array_cosine_distance("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
    END AS "_distance"
  FROM "main"."docs"
  WHERE
    "title" <> 'x'
  ORDER BY
    "_distance" ASC,
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