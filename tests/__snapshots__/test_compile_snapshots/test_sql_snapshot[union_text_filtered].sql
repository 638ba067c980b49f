SELECT
  id,
  body,
  score
FROM (
  SELECT
    *
  FROM (
    SELECT
      id,
      body,
      score
    FROM bm25_search('default.public.docs', 'body', 'error E1234')
    WHERE
      lang = 'en'
    ORDER BY
      score DESC,
      id ASC
    LIMIT 5
  ) AS union_member_1
  UNION ALL
  SELECT
    *
  FROM (
    SELECT
      id,
      body,
      score
    FROM bm25_search('default.public.docs_archive', 'body', 'error E1234')
    WHERE
      lang = 'en'
    ORDER BY
      score DESC,
      id ASC
    LIMIT 5
  ) AS union_member_2
) AS search_union
ORDER BY
  score DESC,
  id ASC
LIMIT 5