WITH group_candidates AS (
  SELECT
    id,
    body,
    doc_id,
    score
  FROM bm25_search('default.public.docs', 'body', 'error E1234 after upgrade', 200)
  ORDER BY
    score DESC,
    id ASC
  LIMIT 200
), group_positions AS (
  SELECT
    *,
    ROW_NUMBER() OVER (ORDER BY score DESC, id ASC) AS _rank_position
  FROM group_candidates
  WHERE
    doc_id IS NOT NULL
), group_members AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY doc_id ORDER BY _rank_position ASC) AS _group_row,
    MIN(_rank_position) OVER (PARTITION BY doc_id) AS _group_first
  FROM group_positions
), group_ranks AS (
  SELECT
    *,
    DENSE_RANK() OVER (ORDER BY _group_first ASC) AS _group_rank
  FROM group_members
  WHERE
    _group_row <= 1
)
SELECT
  id,
  body,
  doc_id,
  score
FROM group_ranks
WHERE
  _group_rank <= 5
ORDER BY
  _group_rank ASC,
  _group_row ASC