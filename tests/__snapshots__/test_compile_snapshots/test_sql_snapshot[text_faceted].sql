WITH facet_candidates AS (
  SELECT
    id,
    body,
    lang,
    doc_id,
    score
  FROM bm25_search('default.public.docs', 'body', 'error E1234 after upgrade', 200)
  ORDER BY
    score DESC,
    id ASC
  LIMIT 200
), facet_counts AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY score DESC, id ASC) AS _rank_position,
    COUNT(*) OVER (PARTITION BY lang) AS _facet_count_1,
    ROW_NUMBER() OVER (PARTITION BY lang ORDER BY score DESC, id ASC) AS _facet_row_1,
    COUNT(*) OVER (PARTITION BY doc_id) AS _facet_count_2,
    ROW_NUMBER() OVER (PARTITION BY doc_id ORDER BY score DESC, id ASC) AS _facet_row_2
  FROM facet_candidates
)
SELECT
  id,
  body,
  score,
  lang,
  doc_id,
  _rank_position,
  _facet_count_1,
  _facet_row_1,
  _facet_count_2,
  _facet_row_2
FROM facet_counts
WHERE
  (_rank_position > 2 AND _rank_position <= 7)
  OR (_facet_row_1 = 1 AND lang IS NOT NULL)
  OR (_facet_row_2 = 1 AND doc_id IS NOT NULL)
ORDER BY
  _rank_position ASC