SELECT
  id,
  body,
  _distance
FROM vector_search('default.public.docs', 'body', 'the app crashes on start', 5)
ORDER BY
  _distance ASC,
  id ASC
LIMIT 5