SELECT
  id,
  body,
  score
FROM bm25_search('default.public.docs', 'body', 'error E1234 after upgrade')
WHERE
  false OR NOT true
ORDER BY
  score DESC,
  id ASC
LIMIT 10