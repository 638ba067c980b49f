SELECT
  "id",
  "_distance"
FROM (
  SELECT
    *
  FROM (
    SELECT
      "id",
      "_distance"
    FROM (
      SELECT
        "id",
        NULLIF("docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"), CAST('NaN' AS DOUBLE PRECISION)) AS "_distance",
        "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
      FROM "public"."docs"
      WHERE
        "lang" = 'en'
      ORDER BY
        "docs"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
      FETCH FIRST 5 ROWS WITH TIES
    ) AS "nearest"
    ORDER BY
      "_order" ASC,
      "id" ASC
    LIMIT 5
  ) AS "union_member_1"
  UNION ALL
  SELECT
    *
  FROM (
    SELECT
      "id",
      "_distance"
    FROM (
      SELECT
        "id",
        NULLIF(
          "docs_archive"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector"),
          CAST('NaN' AS DOUBLE PRECISION)
        ) AS "_distance",
        "docs_archive"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") AS "_order"
      FROM "public"."docs_archive"
      WHERE
        "lang" = 'en'
      ORDER BY
        "docs_archive"."embedding" OPERATOR(public.<=>) CAST('[0.12, -0.5, 0.33, 1e-05]' AS "public"."vector") ASC
      FETCH FIRST 5 ROWS WITH TIES
    ) AS "nearest"
    ORDER BY
      "_order" ASC,
      "id" ASC
    LIMIT 5
  ) AS "union_member_2"
) AS "search_union"
ORDER BY
  "_distance" ASC,
  "id" ASC
LIMIT 5