WITH text_hits AS (
  SELECT
    result_id,
    score
  FROM bm25_search('f1.public.results', 'notes', 'x', 200)
  ORDER BY
    score DESC,
    result_id ASC
  LIMIT 200
), text_ranked AS (
  SELECT
    result_id,
    score,
    RANK() OVER (ORDER BY score DESC) AS branch_rank
  FROM text_hits
), nearest_hits AS (
  SELECT
    result_id,
    cosine_distance(notes_embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
  FROM f1.public.results
  ORDER BY
    _distance ASC
  LIMIT 200
), nearest_ranked AS (
  SELECT
    result_id,
    _distance,
    RANK() OVER (ORDER BY _distance ASC) AS branch_rank
  FROM nearest_hits
  WHERE
    _distance IS NOT NULL
), fused AS (
  SELECT
    COALESCE(text_ranked.result_id, nearest_ranked.result_id) AS result_id,
    COALESCE(1.0 / (60 + text_ranked.branch_rank), 0) + COALESCE(1.0 / (60 + nearest_ranked.branch_rank), 0) AS score
  FROM text_ranked
  FULL OUTER JOIN nearest_ranked
    ON text_ranked.result_id = nearest_ranked.result_id
)
SELECT
  base.result_id,
  base.notes,
  fused.score
FROM fused
JOIN f1.public.results AS base
  ON base.result_id = fused.result_id
ORDER BY
  fused.score DESC,
  fused.result_id ASC
LIMIT 10