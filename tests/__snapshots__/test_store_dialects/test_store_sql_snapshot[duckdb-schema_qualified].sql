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
      "documents"."name" AS "name",
      CAST(SUM(
        "weights"."idf" * (
          1.2 + 1
        ) * "counts"."frequency" / (
          "counts"."frequency" + 1.2 * (
            1 - 0.75 + 0.75 * "documents"."len" / "corpus"."avgdl"
          )
        ) ORDER BY "weights"."position"
      ) AS DOUBLE) AS "score"
    FROM (
      SELECT
        "words"."termid" AS "termid",
        "query_terms"."position" AS "position",
        LN(1 + (
          "corpus"."num_docs" - "words"."df" + 0.5
        ) / (
          "words"."df" + 0.5
        )) AS "idf"
      FROM UNNEST(STR_SPLIT('x', ' ')) WITH ORDINALITY AS "query_terms"("term", "position")
      JOIN "fts_hdq_text_t7_support_7_tickets_body"."dict" AS "words"
        ON "words"."term" = "query_terms"."term"
      CROSS JOIN "fts_hdq_text_t7_support_7_tickets_body"."stats" AS "corpus"
    ) AS "weights"
    JOIN (
      SELECT
        "occurrences"."docid" AS "docid",
        "occurrences"."termid" AS "termid",
        COUNT(*) AS "frequency"
      FROM "fts_hdq_text_t7_support_7_tickets_body"."terms" AS "occurrences"
      WHERE
        "occurrences"."termid" IN (
          SELECT
            "words"."termid"
          FROM "fts_hdq_text_t7_support_7_tickets_body"."dict" AS "words"
          WHERE
            "words"."term" IN (
              SELECT
                UNNEST(STR_SPLIT('x', ' '))
            )
        )
      GROUP BY
        "occurrences"."docid",
        "occurrences"."termid"
    ) AS "counts"
      ON "counts"."termid" = "weights"."termid"
    JOIN "fts_hdq_text_t7_support_7_tickets_body"."docs" AS "documents"
      ON "documents"."docid" = "counts"."docid"
    CROSS JOIN "fts_hdq_text_t7_support_7_tickets_body"."stats" AS "corpus"
    GROUP BY
      "documents"."name"
  ) AS "matched"
    ON "matched"."name" = "base"."rowid"
)
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC
LIMIT 10