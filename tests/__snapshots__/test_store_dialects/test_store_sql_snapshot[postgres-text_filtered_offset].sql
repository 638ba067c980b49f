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
WHERE
  "lang" = 'it''s'
  AND (
    "year" >= 2020 OR "order" IN ('a', 'b')
  )
  AND "deleted_at" IS NULL
  AND NOT FALSE
ORDER BY
  "score" DESC,
  "id" ASC
LIMIT 5
OFFSET 5