SELECT
  "id",
  "body",
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
LIMIT 5