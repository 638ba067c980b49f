WITH "facet_candidates" AS (
  SELECT
    "id",
    "body",
    "lang",
    "doc_id",
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
          FROM JSON_EACH('["error", "e1234", "upgrad"]') AS "query_term"
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
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC NULLS LAST
  LIMIT 200
), "facet_counts" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "_rank_position",
    COUNT(*) OVER (PARTITION BY "lang") AS "_facet_count_1",
    ROW_NUMBER() OVER (PARTITION BY "lang" ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "_facet_row_1",
    COUNT(*) OVER (PARTITION BY "doc_id") AS "_facet_count_2",
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "_facet_row_2"
  FROM "facet_candidates"
)
SELECT
  "id",
  "body",
  "score",
  "lang",
  "doc_id",
  "_rank_position",
  "_facet_count_1",
  "_facet_row_1",
  "_facet_count_2",
  "_facet_row_2"
FROM "facet_counts"
WHERE
  (
    "_rank_position" > 2 AND "_rank_position" <= 7
  )
  OR (
    "_facet_row_1" = 1 AND "lang" IS NOT NULL
  )
  OR (
    "_facet_row_2" = 1 AND "doc_id" IS NOT NULL
  )
ORDER BY
  "_rank_position" ASC NULLS LAST