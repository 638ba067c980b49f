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
      "docs__body__fts" MATCH '"error" OR "e1234" OR "upgrad"'
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
      THEN COALESCE(vec_distance_cosine("docs"."embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 1.0)
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
    "text_ranked"."branch_rank" AS "text_rank",
    "text_ranked"."score" AS "text_score",
    "nearest_ranked"."branch_rank" AS "nearest_rank",
    "nearest_ranked"."_distance" AS "nearest_distance"
  FROM "text_ranked"
  FULL OUTER JOIN "nearest_ranked"
    ON "text_ranked"."id" = "nearest_ranked"."id"
), "facet_candidates" AS (
  SELECT
    "base"."id",
    "base"."body",
    "base"."title",
    "base"."lang",
    "fused"."score",
    "fused"."text_rank",
    "fused"."text_score",
    "fused"."nearest_rank",
    "fused"."nearest_distance"
  FROM "fused"
  JOIN "main"."docs" AS "base"
    ON "base"."id" = "fused"."id"
  ORDER BY
    "fused"."score" DESC NULLS FIRST,
    "base"."title" ASC NULLS LAST,
    "fused"."id" ASC NULLS LAST
  LIMIT 200
), "facet_counts" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "title" ASC NULLS LAST, "id" ASC NULLS LAST) AS "_rank_position",
    COUNT(*) OVER (PARTITION BY "lang") AS "_facet_count_1",
    ROW_NUMBER() OVER (
      PARTITION BY "lang"
      ORDER BY "score" DESC NULLS FIRST, "title" ASC NULLS LAST, "id" ASC NULLS LAST
    ) AS "_facet_row_1"
  FROM "facet_candidates"
)
SELECT
  "id",
  "body",
  "score",
  "text_rank",
  "text_score",
  "nearest_rank",
  "nearest_distance",
  "lang",
  "_rank_position",
  "_facet_count_1",
  "_facet_row_1"
FROM "facet_counts"
WHERE
  (
    "_rank_position" <= 5
  ) OR (
    "_facet_row_1" = 1 AND "lang" IS NOT NULL
  )
ORDER BY
  "_rank_position" ASC NULLS LAST