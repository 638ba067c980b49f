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
        "documents"."name" AS "name",
        CAST(SUM(
          "weights"."idf" * (
            1.2 + 1
          ) * "counts"."frequency" / (
            "counts"."frequency" + 1.2 * (
              1 - 0.75 + 0.75 * "documents"."len" / "corpus"."avgdl"
            )
          ) ORDER BY "weights"."position"
        ) AS DOUBLE) AS "score"
      FROM (
        SELECT
          "words"."termid" AS "termid",
          "query_terms"."position" AS "position",
          LN(1 + (
            "corpus"."num_docs" - "words"."df" + 0.5
          ) / (
            "words"."df" + 0.5
          )) AS "idf"
        FROM UNNEST(STR_SPLIT('error e1234', ' ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "fts_hdq_text_t4_main_4_docs_body"."dict" AS "words"
          ON "words"."term" = "query_terms"."term"
        CROSS JOIN "fts_hdq_text_t4_main_4_docs_body"."stats" AS "corpus"
      ) AS "weights"
      JOIN (
        SELECT
          "occurrences"."docid" AS "docid",
          "occurrences"."termid" AS "termid",
          COUNT(*) AS "frequency"
        FROM "fts_hdq_text_t4_main_4_docs_body"."terms" AS "occurrences"
        WHERE
          "occurrences"."termid" IN (
            SELECT
              "words"."termid"
            FROM "fts_hdq_text_t4_main_4_docs_body"."dict" AS "words"
            WHERE
              "words"."term" IN (
                SELECT
                  UNNEST(STR_SPLIT('error e1234', ' '))
              )
          )
        GROUP BY
          "occurrences"."docid",
          "occurrences"."termid"
      ) AS "counts"
        ON "counts"."termid" = "weights"."termid"
      JOIN "fts_hdq_text_t4_main_4_docs_body"."docs" AS "documents"
        ON "documents"."docid" = "counts"."docid"
      CROSS JOIN "fts_hdq_text_t4_main_4_docs_body"."stats" AS "corpus"
      GROUP BY
        "documents"."name"
    ) AS "matched"
      ON "matched"."name" = "base"."rowid"
  )
  WHERE
    "lang" = 'en'
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC
  LIMIT 200
), "text_docs_ranked" AS (
  SELECT
    "id",
    "score",
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC) AS "branch_rank"
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
        "documents"."name" AS "name",
        CAST(SUM(
          "weights"."idf" * (
            1.2 + 1
          ) * "counts"."frequency" / (
            "counts"."frequency" + 1.2 * (
              1 - 0.75 + 0.75 * "documents"."len" / "corpus"."avgdl"
            )
          ) ORDER BY "weights"."position"
        ) AS DOUBLE) AS "score"
      FROM (
        SELECT
          "words"."termid" AS "termid",
          "query_terms"."position" AS "position",
          LN(1 + (
            "corpus"."num_docs" - "words"."df" + 0.5
          ) / (
            "words"."df" + 0.5
          )) AS "idf"
        FROM UNNEST(STR_SPLIT('error e1234', ' ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "fts_hdq_text_t4_main_12_docs_archive_body"."dict" AS "words"
          ON "words"."term" = "query_terms"."term"
        CROSS JOIN "fts_hdq_text_t4_main_12_docs_archive_body"."stats" AS "corpus"
      ) AS "weights"
      JOIN (
        SELECT
          "occurrences"."docid" AS "docid",
          "occurrences"."termid" AS "termid",
          COUNT(*) AS "frequency"
        FROM "fts_hdq_text_t4_main_12_docs_archive_body"."terms" AS "occurrences"
        WHERE
          "occurrences"."termid" IN (
            SELECT
              "words"."termid"
            FROM "fts_hdq_text_t4_main_12_docs_archive_body"."dict" AS "words"
            WHERE
              "words"."term" IN (
                SELECT
                  UNNEST(STR_SPLIT('error e1234', ' '))
              )
          )
        GROUP BY
          "occurrences"."docid",
          "occurrences"."termid"
      ) AS "counts"
        ON "counts"."termid" = "weights"."termid"
      JOIN "fts_hdq_text_t4_main_12_docs_archive_body"."docs" AS "documents"
        ON "documents"."docid" = "counts"."docid"
      CROSS JOIN "fts_hdq_text_t4_main_12_docs_archive_body"."stats" AS "corpus"
      GROUP BY
        "documents"."name"
    ) AS "matched"
      ON "matched"."name" = "base"."rowid"
  )
  WHERE
    "lang" = 'en'
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC
  LIMIT 200
), "text_archive_ranked" AS (
  SELECT
    "id",
    "score",
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC) AS "branch_rank"
  FROM "text_archive_hits"
), "content_hits" AS (
  SELECT
    "id",
    "_distance"
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
    UNION ALL
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
  ) AS "search_union"
  ORDER BY
    "_distance" ASC,
    "id" ASC
  LIMIT 200
), "content_ranked" AS (
  SELECT
    "id",
    "_distance",
    ROW_NUMBER() OVER (ORDER BY "_distance" ASC, "id" ASC) AS "branch_rank"
  FROM "content_hits"
  WHERE
    "_distance" IS NOT NULL
), "cue_hits" AS (
  SELECT
    "id",
    CASE
      WHEN array_inner_product("docs_cues"."cue_embedding", "docs_cues"."cue_embedding") = 0
      AND list_dot_product(
        CAST("docs_cues"."cue_embedding" AS DOUBLE[]),
        CAST("docs_cues"."cue_embedding" AS DOUBLE[])
      ) = 0
      THEN 1.0
      ELSE CAST(array_cosine_distance("docs_cues"."cue_embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
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
    "_distance" ASC,
    "id" ASC
  LIMIT 200
), "cue_ranked" AS (
  SELECT
    "id",
    "_distance",
    ROW_NUMBER() OVER (ORDER BY "_distance" ASC, "id" ASC) AS "branch_rank"
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
      WHEN array_inner_product("base"."embedding", "base"."embedding") = 0
      AND list_dot_product(CAST("base"."embedding" AS DOUBLE[]), CAST("base"."embedding" AS DOUBLE[])) = 0
      THEN 1.0
      ELSE CAST(array_cosine_distance("base"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
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
      WHEN array_inner_product("base"."embedding", "base"."embedding") = 0
      AND list_dot_product(CAST("base"."embedding" AS DOUBLE[]), CAST("base"."embedding" AS DOUBLE[])) = 0
      THEN 1.0
      ELSE CAST(array_cosine_distance("base"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
    END
  ) ASC,
  "fused"."id" ASC
LIMIT 10