SELECT
  id,
  body,
  score
FROM bm25_search('default.public.docs', 'body', 'error E1234 after upgrade')
WHERE
  lang = 'en'
  AND (year >= 2020 OR tag IN ('billing', 'login'))
  AND deleted_at IS NULL
  AND NOT status IN ('spam')
ORDER BY
  score DESC,
  id ASC
LIMIT 10