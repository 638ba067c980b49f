SELECT
  id,
  _distance
FROM (
  SELECT
    *
  FROM (
    SELECT
      id,
      cosine_distance(embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
    FROM "default".public.docs
    WHERE
      lang = 'en'
    ORDER BY
      _distance ASC
    LIMIT 5
  ) AS union_member_1
  UNION ALL
  SELECT
    *
  FROM (
    SELECT
      id,
      cosine_distance(embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
    FROM "default".public.docs_archive
    WHERE
      lang = 'en'
    ORDER BY
      _distance ASC
    LIMIT 5
  ) AS union_member_2
) AS search_union
ORDER BY
  _distance ASC,
  id ASC
LIMIT 5