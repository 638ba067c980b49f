WITH "group_candidates" AS (
  SELECT
    "id",
    "body",
    "doc_id",
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
), "group_positions" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC, "id" ASC) AS "_rank_position"
  FROM "group_candidates"
  WHERE
    "doc_id" IS NOT NULL
), "group_members" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "_rank_position" ASC) AS "_group_row",
    MIN("_rank_position") OVER (PARTITION BY "doc_id") AS "_group_first"
  FROM "group_positions"
), "group_ranks" AS (
  SELECT
    *,
    DENSE_RANK() OVER (ORDER BY "_group_first" ASC) AS "_group_rank"
  FROM "group_members"
  WHERE
    "_group_row" <= 1
)
SELECT
  "id",
  "body",
  "doc_id",
  "score"
FROM "group_ranks"
WHERE
  "_group_rank" <= 5
ORDER BY
  "_group_rank" ASC,
  "_group_row" ASC