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
        THEN 1.0
        ELSE array_cosine_distance("docs"."embedding", CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]))
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
        THEN 1.0
        ELSE array_cosine_distance("docs_archive"."embedding", CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]))
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