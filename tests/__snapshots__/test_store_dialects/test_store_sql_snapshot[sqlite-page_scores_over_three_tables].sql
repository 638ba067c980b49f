WITH "text_docs_hits" AS (
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
          FROM JSON_EACH('["error", "e1234"]') AS "query_term"
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
  WHERE
    "lang" = 'en'
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC NULLS LAST
  LIMIT 200
), "text_docs_ranked" AS (
  SELECT
    "id",
    "score",
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "branch_rank"
  FROM "text_docs_hits"
), "text_archive_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      "base".*,
      "matched"."score" AS "score"
    FROM "main"."docs_archive" AS "base"
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
          FROM JSON_EACH('["error", "e1234"]') AS "query_term"
          JOIN "main"."docs_archive__body__fts_terms" AS "holders"
            ON "holders"."term" = "query_term"."value"
          GROUP BY
            "query_term"."key",
            "query_term"."value"
        ) AS "counted"
        CROSS JOIN "main"."docs_archive__body__fts_corpus" AS "corpus"
      ) AS "weights"
      JOIN "main"."docs_archive__body__fts_terms" AS "postings"
        ON "postings"."term" = "weights"."term"
      GROUP BY
        "postings"."doc"
    ) AS "matched"
      ON "matched"."doc" = "base"."rowid"
  )
  WHERE
    "lang" = 'en'
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC NULLS LAST
  LIMIT 200
), "text_archive_ranked" AS (
  SELECT
    "id",
    "score",
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "branch_rank"
  FROM "text_archive_hits"
), "content_hits" AS (
  SELECT
    "id",
    "_distance"
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
    UNION ALL
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
  ) AS "search_union"
  ORDER BY
    "_distance" ASC NULLS LAST,
    "id" ASC NULLS LAST
  LIMIT 200
), "content_ranked" AS (
  SELECT
    "id",
    "_distance",
    ROW_NUMBER() OVER (ORDER BY "_distance" ASC NULLS LAST, "id" ASC NULLS LAST) AS "branch_rank"
  FROM "content_hits"
  WHERE
    "_distance" IS NOT NULL
), "cue_hits" AS (
  SELECT
    "id",
    CASE
      WHEN (
        typeof("docs_cues"."cue_embedding") = 'blob'
        AND length("docs_cues"."cue_embedding") = 4 * vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
      )
      OR (
        typeof("docs_cues"."cue_embedding") = 'text'
        AND json_valid("docs_cues"."cue_embedding")
        AND json_type("docs_cues"."cue_embedding") = 'array'
        AND json_array_length("docs_cues"."cue_embedding") = vec_length(vec_f32('[0.12, -0.5, 0.33, 1e-05]'))
        AND NOT EXISTS(
          SELECT
            1
          FROM json_each("docs_cues"."cue_embedding") AS "element"
          WHERE
            NOT (
              "element"."type" IN ('integer', 'real')
              AND abs("element"."value") <= 3.4028234663852886e+38
            )
        )
      )
      THEN COALESCE(vec_distance_cosine("docs_cues"."cue_embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 1.0)
    END AS "_distance"
  FROM "main"."docs_cues"
  WHERE
    "id" IN (
      SELECT
        "id"
      FROM "main"."docs"
      WHERE
        "lang" = 'en'
      UNION ALL
      SELECT
        "id"
      FROM "main"."docs_archive"
      WHERE
        "lang" = 'en'
    )
  ORDER BY
    "_distance" ASC NULLS LAST,
    "id" ASC NULLS LAST
  LIMIT 200
), "cue_ranked" AS (
  SELECT
    "id",
    "_distance",
    ROW_NUMBER() OVER (ORDER BY "_distance" ASC NULLS LAST, "id" ASC NULLS LAST) AS "branch_rank"
  FROM "cue_hits"
  WHERE
    "_distance" IS NOT NULL
), "fused" AS (
  SELECT
    COALESCE(
      "text_docs_ranked"."id",
      "text_archive_ranked"."id",
      "content_ranked"."id",
      "cue_ranked"."id"
    ) AS "id",
    COALESCE(1.0 / (
      60 + "text_docs_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "text_archive_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "content_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "cue_ranked"."branch_rank"
    ), 0) AS "score",
    "content_ranked"."_distance" AS "content_distance"
  FROM "text_docs_ranked"
  FULL OUTER JOIN "text_archive_ranked"
    ON "text_docs_ranked"."id" = "text_archive_ranked"."id"
  FULL OUTER JOIN "content_ranked"
    ON COALESCE("text_docs_ranked"."id", "text_archive_ranked"."id") = "content_ranked"."id"
  FULL OUTER JOIN "cue_ranked"
    ON COALESCE("text_docs_ranked"."id", "text_archive_ranked"."id", "content_ranked"."id") = "cue_ranked"."id"
)
SELECT
  "base"."id",
  "base"."body",
  COALESCE(
    "fused"."content_distance",
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
      THEN COALESCE(vec_distance_cosine("base"."embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 1.0)
    END
  ) AS "distance"
FROM "fused"
JOIN (
  SELECT
    "id",
    "body",
    "embedding"
  FROM "main"."docs"
  UNION ALL
  SELECT
    "id",
    "body",
    "embedding"
  FROM "main"."docs_archive"
) AS "base"
  ON "base"."id" = "fused"."id"
ORDER BY
  "fused"."score" DESC NULLS FIRST,
  COALESCE(
    "fused"."content_distance",
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
      THEN COALESCE(vec_distance_cosine("base"."embedding", vec_f32('[0.12, -0.5, 0.33, 1e-05]')), 1.0)
    END
  ) ASC NULLS LAST,
  "fused"."id" ASC NULLS LAST
LIMIT 10