SELECT
  id,
  body,
  score
FROM bm25_search('default.public.docs', 'body', 'x', 10)
ORDER BY
  score DESC,
  id ASC
LIMIT 10