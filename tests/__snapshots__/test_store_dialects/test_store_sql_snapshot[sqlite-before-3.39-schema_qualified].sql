SELECT
  "id",
  "body",
  "score"
FROM (
  SELECT
    "base".*,
    "matched"."score" AS "score"
  FROM "support"."tickets" AS "base"
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
        FROM JSON_EACH('["x"]') AS "query_term"
        JOIN "support"."tickets__body__fts_terms" AS "holders"
          ON "holders"."term" = "query_term"."value"
        GROUP BY
          "query_term"."key",
          "query_term"."value"
      ) AS "counted"
      CROSS JOIN "support"."tickets__body__fts_corpus" AS "corpus"
    ) AS "weights"
    JOIN "support"."tickets__body__fts_terms" AS "postings"
      ON "postings"."term" = "weights"."term"
    GROUP BY
      "postings"."doc"
  ) AS "matched"
    ON "matched"."doc" = "base"."rowid"
)
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC NULLS LAST
LIMIT 10