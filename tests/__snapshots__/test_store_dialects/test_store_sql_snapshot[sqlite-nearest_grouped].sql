WITH "group_candidates" AS (
  SELECT
    "id",
    "doc_id",
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
  LIMIT 200
), "group_positions" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "_distance" ASC NULLS LAST, "id" ASC NULLS LAST) AS "_rank_position"
  FROM "group_candidates"
  WHERE
    "doc_id" IS NOT NULL AND "_distance" IS NOT NULL
), "group_members" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "_rank_position" ASC NULLS LAST) AS "_group_row",
    MIN("_rank_position") OVER (PARTITION BY "doc_id") AS "_group_first"
  FROM "group_positions"
), "group_ranks" AS (
  SELECT
    *,
    DENSE_RANK() OVER (ORDER BY "_group_first" ASC NULLS LAST) AS "_group_rank"
  FROM "group_members"
  WHERE
    "_group_row" <= 2
)
SELECT
  "id",
  "doc_id",
  "_distance"
FROM "group_ranks"
WHERE
  "_group_rank" > 3 AND "_group_rank" <= 6
ORDER BY
  "_group_rank" ASC NULLS LAST,
  "_group_row" ASC NULLS LAST