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
        FROM UNNEST(STRING_TO_ARRAY('error | e1234 | upgrad', ' | ')) WITH ORDINALITY AS "query_terms"("term", "position")
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
), "fused" AS (
  SELECT
    COALESCE("text_ranked"."id", "nearest_ranked"."id") AS "id",
    COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "text_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
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
  JOIN "public"."docs" AS "base"
    ON "base"."id" = "fused"."id"
  ORDER BY
    "fused"."score" DESC,
    "base"."title" ASC,
    "fused"."id" ASC
  LIMIT 200
), "facet_counts" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC, "title" ASC, "id" ASC) AS "_rank_position",
    COUNT(*) OVER (PARTITION BY "lang") AS "_facet_count_1",
    ROW_NUMBER() OVER (PARTITION BY "lang" ORDER BY "score" DESC, "title" ASC, "id" ASC) AS "_facet_row_1"
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
  "_rank_position" ASC