SELECT
  "id",
  "body",
  "score"
FROM (
  SELECT
    "base".*,
    ts_rank_cd(to_tsvector('english', "base"."body"), to_tsquery('english', 'x')) AS "score"
  FROM "support"."tickets" AS "base"
  WHERE
    to_tsvector('english', "base"."body") @@ to_tsquery('english', 'x')
) AS "matches"
ORDER BY
  "score" DESC,
  "id" ASC
LIMIT 10