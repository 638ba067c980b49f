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
    RANK() OVER (ORDER BY score DESC) AS branch_rank,
    MIN(CAST(score AS DOUBLE PRECISION)) OVER () AS similarity_low,
    MAX(CAST(score AS DOUBLE PRECISION)) OVER () AS similarity_high
  FROM text_hits
), nearest_hits AS (
  SELECT
    id,
    cosine_distance(embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
  FROM "default".public.docs
  ORDER BY
    _distance ASC
  LIMIT 200
), nearest_ranked AS (
  SELECT
    id,
    _distance,
    RANK() OVER (ORDER BY _distance ASC) AS branch_rank,
    MIN(-CAST(_distance AS DOUBLE PRECISION)) OVER () AS similarity_low,
    MAX(-CAST(_distance AS DOUBLE PRECISION)) OVER () AS similarity_high
  FROM nearest_hits
  WHERE
    _distance IS NOT NULL
), fused AS (
  SELECT
    COALESCE(text_ranked.id, nearest_ranked.id) AS id,
    COALESCE(
      0.5 * CASE
        WHEN text_ranked.similarity_high = text_ranked.similarity_low
        THEN 1.0
        ELSE (CAST(text_ranked.score AS DOUBLE PRECISION) - text_ranked.similarity_low) / (text_ranked.similarity_high - text_ranked.similarity_low)
      END,
      0
    ) + COALESCE(
      0.5 * CASE
        WHEN nearest_ranked.similarity_high = nearest_ranked.similarity_low
        THEN 1.0
        ELSE (-CAST(nearest_ranked._distance AS DOUBLE PRECISION) - nearest_ranked.similarity_low) / (nearest_ranked.similarity_high - nearest_ranked.similarity_low)
      END,
      0
    ) AS score
  FROM text_ranked
  FULL OUTER JOIN nearest_ranked
    ON text_ranked.id = nearest_ranked.id
)
SELECT
  base.id,
  base.body,
  fused.score
FROM fused
JOIN "default".public.docs AS base
  ON base.id = fused.id
WHERE
  fused.score >= 0.4
ORDER BY
  fused.score DESC,
  fused.id ASC
LIMIT 10
OFFSET 10