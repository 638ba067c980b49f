WITH "text_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      "base".*,
      -bm25("docs__body__fts") AS "score"
    FROM "main"."docs__body__fts"
    JOIN "main"."docs" AS "base"
      ON "base"."rowid" = "docs__body__fts"."rowid"
    WHERE
      "docs__body__fts" MATCH '"error" OR "e1234" OR "s" OR "near" OR "x"'
  )
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC NULLS LAST
  LIMIT 200
), "text_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC NULLS FIRST) AS "branch_rank"
  FROM "text_hits"
), "nearest_hits" AS (
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
      THEN POWER(vec_distance_l2("docs"."embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 2)
    END AS "_distance"
  FROM "main"."docs"
  ORDER BY
    "_distance" ASC NULLS LAST,
    "id" ASC NULLS LAST
  LIMIT 200
), "nearest_ranked" AS (
  SELECT
    "id",
    "_distance",
    RANK() OVER (ORDER BY "_distance" ASC NULLS LAST) AS "branch_rank"
  FROM "nearest_hits"
  WHERE
    "_distance" IS NOT NULL
), "fused" AS (
  SELECT
    COALESCE("text_ranked"."id", "nearest_ranked"."id") AS "id",
    COALESCE(1.0 / (
      60 + "text_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "nearest_ranked"."branch_rank"
    ), 0) AS "score",
    "nearest_ranked"."_distance" AS "nearest_distance"
  FROM "text_ranked"
  FULL OUTER JOIN "nearest_ranked"
    ON "text_ranked"."id" = "nearest_ranked"."id"
)
SELECT
  "base"."id",
  "base"."body",
  COALESCE(
    "fused"."nearest_distance",
    CASE
      WHEN (
        typeof("base"."embedding") = 'blob'
        AND length("base"."embedding") = 4 * vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
      )
      OR (
        typeof("base"."embedding") = 'text'
        AND json_valid("base"."embedding")
        AND json_type("base"."embedding") = 'array'
        AND json_array_length("base"."embedding") = vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
        AND NOT EXISTS(
          SELECT
            1
          FROM json_each("base"."embedding") AS "element"
          WHERE
            NOT (
              "element"."type" IN ('integer', 'real')
              AND abs("element"."value") <= 3.4028234663852886e+38
            )
        )
      )
      THEN POWER(vec_distance_l2("base"."embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 2)
    END
  ) AS "distance"
FROM "fused"
JOIN "main"."docs" AS "base"
  ON "base"."id" = "fused"."id"
ORDER BY
  "fused"."score" DESC NULLS FIRST,
  COALESCE(
    "fused"."nearest_distance",
    CASE
      WHEN (
        typeof("base"."embedding") = 'blob'
        AND length("base"."embedding") = 4 * vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
      )
      OR (
        typeof("base"."embedding") = 'text'
        AND json_valid("base"."embedding")
        AND json_type("base"."embedding") = 'array'
        AND json_array_length("base"."embedding") = vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
        AND NOT EXISTS(
          SELECT
            1
          FROM json_each("base"."embedding") AS "element"
          WHERE
            NOT (
              "element"."type" IN ('integer', 'real')
              AND abs("element"."value") <= 3.4028234663852886e+38
            )
        )
      )
      THEN POWER(vec_distance_l2("base"."embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 2)
    END
  ) ASC NULLS LAST,
  "fused"."id" ASC NULLS LAST
LIMIT 5