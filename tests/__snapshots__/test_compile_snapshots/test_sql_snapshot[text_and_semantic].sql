WITH text_hits AS (
  SELECT
    id,
    score
  FROM bm25_search('default.public.docs', 'body', 'error E1234 after upgrade', 200)
  ORDER BY
    score DESC,
    id ASC
  LIMIT 200
), text_ranked AS (
  SELECT
    id,
    score,
    RANK() OVER (ORDER BY score DESC) AS branch_rank
  FROM text_hits
), semantic_hits AS (
  SELECT
    id,
    _distance
  FROM vector_search('default.public.docs', 'body', 'the app crashes on start', 200)
  ORDER BY
    _distance ASC,
    id ASC
  LIMIT 200
), semantic_ranked AS (
  SELECT
    id,
    _distance,
    RANK() OVER (ORDER BY _distance ASC) AS branch_rank
  FROM semantic_hits
), fused AS (
  SELECT
    COALESCE(text_ranked.id, semantic_ranked.id) AS id,
    COALESCE(1.0 / (60 + text_ranked.branch_rank), 0) + COALESCE(1.0 / (60 + semantic_ranked.branch_rank), 0) AS score
  FROM text_ranked
  FULL OUTER JOIN semantic_ranked
    ON text_ranked.id = semantic_ranked.id
)
SELECT
  base.id,
  base.body,
  fused.score
FROM fused
JOIN "default".public.docs AS base
  ON base.id = fused.id
ORDER BY
  fused.score DESC,
  fused.id ASC
LIMIT 5