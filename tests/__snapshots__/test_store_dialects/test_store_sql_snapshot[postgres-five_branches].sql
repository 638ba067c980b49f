WITH "text_hits" AS (
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
        FROM UNNEST(STRING_TO_ARRAY('error | e1234 | s | near | x', ' | ')) WITH ORDINALITY AS "query_terms"("term", "position")
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
  ORDER BY
    "score" DESC,
    "id" ASC
  LIMIT 200
), "text_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC) AS "branch_rank"
  FROM "text_hits"
), "title_hits" AS (
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
        FROM UNNEST(STRING_TO_ARRAY('e1234', ' | ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "hdq_text"."t6_public_4_docs_title" AS "term"
          ON "term"."term" = "query_terms"."term"
        CROSS JOIN "hdq_text"."t6_public_4_docs_title" AS "corpus"
        WHERE
          "corpus"."term" = ''
        OFFSET 0
      ) AS "weights"
      JOIN "hdq_text"."p6_public_4_docs_title" AS "postings"
        ON "postings"."term" = "weights"."term"
      GROUP BY
        "postings"."row"
    ) AS "matched"
      ON "matched"."row" = "base"."hdq__row"
  ) AS "matches"
  ORDER BY
    "score" DESC,
    "id" ASC
  LIMIT 200
), "title_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC) AS "branch_rank"
  FROM "title_hits"
), "nearest_hits" AS (
  SELECT
    "id",
    "_distance"
  FROM (
    SELECT
      "id",
      NULLIF("docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"), CAST('NaN' AS DOUBLE PRECISION)) AS "_distance",
      "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
    FROM "public"."docs"
    ORDER BY
      "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
    FETCH FIRST 200 ROWS WITH TIES
  ) AS "nearest"
  ORDER BY
    "_order" ASC,
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
    "_distance"
  FROM (
    SELECT
      "id",
      vector_l2_squared_distance("docs"."embedding", CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector")) AS "_distance",
      "docs"."embedding" OPERATOR(public.<->) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
    FROM "public"."docs"
    ORDER BY
      "docs"."embedding" OPERATOR(public.<->) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
    FETCH FIRST 200 ROWS WITH TIES
  ) AS "nearest"
  ORDER BY
    "_order" ASC,
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
        FROM UNNEST(STRING_TO_ARRAY('x', ' | ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "hdq_text"."t6_public_4_docs_notes" AS "term"
          ON "term"."term" = "query_terms"."term"
        CROSS JOIN "hdq_text"."t6_public_4_docs_notes" AS "corpus"
        WHERE
          "corpus"."term" = ''
        OFFSET 0
      ) AS "weights"
      JOIN "hdq_text"."p6_public_4_docs_notes" AS "postings"
        ON "postings"."term" = "weights"."term"
      GROUP BY
        "postings"."row"
    ) AS "matched"
      ON "matched"."row" = "base"."hdq__row"
  ) AS "matches"
  ORDER BY
    "score" DESC,
    "id" ASC
  LIMIT 200
), "notes_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC) AS "branch_rank"
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
    COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "text_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "title_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "nearest_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "l2_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
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
JOIN "public"."docs" AS "base"
  ON "base"."id" = "fused"."id"
ORDER BY
  "fused"."score" DESC,
  "fused"."id" ASC
LIMIT 5