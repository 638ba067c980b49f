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
), "group_positions" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC NULLS LAST) AS "_rank_position"
  FROM "group_candidates"
  WHERE
    "doc_id" IS NOT NULL
), "group_members" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "_rank_position" ASC NULLS LAST) AS "_group_row",
    MIN("_rank_position") OVER (PARTITION BY "doc_id") AS "_group_first"
  FROM "group_positions"
), "group_ranks" AS (
  SELECT
    *,
    DENSE_RANK() OVER (ORDER BY "_group_first" ASC NULLS LAST) AS "_group_rank"
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
  "_group_rank" ASC NULLS LAST,
  "_group_row" ASC NULLS LAST