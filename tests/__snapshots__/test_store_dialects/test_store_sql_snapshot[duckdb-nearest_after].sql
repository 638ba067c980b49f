WITH "cursor_candidates" AS (
  SELECT
    "id",
    CASE
      WHEN array_inner_product("docs"."embedding", "docs"."embedding") = 0
      AND list_dot_product(CAST("docs"."embedding" AS DOUBLE[]), CAST("docs"."embedding" AS DOUBLE[])) = 0
      THEN 1.0
      ELSE CAST(array_cosine_distance("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
    END AS "_distance"
  FROM "main"."docs"
  ORDER BY
    "_distance" ASC,
    "id" ASC
  LIMIT 9
)
SELECT
  "id",
  "_distance"
FROM "cursor_candidates"
WHERE
  "_distance" > CAST('0.25' AS DOUBLE)
  OR (
    "_distance" = CAST('0.25' AS DOUBLE) AND "id" > 17
  )
ORDER BY
  "_distance" ASC,
  "id" ASC
LIMIT 3