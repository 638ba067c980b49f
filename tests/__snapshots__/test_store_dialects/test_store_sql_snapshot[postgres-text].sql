SELECT
  "id",
  "body",
  "score"
FROM (
  SELECT
    "base".*,
    (
      SELECT
        CAST(SUM(
          "weights"."idf" * (
            1.2 + 1
          ) * "counts"."frequency" / (
            "counts"."frequency" + 1.2 * (
              1 - 0.75 + 0.75 * "counts"."length" / "weights"."average_length"
            )
          )
        ) AS DOUBLE PRECISION)
      FROM (
        SELECT
          "query_terms"."term",
          LN(
            1 + (
              "corpus"."documents" - "term"."documents" + 0.5
            ) / (
              "term"."documents" + 0.5
            )
          ) AS "idf",
          "corpus"."average_length"
        FROM UNNEST(STRING_TO_ARRAY('error | e1234 | s | near | x', ' | ')) AS "query_terms"("term")
        JOIN "hdq_text"."t6_public_4_docs_body" AS "term"
          ON "term"."term" = "query_terms"."term"
        CROSS JOIN "hdq_text"."t6_public_4_docs_body" AS "corpus"
        WHERE
          "corpus"."term" = ''
      ) AS "weights"
      CROSS JOIN LATERAL (
        SELECT
          CARDINALITY(ARRAY_POSITIONS(STRING_TO_ARRAY("base"."body__terms", ' '), "weights"."term")) AS "frequency",
          CARDINALITY(STRING_TO_ARRAY("base"."body__terms", ' ')) AS "length"
      ) AS "counts"
    ) AS "score"
  FROM "public"."docs" AS "base"
  WHERE
    STRING_TO_ARRAY("base"."body__terms", ' ') && STRING_TO_ARRAY('error | e1234 | s | near | x', ' | ')
) AS "matches"
ORDER BY
  "score" DESC,
  "id" ASC
LIMIT 5