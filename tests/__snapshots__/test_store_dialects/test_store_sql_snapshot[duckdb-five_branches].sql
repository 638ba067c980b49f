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
        FROM UNNEST(STR_SPLIT('error e1234 s near x', ' ')) WITH ORDINALITY AS "query_terms"("term", "position")
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
                  UNNEST(STR_SPLIT('error e1234 s near x', ' '))
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
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC
  LIMIT 200
), "text_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC NULLS FIRST) AS "branch_rank"
  FROM "text_hits"
), "title_hits" AS (
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
        FROM UNNEST(STR_SPLIT('e1234', ' ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "fts_hdq_text_t4_main_4_docs_title"."dict" AS "words"
          ON "words"."term" = "query_terms"."term"
        CROSS JOIN "fts_hdq_text_t4_main_4_docs_title"."stats" AS "corpus"
      ) AS "weights"
      JOIN (
        SELECT
          "occurrences"."docid" AS "docid",
          "occurrences"."termid" AS "termid",
          COUNT(*) AS "frequency"
        FROM "fts_hdq_text_t4_main_4_docs_title"."terms" AS "occurrences"
        WHERE
          "occurrences"."termid" IN (
            SELECT
              "words"."termid"
            FROM "fts_hdq_text_t4_main_4_docs_title"."dict" AS "words"
            WHERE
              "words"."term" IN (
                SELECT
                  UNNEST(STR_SPLIT('e1234', ' '))
              )
          )
        GROUP BY
          "occurrences"."docid",
          "occurrences"."termid"
      ) AS "counts"
        ON "counts"."termid" = "weights"."termid"
      JOIN "fts_hdq_text_t4_main_4_docs_title"."docs" AS "documents"
        ON "documents"."docid" = "counts"."docid"
      CROSS JOIN "fts_hdq_text_t4_main_4_docs_title"."stats" AS "corpus"
      GROUP BY
        "documents"."name"
    ) AS "matched"
      ON "matched"."name" = "base"."rowid"
  )
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC
  LIMIT 200
), "title_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC NULLS FIRST) AS "branch_rank"
  FROM "title_hits"
), "nearest_hits" AS (
  SELECT
    "id",
    CASE
      WHEN array_inner_product("docs"."embedding", "docs"."embedding") = 0
      AND list_dot_product(CAST("docs"."embedding" AS DOUBLE[]), CAST("docs"."embedding" AS DOUBLE[])) = 0
      THEN 1.0
      ELSE CAST(array_cosine_distance("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
    END AS "_distance"
  FROM "main"."docs"
  ORDER BY
    "_distance" ASC,
    "id" ASC
  LIMIT 200
), "nearest_ranked" AS (
  SELECT
    "id",
    "_distance",
    RANK() OVER (ORDER BY "_distance" ASC) AS "branch_rank"
  FROM "nearest_hits"
  WHERE
    "_distance" IS NOT NULL
), "l2_hits" AS (
  SELECT
    "id",
    COALESCE(
      TRY_CAST(POWER(array_distance("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])), 2) AS REAL),
      CASE WHEN NOT "docs"."embedding" IS NULL THEN CAST('inf' AS REAL) END
    ) AS "_distance"
  FROM "main"."docs"
  ORDER BY
    "_distance" ASC,
    "id" ASC
  LIMIT 200
), "l2_ranked" AS (
  SELECT
    "id",
    "_distance",
    RANK() OVER (ORDER BY "_distance" ASC) AS "branch_rank"
  FROM "l2_hits"
  WHERE
    "_distance" IS NOT NULL
), "notes_hits" AS (
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
        FROM UNNEST(STR_SPLIT('x', ' ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "fts_hdq_text_t4_main_4_docs_notes"."dict" AS "words"
          ON "words"."term" = "query_terms"."term"
        CROSS JOIN "fts_hdq_text_t4_main_4_docs_notes"."stats" AS "corpus"
      ) AS "weights"
      JOIN (
        SELECT
          "occurrences"."docid" AS "docid",
          "occurrences"."termid" AS "termid",
          COUNT(*) AS "frequency"
        FROM "fts_hdq_text_t4_main_4_docs_notes"."terms" AS "occurrences"
        WHERE
          "occurrences"."termid" IN (
            SELECT
              "words"."termid"
            FROM "fts_hdq_text_t4_main_4_docs_notes"."dict" AS "words"
            WHERE
              "words"."term" IN (
                SELECT
                  UNNEST(STR_SPLIT('x', ' '))
              )
          )
        GROUP BY
          "occurrences"."docid",
          "occurrences"."termid"
      ) AS "counts"
        ON "counts"."termid" = "weights"."termid"
      JOIN "fts_hdq_text_t4_main_4_docs_notes"."docs" AS "documents"
        ON "documents"."docid" = "counts"."docid"
      CROSS JOIN "fts_hdq_text_t4_main_4_docs_notes"."stats" AS "corpus"
      GROUP BY
        "documents"."name"
    ) AS "matched"
      ON "matched"."name" = "base"."rowid"
  )
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC
  LIMIT 200
), "notes_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC NULLS FIRST) AS "branch_rank"
  FROM "notes_hits"
), "fused_keys" AS (
  SELECT
    "id"
  FROM "text_ranked"
  UNION
  SELECT
    "id"
  FROM "title_ranked"
  UNION
  SELECT
    "id"
  FROM "nearest_ranked"
  UNION
  SELECT
    "id"
  FROM "l2_ranked"
  UNION
  SELECT
    "id"
  FROM "notes_ranked"
), "fused" AS (
  SELECT
    "fused_keys"."id" AS "id",
    COALESCE(1.0 / (
      60 + "text_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "title_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "nearest_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "l2_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "notes_ranked"."branch_rank"
    ), 0) AS "score"
  FROM "fused_keys"
  LEFT JOIN "text_ranked"
    ON "text_ranked"."id" = "fused_keys"."id"
  LEFT JOIN "title_ranked"
    ON "title_ranked"."id" = "fused_keys"."id"
  LEFT JOIN "nearest_ranked"
    ON "nearest_ranked"."id" = "fused_keys"."id"
  LEFT JOIN "l2_ranked"
    ON "l2_ranked"."id" = "fused_keys"."id"
  LEFT JOIN "notes_ranked"
    ON "notes_ranked"."id" = "fused_keys"."id"
)
SELECT
  "base"."id",
  "base"."body",
  "fused"."score"
FROM "fused"
JOIN "main"."docs" AS "base"
  ON "base"."id" = "fused"."id"
ORDER BY
  "fused"."score" DESC NULLS FIRST,
  "fused"."id" ASC
LIMIT 5