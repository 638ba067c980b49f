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
), "nearest_hits" AS (
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
), "nearest_ranked" AS (
  SELECT
    "id",
    "_distance",
    RANK() OVER (ORDER BY "_distance" ASC) AS "branch_rank"
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
    COALESCE(
      TRY_CAST(POWER(array_distance("base"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])), 2) AS REAL),
      CASE WHEN NOT "base"."embedding" IS NULL THEN CAST('inf' AS REAL) END
    )
  ) AS "distance"
FROM "fused"
JOIN "main"."docs" AS "base"
  ON "base"."id" = "fused"."id"
ORDER BY
  "fused"."score" DESC NULLS FIRST,
  COALESCE(
    "fused"."nearest_distance",
    COALESCE(
      TRY_CAST(POWER(array_distance("base"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])), 2) AS REAL),
      CASE WHEN NOT "base"."embedding" IS NULL THEN CAST('inf' AS REAL) END
    )
  ) ASC,
  "fused"."id" ASC
LIMIT 5