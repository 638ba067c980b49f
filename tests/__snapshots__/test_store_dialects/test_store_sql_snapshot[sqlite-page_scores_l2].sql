WITH "text_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      "base".*,
      "matched"."score" AS "score"
    FROM "main"."docs" AS "base"
    JOIN (
      SELECT
        "postings"."doc" AS "doc",
        SUM(
          "weights"."idf" * (
            1.2 + 1
          ) * "postings"."frequency" / (
            "postings"."frequency" + 1.2 * (
              1 - 0.75 + 0.75 * "postings"."length" / "weights"."average_length"
            )
          ) ORDER BY "weights"."position"
        ) AS "score"
      FROM (
        SELECT
          "counted"."term" AS "term",
          "counted"."position" AS "position",
          LN(
            1 + (
              "corpus"."documents" - "counted"."documents" + 0.5
            ) / (
              "counted"."documents" + 0.5
            )
          ) AS "idf",
          CAST("corpus"."total_length" AS REAL) / "corpus"."documents" AS "average_length"
        FROM (
          SELECT
            "query_term"."value" AS "term",
            "query_term"."key" AS "position",
            COUNT(*) AS "documents"
          FROM JSON_EACH('["error", "e1234", "s", "near", "x"]') AS "query_term"
          JOIN "main"."docs__body__fts_terms" AS "holders"
            ON "holders"."term" = "query_term"."value"
          GROUP BY
            "query_term"."key",
            "query_term"."value"
        ) AS "counted"
        CROSS JOIN "main"."docs__body__fts_corpus" AS "corpus"
      ) AS "weights"
      JOIN "main"."docs__body__fts_terms" AS "postings"
        ON "postings"."term" = "weights"."term"
      GROUP BY
        "postings"."doc"
    ) AS "matched"
      ON "matched"."doc" = "base"."rowid"
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