WITH "group_candidates" AS (
  SELECT
    "id",
    "doc_id",
    CASE
      WHEN array_inner_product("docs"."embedding", "docs"."embedding") = 0
      AND list_dot_product(CAST("docs"."embedding" AS DOUBLE[]), CAST("docs"."embedding" AS DOUBLE[])) = 0
      THEN 1.0
      ELSE CAST(array_cosine_distance("docs"."embedding", CAST(CAST([0.12, -0.5, 0.33, 1e-05] AS FLOAT[4]) AS DOUBLE[4])) AS REAL)
    END AS "_distance"
  FROM "main"."docs"
  ORDER BY
    "_distance" ASC,
    "id" ASC
  LIMIT 200
), "group_positions" AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY "_distance" ASC, "id" ASC) AS "_rank_position"
  FROM "group_candidates"
  WHERE
    "doc_id" IS NOT NULL AND "_distance" IS NOT NULL
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
    "_group_row" <= 2
)
SELECT
  "id",
  "doc_id",
  "_distance"
FROM "group_ranks"
WHERE
  "_group_rank" > 3 AND "_group_rank" <= 6
ORDER BY
  "_group_rank" ASC,
  "_group_row" ASC