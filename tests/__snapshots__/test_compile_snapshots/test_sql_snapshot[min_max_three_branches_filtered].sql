WITH text_hits AS (
  SELECT
    id,
    score
  FROM bm25_search('default.public.docs', 'body', 'error E1234 after upgrade')
  WHERE
    lang = 'en'
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
), title_hits AS (
  SELECT
    id,
    score
  FROM bm25_search('default.public.docs', 'title', 'E1234')
  WHERE
    lang = 'en'
  ORDER BY
    score DESC,
    id ASC
  LIMIT 200
), title_ranked AS (
  SELECT
    id,
    score,
    RANK() OVER (ORDER BY score DESC) AS branch_rank,
    MIN(CAST(score AS DOUBLE PRECISION)) OVER () AS similarity_low,
    MAX(CAST(score AS DOUBLE PRECISION)) OVER () AS similarity_high
  FROM title_hits
), semantic_hits AS (
  SELECT
    id,
    vector_distance(body, 'the app crashes on start') AS _distance
  FROM "default".public.docs
  WHERE
    lang = 'en'
  ORDER BY
    _distance ASC,
    id ASC
  LIMIT 200
), semantic_ranked AS (
  SELECT
    id,
    _distance,
    RANK() OVER (ORDER BY _distance ASC) AS branch_rank,
    MIN(-CAST(_distance AS DOUBLE PRECISION)) OVER () AS similarity_low,
    MAX(-CAST(_distance AS DOUBLE PRECISION)) OVER () AS similarity_high
  FROM semantic_hits
  WHERE
    _distance IS NOT NULL
), fused AS (
  SELECT
    COALESCE(text_ranked.id, title_ranked.id, semantic_ranked.id) AS id,
    COALESCE(
      0.5 * CASE
        WHEN text_ranked.similarity_high = text_ranked.similarity_low
        THEN 1.0
        ELSE (CAST(text_ranked.score AS DOUBLE PRECISION) - text_ranked.similarity_low) / (text_ranked.similarity_high - text_ranked.similarity_low)
      END,
      0
    ) + COALESCE(
      0.25 * CASE
        WHEN title_ranked.similarity_high = title_ranked.similarity_low
        THEN 1.0
        ELSE (CAST(title_ranked.score AS DOUBLE PRECISION) - title_ranked.similarity_low) / (title_ranked.similarity_high - title_ranked.similarity_low)
      END,
      0
    ) + COALESCE(
      0.25 * CASE
        WHEN semantic_ranked.similarity_high = semantic_ranked.similarity_low
        THEN 1.0
        ELSE (-CAST(semantic_ranked._distance AS DOUBLE PRECISION) - semantic_ranked.similarity_low) / (semantic_ranked.similarity_high - semantic_ranked.similarity_low)
      END,
      0
    ) AS score
  FROM text_ranked
  FULL OUTER JOIN title_ranked
    ON text_ranked.id = title_ranked.id
  FULL OUTER JOIN semantic_ranked
    ON COALESCE(text_ranked.id, title_ranked.id) = semantic_ranked.id
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