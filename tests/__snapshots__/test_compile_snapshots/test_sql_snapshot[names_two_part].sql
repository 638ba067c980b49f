SELECT
  id,
  body,
  score
FROM bm25_search('default.support.tickets', 'body', 'x', 10)
ORDER BY
  score DESC,
  id ASC
LIMIT 10