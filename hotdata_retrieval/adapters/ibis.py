"""Plans as ibis table expressions. Needs ``ibis-framework`` (``pip install
'hotdata-retrieval[ibis]'``).

:func:`to_ibis` turns any plan — a BM25 search, a nearest-neighbour or engine-embedded
semantic search, a fusion — into an ibis table expression over the table it searches: the
plan's compiled statement as an SQL view of that table, with the plan's ordering and bound
applied again at the outermost level, so a caller that renames, selects or wraps the
expression keeps the ranking (a sort inside a subquery may be dropped by an engine; the
outermost one may not). A filtered ibis table is accepted where its filter reads as a plan
filter: it is moved into the plan, so it applies inside every branch, before the bound.

>>> import ibis
>>> from hotdata_retrieval.plan import NearestNeighborSearch, SearchPlan
>>> items = ibis.table({"id": "int64", "name": "string", "embedding": "array<float32>"},
...                    name="items")
>>> plan = SearchPlan(source=NearestNeighborSearch(table="items", column="embedding",
...                   query_vector=[0.1, 0.2], result_name="distance"), columns=["id", "name"],
...                   limit=5)
>>> expression = to_ibis(items.filter(items.name != "x"), plan)
>>> expression.columns
('id', 'name', 'distance')
>>> print(ibis.to_sql(expression, dialect="postgres"))  # doctest: +NORMALIZE_WHITESPACE
SELECT * FROM ( SELECT "id", "name", COSINE_DISTANCE("embedding", ARRAY[0.1, 0.2]) AS
"distance" FROM "default"."public"."items" WHERE "name" <> 'x' ORDER BY "distance" ASC LIMIT
5 ) AS "t1" ORDER BY "t1"."distance" ASC LIMIT 5
"""

from __future__ import annotations

from typing import Any

import attrs

try:
    import ibis
    import ibis.expr.operations as ops
    import ibis.expr.types as ir
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the ibis adapter needs ibis-framework: pip install 'hotdata-retrieval[ibis]'"
    ) from error

from sqlglot import exp, parse_one

from hotdata_retrieval.compile import compile_plan, get_dialect
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import And, Predicate
from hotdata_retrieval.plan.names import fold_identifier
from hotdata_retrieval.plan.search import SearchPlan, debug_columns


def _base_and_filter(table: ir.Table) -> tuple[ir.Table, Predicate | None]:
    """The table under ``table``'s filters, and those filters as one predicate."""
    node = table.op()
    filtered = False
    while isinstance(node, ops.Filter):
        filtered = True
        node = node.parent
    if not isinstance(node, (ops.UnboundTable, ops.DatabaseTable)):
        raise PlanError(
            f"to_ibis takes a table or a filtered table, got a {type(node).__name__} "
            "expression: search the table, then select, join or aggregate the result",
            field="table",
            value=type(node).__name__,
        )
    base = node.to_expr()
    if not filtered:
        return base, None
    statement = parse_one(ibis.to_sql(table, dialect="postgres"), read="postgres")
    where = statement.args.get("where")
    source = statement.args.get("from_") or statement.args.get("from")
    if where is None or source is None or not isinstance(source.this, exp.Table):
        raise PlanError(
            "to_ibis could not read the table's filter as one WHERE over the table",
            field="table",
        )
    condition = where.this.copy()
    for column in condition.find_all(exp.Column):
        column.set("table", None)
    return base, parse_filter(condition.sql(dialect="postgres"))


def _written_name(table: ir.Table) -> list[str]:
    """The ibis table's name as it is written: its catalog and database where it has them,
    then its name, lower-cased as the engine stores names."""
    node = table.op()
    namespace = getattr(node, "namespace", None)
    parts = [getattr(namespace, "catalog", None), getattr(namespace, "database", None)]
    return [str(part).lower() for part in parts if part] + [node.name.lower()]


def _spellings(plan: SearchPlan, table: ir.Table) -> dict[str, str]:
    """Each of ``table``'s columns the plan reads, as the plan writes it (lower-cased and
    composed: :func:`~hotdata_retrieval.plan.names.fold_identifier`) to as the ibis table
    spells it (``body`` to ``Body``).

    Raises:
        PlanError: two of the table's columns differ only in case and the plan reads one.
    """
    spelled: dict[str, list[str]] = {}
    for column in table.columns:
        spelled.setdefault(fold_identifier(column), []).append(column)
    read = set(plan.projection) | {
        name for names in plan.table_columns().values() for name in names
    }
    for name in sorted(read):
        if len(spelled.get(name, [])) > 1:
            raise PlanError(
                f"the ibis table {table.get_name()!r} has columns that differ only in case "
                f"({', '.join(repr(one) for one in spelled[name])}); the plan's {name!r} could "
                "be either: rename one",
                field="columns",
                value=name,
            )
    return {name: spellings[0] for name, spellings in spelled.items() if len(spellings) == 1}


def _spell_as_ibis(tree: exp.Select, plan: SearchPlan, table: ir.Table) -> exp.Select:
    """``tree`` with the searched table and its columns written as the ibis table spells
    them, as ibis writes them (what hotdata-ibis sends): names that are already lower case
    leave the tree as it is. The table functions' text arguments keep the plan's names."""
    columns = {
        written: spelled
        for written, spelled in _spellings(plan, table).items()
        if written != spelled
    }
    node = table.op()
    namespace = getattr(node, "namespace", None)
    parts = {
        "this": node.name,
        "db": getattr(namespace, "database", None),
        "catalog": getattr(namespace, "catalog", None),
    }
    tables = {name.parts for name in plan.tables}
    renamed = {key: str(value) for key, value in parts.items() if value and value != value.lower()}
    if not columns and not renamed:
        return tree
    tree = tree.copy()
    for reference in tree.find_all(exp.Table):
        written = (reference.catalog, reference.db, reference.name)
        if written in tables:
            for key, spelled in renamed.items():
                reference.set(key, exp.to_identifier(spelled))
    for identifier in tree.find_all(exp.Identifier):
        if isinstance(identifier.parent, exp.Table) and identifier.arg_key in parts:
            continue
        column = columns.get(identifier.this)
        if column is not None:
            identifier.set("this", column)
    return tree


def _output_types(plan: SearchPlan, table: ir.Table, names: list[str]) -> dict[str, Any]:
    schema = table.schema()
    ranks = {
        debug_columns(name, branch)[0] for name, branch in zip(plan.branch_names, plan.branches)
    }
    types: dict[str, Any] = {}
    for name in names:
        if name in schema:
            types[name] = schema[name]
        else:
            types[name] = "int64" if name in ranks else "float64"
    return types


def to_ibis(table: Any, plan: SearchPlan, *, dialect: str = "hotdata") -> ir.Table:
    """``plan`` as an ibis table expression over ``table`` (module docstring).

    Args:
        table: the ibis table the plan searches (a table of a connection or an unbound
            ``ibis.table``), filtered or not; or an ibis connection, whose ``table(name)``
            gives it.
        plan: the search; it names one table, ``table``'s.
        dialect: the dialect the statement is compiled for (default ``hotdata``); ibis reads
            it in its own target dialect when it compiles the expression.

    Returns:
        An ibis table expression with the plan's result columns (the projection, then the
        score or distance columns), ordered and bounded as the plan is.

    Raises:
        PlanError: ``table`` is another table than the plan's, an expression other than a
            table or a filtered table, or filtered by something a plan filter cannot express
            (naming it); a plan whose ranking column it does not return.
        UnsupportedOnDialectError: the plan needs something ``dialect`` cannot express.
    """
    if not isinstance(plan, SearchPlan):
        raise PlanError(
            f"to_ibis takes a SearchPlan, got {type(plan).__name__}",
            field="plan",
            value=type(plan).__name__,
        )
    tables = list(plan.tables)
    if not isinstance(table, ir.Table):
        if not callable(getattr(table, "table", None)):
            raise PlanError(
                f"to_ibis takes an ibis table or connection, got {type(table).__name__}",
                field="table",
                value=type(table).__name__,
            )
        table = table.table(tables[0].name)
        if not isinstance(table, ir.Table):
            raise PlanError(
                f"the connection's table() gave a {type(table).__name__}, not an ibis table",
                field="table",
            )
    base, extra = _base_and_filter(table)
    node = base.op()
    written = _written_name(base)
    if not any(
        [name.catalog, name.schema, name.name][-len(written) :] == written for name in tables
    ):
        raise PlanError(
            f"the ibis table {'.'.join(written)!r} is not the table the plan searches "
            f"({', '.join(str(name) for name in tables)})",
            field="table",
            value=node.name,
        )
    missing = sorted(set(plan.projection) - {column.lower() for column in base.columns})
    if missing:
        raise PlanError(
            f"the ibis table {node.name!r} has no column {missing[0]!r} the plan returns",
            field="columns",
            value=missing[0],
        )
    if extra is not None:
        combined = extra if plan.filter is None else And(operands=(plan.filter, extra))
        plan = attrs.evolve(plan, filter=combined)
    tree = _spell_as_ibis(compile_plan(plan, dialect), plan, base)
    names = [projection.alias_or_name for projection in tree.expressions]
    underlying = {
        (projection.this.name if isinstance(projection, exp.Alias) else projection.name): (
            projection.alias_or_name
        )
        for projection in tree.expressions
    }
    order = []
    for ordered in tree.args["order"].expressions:
        name = ordered.this.name
        output = name if name in names else underlying.get(name)
        if output is None:
            raise PlanError(
                f"to_ibis needs the column the plan is ordered by ({name}) in its result",
                field="score_name",
                value=name,
            )
        order.append(ibis.desc(output) if ordered.args.get("desc") else ibis.asc(output))
    view = ops.SQLStringView(
        parent=base.op(),
        query=get_dialect(dialect).sqlglot_dialect().generate(tree, identify=True),
        schema=ibis.schema(_output_types(plan, base, names)),
    ).to_expr()
    return view.order_by(order).limit(plan.limit)


def semantic_search(
    table: ir.Table,
    column: str | ir.Column,
    query_vector: Any,
    k: int,
    *,
    metric: str = "cosine",
    distance_name: str = "distance",
    dialect: str = "hotdata",
) -> ir.Table:
    """The ``k`` rows of ``table`` nearest ``query_vector`` as an ibis expression, nearest
    first (hotdata-ibis's ``semantic_search``, as one plan through :func:`to_ibis`).

    Args:
        table: the ibis table (filtered or not).
        column: the vector column, or, for a text query, the text column of an
            engine-embedded index.
        query_vector: a list of numbers (a nearest-neighbour search under ``metric``), or
            text (the engine embeds it: ``vector_distance(column, text)``, the index's
            metric).
        k: top-k.
        metric: ``cosine`` (default), ``l2`` or ``dot``, for a vector query.
        distance_name: the distance column's name.
        dialect: as :func:`to_ibis`.

    Returns:
        Every column but ``column`` (for a text query, every column but the array columns),
        then ``distance_name``.

    Raises:
        PlanError: a bad column, vector, ``k``, metric or name, or a filter a plan filter
            cannot express.
    """
    from hotdata_retrieval.plan.search import NearestNeighborSearch, VectorSearch

    base, _ = _base_and_filter(table)
    if isinstance(column, ir.Column):
        name = column.get_name()
    elif isinstance(column, str):
        name = column
    else:
        raise PlanError(
            f"column must be a column name or an ibis column, got {type(column).__name__}",
            field="column",
            value=type(column).__name__,
        )
    schema = base.schema()
    if name not in schema:
        raise PlanError(
            f"the ibis table {base.get_name()!r} has no column {name!r}; its columns: "
            f"{', '.join(base.columns)}",
            field="column",
            value=name,
        )
    source: NearestNeighborSearch | VectorSearch
    if isinstance(query_vector, str):
        columns = [other for other in base.columns if not schema[other].is_array()]
        source = VectorSearch(
            table=".".join(_written_name(base)),
            column=name,
            query_text=query_vector,
            scalar=True,
            result_name=distance_name,
        )
    else:
        columns = [other for other in base.columns if other != name]
        source = NearestNeighborSearch(
            table=".".join(_written_name(base)),
            column=name,
            query_vector=query_vector,
            metric=metric,
            result_name=distance_name,
        )
    plan = SearchPlan(
        source=source,
        columns=columns,
        limit=k,
        key_column="id" if any(column.lower() == "id" for column in columns) else None,
    )
    return to_ibis(table, plan, dialect=dialect)
