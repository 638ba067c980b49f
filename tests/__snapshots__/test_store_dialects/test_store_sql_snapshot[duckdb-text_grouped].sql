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
), "group_positions" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "score" DESC NULLS FIRST, "id" ASC) AS "_rank_position"
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