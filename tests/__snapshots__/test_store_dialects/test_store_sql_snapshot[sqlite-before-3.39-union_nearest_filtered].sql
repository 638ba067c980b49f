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
        WHEN (
          typeof("docs"."embedding") = 'blob'
          AND length("docs"."embedding") = 4 * vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
        )
        OR (
          typeof("docs"."embedding") = 'text'
          AND json_valid("docs"."embedding")
          AND json_type("docs"."embedding") = 'array'
          AND json_array_length("docs"."embedding") = vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
          AND NOT EXISTS(
            SELECT
              1
            FROM json_each("docs"."embedding") AS "element"
            WHERE
              NOT (
                "element"."type" IN ('integer', 'real')
                AND abs("element"."value") <= 3.4028234663852886e+38
              )
          )
        )
        THEN COALESCE(vec_distance_cosine("docs"."embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 1.0)
      END AS "_distance"
    FROM "main"."docs"
    WHERE
      "lang" = 'en'
    ORDER BY
      "_distance" ASC NULLS LAST,
      "id" ASC NULLS LAST
    LIMIT 5
  ) AS "union_member_1"
  UNION ALL
  SELECT
    *
  FROM (
    SELECT
      "id",
      CASE
        WHEN (
          typeof("docs_archive"."embedding") = 'blob'
          AND length("docs_archive"."embedding") = 4 * vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
        )
        OR (
          typeof("docs_archive"."embedding") = 'text'
          AND json_valid("docs_archive"."embedding")
          AND json_type("docs_archive"."embedding") = 'array'
          AND json_array_length("docs_archive"."embedding") = vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
          AND NOT EXISTS(
            SELECT
              1
            FROM json_each("docs_archive"."embedding") AS "element"
            WHERE
              NOT (
                "element"."type" IN ('integer', 'real')
                AND abs("element"."value") <= 3.4028234663852886e+38
              )
          )
        )
        THEN COALESCE(vec_distance_cosine("docs_archive"."embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 1.0)
      END AS "_distance"
    FROM "main"."docs_archive"
    WHERE
      "lang" = 'en'
    ORDER BY
      "_distance" ASC NULLS LAST,
      "id" ASC NULLS LAST
    LIMIT 5
  ) AS "union_member_2"
) AS "search_union"
ORDER BY
  "_distance" ASC NULLS LAST,
  "id" ASC NULLS LAST
LIMIT 5