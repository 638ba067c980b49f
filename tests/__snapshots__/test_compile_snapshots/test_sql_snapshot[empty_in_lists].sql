SELECT
  id,
  body,
  score
FROM bm25_search('default.public.docs', 'body', 'error E1234 after upgrade')
WHERE
  FALSE OR NOT TRUE
ORDER BY
  score DESC,
  id ASC
LIMIT 10