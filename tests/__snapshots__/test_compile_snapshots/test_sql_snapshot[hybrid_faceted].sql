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
    RANK() OVER (ORDER BY _distance ASC) AS branch_rank
  FROM nearest_hits
  WHERE
    _distance IS NOT NULL
), fused AS (
  SELECT
    COALESCE(text_ranked.id, nearest_ranked.id) AS id,
    COALESCE(1.0 / (60 + text_ranked.branch_rank), 0) + COALESCE(1.0 / (60 + nearest_ranked.branch_rank), 0) AS score,
    text_ranked.branch_rank AS text_rank,
    text_ranked.score AS text_score,
    nearest_ranked.branch_rank AS nearest_rank,
    nearest_ranked._distance AS nearest_distance
  FROM text_ranked
  FULL OUTER JOIN nearest_ranked
    ON text_ranked.id = nearest_ranked.id
), facet_candidates AS (
  SELECT
    base.id,
    base.body,
    base.title,
    base.lang,
    fused.score,
    fused.text_rank,
    fused.text_score,
    fused.nearest_rank,
    fused.nearest_distance
  FROM fused
  JOIN "default".public.docs AS base
    ON base.id = fused.id
  ORDER BY
    fused.score DESC,
    base.title ASC,
    fused.id ASC
  LIMIT 200
), facet_counts AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY score DESC, title ASC, id ASC) AS _rank_position,
    COUNT(*) OVER (PARTITION BY lang) AS _facet_count_1,
    ROW_NUMBER() OVER (PARTITION BY lang ORDER BY score DESC, title ASC, id ASC) AS _facet_row_1
  FROM facet_candidates
)
SELECT
  id,
  body,
  score,
  text_rank,
  text_score,
  nearest_rank,
  nearest_distance,
  lang,
  _rank_position,
  _facet_count_1,
  _facet_row_1
FROM facet_counts
WHERE
  (_rank_position <= 5) OR (_facet_row_1 = 1 AND lang IS NOT NULL)
ORDER BY
  _rank_position ASC