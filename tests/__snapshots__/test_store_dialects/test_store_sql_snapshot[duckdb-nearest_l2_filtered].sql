SELECT
  "id",
  COALESCE(
    TRY_CAST(POWER(array_distance("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])), 2) AS REAL),
    CASE WHEN NOT "docs"."embedding" IS NULL THEN CAST('inf' AS REAL) END
  ) AS "_distance"
FROM "main"."docs"
WHERE
  "lang" = 'it''s'
  AND (
    "year" >= 2020 OR "order" IN ('a', 'b')
  )
  AND "deleted_at" IS NULL
  AND NOT FALSE
ORDER BY
  "_distance" ASC,
  "id" ASC
LIMIT 3