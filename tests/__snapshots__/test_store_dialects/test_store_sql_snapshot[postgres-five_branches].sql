WITH "text_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      "base".*,
      ts_rank_cd(to_tsvector('english', "base"."body"), to_tsquery('english', 'error | E1234 | it | s | NEAR | x')) AS "score"
    FROM "public"."docs" AS "base"
    WHERE
      to_tsvector('english', "base"."body") @@ to_tsquery('english', 'error | E1234 | it | s | NEAR | x')
  ) AS "matches"
  ORDER BY
    "score" DESC,
    "id" ASC
  LIMIT 100
), "text_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC) AS "branch_rank"
  FROM "text_hits"
), "title_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      "base".*,
      ts_rank_cd(to_tsvector('english', "base"."title"), to_tsquery('english', 'E1234')) AS "score"
    FROM "public"."docs" AS "base"
    WHERE
      to_tsvector('english', "base"."title") @@ to_tsquery('english', 'E1234')
  ) AS "matches"
  ORDER BY
    "score" DESC,
    "id" ASC
  LIMIT 100
), "title_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC) AS "branch_rank"
  FROM "title_hits"
), "nearest_hits" AS (
  SELECT
    "id",
    "_distance"
  FROM (
    SELECT
      "id",
      NULLIF("docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"), CAST('NaN' AS DOUBLE PRECISION)) AS "_distance",
      "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
    FROM "public"."docs"
    ORDER BY
      "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
    FETCH FIRST 100 ROWS WITH TIES
  ) AS "nearest"
  ORDER BY
    "_order" ASC,
    "id" ASC
  LIMIT 100
), "nearest_ranked" AS (
  SELECT
    "id",
    "_distance",
    RANK() OVER (ORDER BY "_distance" ASC) AS "branch_rank"
  FROM "nearest_hits"
  WHERE
    "_distance" IS NOT NULL
), "l2_hits" AS (
  SELECT
    "id",
    "_distance"
  FROM (
    SELECT
      "id",
      vector_l2_squared_distance("docs"."embedding", CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector")) AS "_distance",
      "docs"."embedding" OPERATOR(public.<->) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
    FROM "public"."docs"
    ORDER BY
      "docs"."embedding" OPERATOR(public.<->) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
    FETCH FIRST 100 ROWS WITH TIES
  ) AS "nearest"
  ORDER BY
    "_order" ASC,
    "id" ASC
  LIMIT 100
), "l2_ranked" AS (
  SELECT
    "id",
    "_distance",
    RANK() OVER (ORDER BY "_distance" ASC) AS "branch_rank"
  FROM "l2_hits"
  WHERE
    "_distance" IS NOT NULL
), "notes_hits" AS (
  SELECT
    "id",
    "score"
  FROM (
    SELECT
      "base".*,
      ts_rank_cd(to_tsvector('english', "base"."notes"), to_tsquery('english', 'x')) AS "score"
    FROM "public"."docs" AS "base"
    WHERE
      to_tsvector('english', "base"."notes") @@ to_tsquery('english', 'x')
  ) AS "matches"
  ORDER BY
    "score" DESC,
    "id" ASC
  LIMIT 100
), "notes_ranked" AS (
  SELECT
    "id",
    "score",
    RANK() OVER (ORDER BY "score" DESC) AS "branch_rank"
  FROM "notes_hits"
), "fused_keys" AS (
  SELECT
    "id"
  FROM "text_ranked"
  UNION
  SELECT
    "id"
  FROM "title_ranked"
  UNION
  SELECT
    "id"
  FROM "nearest_ranked"
  UNION
  SELECT
    "id"
  FROM "l2_ranked"
  UNION
  SELECT
    "id"
  FROM "notes_ranked"
), "fused" AS (
  SELECT
    "fused_keys"."id" AS "id",
    COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "text_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "title_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "nearest_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "l2_ranked"."branch_rank"
    ), 0) + COALESCE(CAST(1.0 AS DOUBLE PRECISION) / (
      60 + "notes_ranked"."branch_rank"
    ), 0) AS "score"
  FROM "fused_keys"
  LEFT JOIN "text_ranked"
    ON "text_ranked"."id" = "fused_keys"."id"
  LEFT JOIN "title_ranked"
    ON "title_ranked"."id" = "fused_keys"."id"
  LEFT JOIN "nearest_ranked"
    ON "nearest_ranked"."id" = "fused_keys"."id"
  LEFT JOIN "l2_ranked"
    ON "l2_ranked"."id" = "fused_keys"."id"
  LEFT JOIN "notes_ranked"
    ON "notes_ranked"."id" = "fused_keys"."id"
)
SELECT
  "base"."id",
  "base"."body",
  "fused"."score"
FROM "fused"
JOIN "public"."docs" AS "base"
  ON "base"."id" = "fused"."id"
ORDER BY
  "fused"."score" DESC,
  "fused"."id" ASC
LIMIT 5