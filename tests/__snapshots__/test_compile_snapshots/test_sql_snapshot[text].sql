SELECT
  id,
  body,
  score
FROM bm25_search('default.public.docs', 'body', 'error E1234 after upgrade', 5)
ORDER BY
  score DESC,
  id ASC
LIMIT 5