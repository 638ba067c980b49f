SELECT
  "id",
  COALESCE(
    TRY_CAST(array_negative_inner_product("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL),
    CAST('inf' AS REAL) * SIGN(array_negative_inner_product("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])))
  ) AS "_distance"
FROM "main"."docs"
ORDER BY
  "_distance" ASC,
  "id" ASC
LIMIT 10