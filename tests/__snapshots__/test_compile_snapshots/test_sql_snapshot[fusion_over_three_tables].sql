WITH text_docs_hits AS (
  SELECT
    id,
    score
  FROM bm25_search('default.public.docs', 'body', '"error" "E1234"')
  WHERE
    lang = 'en'
  ORDER BY
    score DESC,
    id ASC
  LIMIT 200
), text_docs_ranked AS (
  SELECT
    id,
    score,
    ROW_NUMBER() OVER (ORDER BY score DESC, id ASC) AS branch_rank
  FROM text_docs_hits
), text_archive_hits AS (
  SELECT
    id,
    score
  FROM bm25_search('default.public.docs_archive', 'body', '"error" "E1234"')
  WHERE
    lang = 'en'
  ORDER BY
    score DESC,
    id ASC
  LIMIT 200
), text_archive_ranked AS (
  SELECT
    id,
    score,
    ROW_NUMBER() OVER (ORDER BY score DESC, id ASC) AS branch_rank
  FROM text_archive_hits
), content_hits AS (
  SELECT
    id,
    _distance
  FROM (
    SELECT
      id,
      cosine_distance(embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
    FROM "default".public.docs AS exact_scan
    WHERE
      lang = 'en'
    UNION ALL
    SELECT
      id,
      cosine_distance(embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
    FROM "default".public.docs_archive AS exact_scan
    WHERE
      lang = 'en'
  ) AS search_union
  ORDER BY
    _distance ASC,
    id ASC
  LIMIT 200
), content_ranked AS (
  SELECT
    id,
    _distance,
    ROW_NUMBER() OVER (ORDER BY _distance ASC, id ASC) AS branch_rank
  FROM content_hits
  WHERE
    _distance IS NOT NULL
), cue_hits AS (
  SELECT
    id,
    cosine_distance(cue_embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
  FROM "default".public.docs_cues AS exact_scan
  WHERE
    id IN (
      SELECT
        id
      FROM "default".public.docs
      WHERE
        lang = 'en'
      UNION ALL
      SELECT
        id
      FROM "default".public.docs_archive
      WHERE
        lang = 'en'
    )
  ORDER BY
    _distance ASC,
    id ASC
  LIMIT 200
), cue_ranked AS (
  SELECT
    id,
    _distance,
    ROW_NUMBER() OVER (ORDER BY _distance ASC, id ASC) AS branch_rank
  FROM cue_hits
  WHERE
    _distance IS NOT NULL
), fused AS (
  SELECT
    COALESCE(text_docs_ranked.id, text_archive_ranked.id, content_ranked.id, cue_ranked.id) AS id,
    COALESCE(1.0 / (60 + text_docs_ranked.branch_rank), 0) + COALESCE(1.0 / (60 + text_archive_ranked.branch_rank), 0) + COALESCE(1.0 / (60 + content_ranked.branch_rank), 0) + COALESCE(1.0 / (60 + cue_ranked.branch_rank), 0) AS score,
    content_ranked._distance AS content_distance
  FROM text_docs_ranked
  FULL OUTER JOIN text_archive_ranked
    ON text_docs_ranked.id = text_archive_ranked.id
  FULL OUTER JOIN content_ranked
    ON COALESCE(text_docs_ranked.id, text_archive_ranked.id) = content_ranked.id
  FULL OUTER JOIN cue_ranked
    ON COALESCE(text_docs_ranked.id, text_archive_ranked.id, content_ranked.id) = cue_ranked.id
)
SELECT
  base.id,
  base.body,
  fused.content_distance AS distance
FROM fused
JOIN (
  SELECT
    id,
    body
  FROM "default".public.docs
  UNION ALL
  SELECT
    id,
    body
  FROM "default".public.docs_archive
) AS base
  ON base.id = fused.id
ORDER BY
  fused.score DESC,
  fused.content_distance ASC,
  fused.id ASC
LIMIT 10