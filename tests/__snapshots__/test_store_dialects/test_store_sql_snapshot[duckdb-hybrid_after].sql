WITH "text_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      *
    FROM (
      SELECT
        "base".*,
        "fts_hdq_text_t4_main_4_docs_body".match_bm25("base"."rowid", 'error e1234 upgrad') AS "score"
      FROM "main"."docs" AS "base"
    )
    WHERE
      NOT "score" IS NULL
  )
  ORDER BY
    "score" DESC NULLS FIRST,
    "id" ASC
  LIMIT 200
), "text_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC NULLS FIRST) AS "branch_rank"
  FROM "text_hits"
), "nearest_hits" AS (
  SELECT
    "id",
    CASE
      WHEN array_inner_product("docs"."embedding", "docs"."embedding") = 0
      THEN 1.0
      ELSE array_cosine_distance("docs"."embedding", CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]))
    END AS "_distance"
  FROM "main"."docs"
  ORDER BY
    "_distance" ASC,
    "id" ASC
  LIMIT 200
), "nearest_ranked" AS (
  SELECT
    "id",
    "_distance",
    RANK() OVER (ORDER BY "_distance" ASC) AS "branch_rank"
  FROM "nearest_hits"
  WHERE
    "_distance" IS NOT NULL
), "fused" AS (
  SELECT
    COALESCE("text_ranked"."id", "nearest_ranked"."id") AS "id",
    COALESCE(1.0 / (
      60 + "text_ranked"."branch_rank"
    ), 0) + COALESCE(1.0 / (
      60 + "nearest_ranked"."branch_rank"
    ), 0) AS "score"
  FROM "text_ranked"
  FULL OUTER JOIN "nearest_ranked"
    ON "text_ranked"."id" = "nearest_ranked"."id"
), "cursor_candidates" AS (
  SELECT
    "base"."id",
    "base"."body",
    "fused"."score"
  FROM "fused"
  JOIN "main"."docs" AS "base"
    ON "base"."id" = "fused"."id"
  ORDER BY
    "fused"."score" DESC NULLS FIRST,
    "fused"."id" ASC
  LIMIT 200
)
SELECT
  "id",
  "body",
  "score"
FROM "cursor_candidates"
WHERE
  "score" < CAST('0.03125' AS DOUBLE)
  OR (
    "score" = CAST('0.03125' AS DOUBLE) AND "id" > 42
  )
ORDER BY
  "score" DESC NULLS FIRST,
  "id" ASC
LIMIT 5