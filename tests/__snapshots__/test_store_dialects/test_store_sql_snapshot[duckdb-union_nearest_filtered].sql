SELECT
  "id",
  "_distance"
FROM (
  SELECT
    *
  FROM (
    SELECT
      "id",
      CASE
        WHEN array_inner_product("docs"."embedding", "docs"."embedding") = 0
        AND list_dot_product(CAST("docs"."embedding" AS DOUBLE[]), CAST("docs"."embedding" AS DOUBLE[])) = 0
        THEN 1.0
        ELSE CAST(array_cosine_distance("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
      END AS "_distance"
    FROM "main"."docs"
    WHERE
      "lang" = 'en'
    ORDER BY
      "_distance" ASC,
      "id" ASC
    LIMIT 5
  ) AS "union_member_1"
  UNION ALL
  SELECT
    *
  FROM (
    SELECT
      "id",
      CASE
        WHEN array_inner_product("docs_archive"."embedding", "docs_archive"."embedding") = 0
        AND list_dot_product(
          CAST("docs_archive"."embedding" AS DOUBLE[]),
          CAST("docs_archive"."embedding" AS DOUBLE[])
        ) = 0
        THEN 1.0
        ELSE CAST(array_cosine_distance("docs_archive"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
      END AS "_distance"
    FROM "main"."docs_archive"
    WHERE
      "lang" = 'en'
    ORDER BY
      "_distance" ASC,
      "id" ASC
    LIMIT 5
  ) AS "union_member_2"
) AS "search_union"
ORDER BY
  "_distance" ASC,
  "id" ASC
LIMIT 5