SELECT
  "id",
  "body",
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
LIMIT 5