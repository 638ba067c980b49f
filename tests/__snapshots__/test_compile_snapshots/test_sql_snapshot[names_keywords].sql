SELECT
  "from",
  "group",
  "user",
  cosine_distance("select", ARRAY[0.12, -0.5, 0.33, 1e-05]) AS _distance
FROM "default"."order"."table"
ORDER BY
  _distance ASC
LIMIT 10