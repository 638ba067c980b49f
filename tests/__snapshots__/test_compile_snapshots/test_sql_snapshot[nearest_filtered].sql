SELECT
  id,
  cosine_distance(embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
FROM "default".public.docs
WHERE
  category = 'x'
ORDER BY
  _distance ASC
LIMIT 3