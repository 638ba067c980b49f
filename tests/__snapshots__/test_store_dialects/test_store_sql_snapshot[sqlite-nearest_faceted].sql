WITH "facet_candidates" AS (
  SELECT
    "id",
    "lang",
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
    "title" <> 'x'
  ORDER BY
    "_distance" ASC NULLS LAST,
    "id" ASC NULLS LAST
  LIMIT 200
), "facet_counts" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "_distance" ASC NULLS LAST, "id" ASC NULLS LAST) AS "_rank_position",
    COUNT(*) OVER (PARTITION BY "lang") AS "_facet_count_1",
    ROW_NUMBER() OVER (PARTITION BY "lang" ORDER BY "_distance" ASC NULLS LAST, "id" ASC NULLS LAST) AS "_facet_row_1"
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
  "_rank_position" ASC NULLS LAST