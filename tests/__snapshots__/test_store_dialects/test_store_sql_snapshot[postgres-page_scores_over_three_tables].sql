WITH "text_docs_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      "base".*,
      "matched"."score" AS "score"
    FROM "public"."docs" AS "base"
    JOIN (
      SELECT
        "postings"."row" AS "row",
        CAST(SUM(
          "weights"."idf" * (
            1.2 + 1
          ) * "postings"."frequency" / (
            "postings"."frequency" + 1.2 * (
              1 - 0.75 + 0.75 * "postings"."length" / "weights"."average_length"
            )
          ) ORDER BY "weights"."position"
        ) AS DOUBLE PRECISION) AS "score"
      FROM (
        SELECT
          "query_terms"."term",
          "query_terms"."position",
          LN(
            1 + (
              "corpus"."documents" - "term"."documents" + 0.5
            ) / (
              "term"."documents" + 0.5
            )
          ) AS "idf",
          "corpus"."average_length"
        FROM UNNEST(STRING_TO_ARRAY('error | e1234', ' | ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "hdq_text"."t6_public_4_docs_body" AS "term"
          ON "term"."term" = "query_terms"."term"
        CROSS JOIN "hdq_text"."t6_public_4_docs_body" AS "corpus"
        WHERE
          "corpus"."term" = ''
        OFFSET 0
      ) AS "weights"
      JOIN "hdq_text"."p6_public_4_docs_body" AS "postings"
        ON "postings"."term" = "weights"."term"
      GROUP BY
        "postings"."row"
    ) AS "matched"
      ON "matched"."row" = "base"."hdq__row"
  ) AS "matches"
  WHERE
    "lang" = 'en'
  ORDER BY
    "score" DESC,
    "id" ASC
  LIMIT 200
), "text_docs_ranked" AS (
  SELECT
    "id",
    "score",
    ROW_NUMBER() OVER (ORDER BY "score" DESC, "id" ASC) AS "branch_rank"
  FROM "text_docs_hits"
), "text_archive_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      "base".*,
      "matched"."score" AS "score"
    FROM "public"."docs_archive" AS "base"
    JOIN (
      SELECT
        "postings"."row" AS "row",
        CAST(SUM(
          "weights"."idf" * (
            1.2 + 1
          ) * "postings"."frequency" / (
            "postings"."frequency" + 1.2 * (
              1 - 0.75 + 0.75 * "postings"."length" / "weights"."average_length"
            )
          ) ORDER BY "weights"."position"
        ) AS DOUBLE PRECISION) AS "score"
      FROM (
        SELECT
          "query_terms"."term",
          "query_terms"."position",
          LN(
            1 + (
              "corpus"."documents" - "term"."documents" + 0.5
            ) / (
              "term"."documents" + 0.5
            )
          ) AS "idf",
          "corpus"."average_length"
        FROM UNNEST(STRING_TO_ARRAY('error | e1234', ' | ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "hdq_text"."t6_public_12_docs_archive_body" AS "term"
          ON "term"."term" = "query_terms"."term"
        CROSS JOIN "hdq_text"."t6_public_12_docs_archive_body" AS "corpus"
        WHERE
          "corpus"."term" = ''
        OFFSET 0
      ) AS "weights"
      JOIN "hdq_text"."p6_public_12_docs_archive_body" AS "postings"
        ON "postings"."term" = "weights"."term"
      GROUP BY
        "postings"."row"
    ) AS "matched"
      ON "matched"."row" = "base"."hdq__row"
  ) AS "matches"
  WHERE
    "lang" = 'en'
  ORDER BY
    "score" DESC,
    "id" ASC
  LIMIT 200
), "text_archive_ranked" AS (
  SELECT
    "id",
    "score",
    ROW_NUMBER() OVER (ORDER BY "score" DESC, "id" ASC) AS "branch_rank"
  FROM "text_archive_hits"
), "content_hits" AS (
  SELECT
    "id",
    "_distance"
  FROM (
    SELECT
      "id",
      NULLIF("docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"), CAST('NaN' AS DOUBLE PRECISION)) AS "_distance"
    FROM "public"."docs"
    WHERE
      "lang" = 'en'
    UNION ALL
    SELECT
      "id",
      NULLIF(
        "docs_archive"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"),
        CAST('NaN' AS DOUBLE PRECISION)
      ) AS "_distance"
    FROM "public"."docs_archive"
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
    NULLIF(
      "docs_cues"."cue_embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"),
      CAST('NaN' AS DOUBLE PRECISION)
    ) AS "_distance"
  FROM "public"."docs_cues"
  WHERE
    "id" IN (
      SELECT
        "id"
      FROM "public"."docs"
      WHERE
        "lang" = 'en'
      UNION ALL
      SELECT
        "id"
      FROM "public"."docs_archive"
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
    COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "text_docs_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "text_archive_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "content_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
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
    NULLIF("base"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"), CAST('NaN' AS DOUBLE PRECISION))
  ) AS "distance"
FROM "fused"
JOIN (
  SELECT
    "id",
    "body",
    "embedding"
  FROM "public"."docs"
  UNION ALL
  SELECT
    "id",
    "body",
    "embedding"
  FROM "public"."docs_archive"
) AS "base"
  ON "base"."id" = "fused"."id"
ORDER BY
  "fused"."score" DESC,
  COALESCE(
    "fused"."content_distance",
    NULLIF("base"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"), CAST('NaN' AS DOUBLE PRECISION))
  ) ASC,
  "fused"."id" ASC
LIMIT 10