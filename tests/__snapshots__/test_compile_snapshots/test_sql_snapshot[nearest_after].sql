WITH cursor_candidates AS (
  SELECT
    id,
    cosine_distance(embedding, ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
  FROM "default".public.docs
  ORDER BY
    _distance ASC
  LIMIT 9
)
SELECT
  id,
  _distance
FROM cursor_candidates
WHERE
  _distance > CAST('0.25' AS DOUBLE PRECISION)
  OR (_distance = CAST('0.25' AS DOUBLE PRECISION) AND id > 17)
ORDER BY
  _distance ASC,
  id ASC
LIMIT 3