WITH "cursor_candidates" AS (
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
  ORDER BY
    "_distance" ASC NULLS LAST,
    "id" ASC NULLS LAST
  LIMIT 9
)
SELECT
  "id",
  "_distance"
FROM "cursor_candidates"
WHERE
  "_distance" > CAST('0.25' AS REAL)
  OR (
    "_distance" = CAST('0.25' AS REAL) AND "id" > 17
  )
ORDER BY
  "_distance" ASC NULLS LAST,
  "id" ASC NULLS LAST
LIMIT 3