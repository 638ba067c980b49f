"""The words the Hotdata dialect always quotes when they name a table, schema or column.

An identifier is quoted when any parser the compiled SQL meets would read it as a keyword
rather than a name: the engine's (DataFusion's sqlparser), the product's own linter (sqlglot's
Postgres parser) and PostgreSQL itself. Quoting a lower-case name changes nothing for any of
them (``"top"`` and ``top`` name the same column), so the list errs on the side of quoting.

Sources:

- every PostgreSQL keyword that is not *unreserved* — reserved, column-name and
  type/function-name keywords (PostgreSQL documentation, Appendix C "SQL Key Words"; the same
  lists as ``pglast.keywords``, which the tests compare with);
- words DataFusion 55's parser refuses as a bare column name in the compiled shapes, or that
  sqlglot's Postgres parser reads as the start of a statement or an operator: found by
  compiling a plan over a column of each name in sqlparser-rs's ``ALL_KEYWORDS``, PostgreSQL's
  keywords and sqlglot's Postgres tokenizer keywords, and running, linting and parsing it
  (``tests/test_keyword_identifiers.py`` repeats that sweep);
- the words DataFusion reserves as a table or column alias (sqlparser-rs
  ``RESERVED_FOR_TABLE_ALIAS``) that PostgreSQL does not: ``anti``, ``cluster``,
  ``distribute``, ``over``, ``partition``, ``pivot``, ``qualify``, ``semi``, ``sort``,
  ``struct``, ``unpivot``.
"""

from __future__ import annotations

_POSTGRES_NOT_UNRESERVED = """
all analyse analyze and any array as asc asymmetric authorization between bigint binary bit
boolean both case cast char character check coalesce collate collation column concurrently
constraint create cross current_catalog current_date current_role current_schema current_time
current_timestamp current_user dec decimal default deferrable desc distinct do else end except
exists extract false fetch float for foreign freeze from full grant greatest group grouping having
ilike in initially inner inout int integer intersect interval into is isnull join json
json_array json_arrayagg json_exists json_object json_objectagg json_query json_scalar
json_serialize json_table json_value lateral leading least left like limit localtime
localtimestamp merge_action national natural nchar none normalize not notnull null nullif
numeric offset on only or order out outer overlaps overlay placing position precision primary
real references returning right row select session_user setof similar smallint some substring
symmetric system_user table tablesample then time timestamp to trailing treat trim true union
unique user using values varchar variadic verbose when where window with xmlattributes
xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot xmlserialize
xmltable
"""

_FOUND_BY_THE_SWEEP = """
alter between connect_by_root drop exclude explain glob if insert minus partitioned_by regexp
revoke rlike rollback top uncache values view xor
"""

_DATAFUSION_ALIAS_RESERVED = """
anti cluster distribute over partition pivot qualify semi sort struct unpivot
"""

QUOTED_WORDS: frozenset[str] = frozenset(
    (_POSTGRES_NOT_UNRESERVED + _FOUND_BY_THE_SWEEP + _DATAFUSION_ALIAS_RESERVED).split()
)
"""Lower-case words quoted wherever they name a table, schema or column."""
