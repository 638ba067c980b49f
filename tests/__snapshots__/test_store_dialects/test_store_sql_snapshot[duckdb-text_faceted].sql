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
        FROM UNNEST(STR_SPLIT('error e1234 upgrad', ' ')) WITH ORDINALITY AS "query_terms"("term", "position")
        JOIN "fts_hdq_text_t4_main_4_docs_body"."dict" AS "words"
          ON "words"."term" = "query_terms"."term"
        CROSS JOIN "fts_hdq_text_t4_main_4_docs_body"."stats" AS "corpus"
      ) AS "weights"
      JOIN (
        SELECT
          "occurrences"."docid" AS "docid",
          "occurrences"."termid" AS "termid",
          COUNT(*) AS "frequency"
        FROM "fts_hdq_text_t4_main_4_docs_body"."terms" AS "occurrences"
        WHERE
          "occurrences"."termid" IN (
            SELECT
              "words"."termid"
            FROM "fts_hdq_text_t4_main_4_docs_body"."dict" AS "words"
            WHERE
              "words"."term" IN (
                SELECT
                  UNNEST(STR_SPLIT('error e1234 upgrad', ' '))
              )
          )
        GROUP BY
          "occurrences"."docid",
          "occurrences"."termid"
      ) AS "counts"
        ON "counts"."termid" = "weights"."termid"
      JOIN "fts_hdq_text_t4_main_4_docs_body"."docs" AS "documents"
        ON "documents"."docid" = "counts"."docid"
      CROSS JOIN "fts_hdq_text_t4_main_4_docs_body"."stats" AS "corpus"
      GROUP BY
        "documents"."name"
    ) AS "matched"
      ON "matched"."name" = "base"."rowid"
  )
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC
  LIMIT 200
), "facet_counts" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC) AS "_rank_position",
    COUNT(*) OVER (PARTITION BY "lang") AS "_facet_count_1",
    ROW_NUMBER() OVER (PARTITION BY "lang" ORDER BY "score" DESC NULLS FIRST, "id" ASC) AS "_facet_row_1",
    COUNT(*) OVER (PARTITION BY "doc_id") AS "_facet_count_2",
    ROW_NUMBER() OVER (PARTITION BY "doc_id" ORDER BY "score" DESC NULLS FIRST, "id" ASC) AS "_facet_row_2"
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