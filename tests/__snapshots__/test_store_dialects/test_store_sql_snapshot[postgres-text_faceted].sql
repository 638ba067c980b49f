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
), "facet_counts" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC, "id" ASC) AS "_rank_position",
    COUNT(*) OVER (PARTITION BY "lang") AS "_facet_count_1",
    ROW_NUMBER() OVER (PARTITION BY "lang" ORDER BY "score" DESC, "id" ASC) AS "_facet_row_1",
    COUNT(*) OVER (PARTITION BY "doc_id") AS "_facet_count_2",
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "score" DESC, "id" ASC) AS "_facet_row_2"
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
  "_rank_position" ASC