SELECT
  id,
  negative_dot_product(embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
FROM "default".public.docs
ORDER BY
  _distance ASC
LIMIT 3