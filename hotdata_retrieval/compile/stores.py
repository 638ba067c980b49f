"""What the dialects of SQL stores share: names without a catalog, exact nearest-neighbour
branches with a key tie-break.

SQLite and DuckDB (and PostgreSQL's schemas) name a table ``<schema>.<table>``: the plan's
three-part ``catalog.schema.table`` loses its catalog (only the plan's ``default`` catalog
exists on such a store) and its default schema ``public`` becomes the store's own default
schema (``main`` on SQLite and DuckDB). :class:`StoreCompiler` does that rewrite after the
plan compiles, and compiles a nearest branch as an exact scan: ordered by distance *then key*
(with no vector index in the way, the tie-break costs nothing and makes pages of tied rows
slices of one order), with the vector column qualified by its table so no other column of
the statement can shadow it.
"""

from __future__ import annotations

from typing import ClassVar

from sqlglot import exp

from hotdata_retrieval.compile.compiler import (
    BranchRequest,
    CompiledBranch,
    PlanCompiler,
    column,
    identifier,
    searched_table,
    table_reference,
)
from hotdata_retrieval.compile.nodes import UnsupportedOnDialectError, VectorDistance
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan


def store_table(table: exp.Table, default_schema: str) -> exp.Table:
    """``catalog.schema.table`` as a store without catalogs names it: ``<schema>.<table>``,
    the plan's ``public`` schema mapped to ``default_schema``; the alias kept."""
    schema = table.db
    return exp.Table(
        this=identifier(table.name),
        db=identifier(default_schema if schema in ("", "public") else schema),
        alias=table.args.get("alias"),
    )


class StoreCompiler(PlanCompiler):
    """A compiler for a store whose tables are ``<schema>.<table>`` and whose nearest
    branches are exact scans (module docstring)."""

    default_schema: ClassVar[str] = "main"
    """The store's schema for the plan's ``public``."""

    def schema_of(self, table: TableName) -> str:
        """The store's schema of ``table``."""
        return self.default_schema if table.schema == "public" else table.schema

    def compile(self, plan: SearchPlan) -> exp.Select:
        """The plan as one ``SELECT``, tables named without a catalog.

        Raises:
            UnsupportedOnDialectError: a table in a catalog other than ``default``, or what
                the dialect cannot express.
        """
        for name in plan.tables:
            if name.catalog != "default":
                raise UnsupportedOnDialectError(
                    f"the catalog {name.catalog!r} (tables are <schema>.<table> here)",
                    self.profile.name,
                )
        tree = super().compile(plan)
        for table in list(tree.find_all(exp.Table)):
            if table.args.get("catalog") is not None:
                table.replace(store_table(table, self.default_schema))
        return tree

    def visit_nearest_neighbor_search(
        self, branch: NearestNeighborSearch, request: BranchRequest
    ) -> CompiledBranch:
        """``SELECT ..., <distance> AS _distance FROM <table> [WHERE] ORDER BY _distance ASC
        NULLS LAST, key ASC LIMIT n`` (an exact scan; a row without a distance sorts last
        and is no candidate)."""
        distance = self.search(
            VectorDistance(
                this=column(branch.column, searched_table(branch).name),
                expression=self.binder.vector(branch, "query_vector"),
                metric=branch.metric.value,
            )
        )
        select = self.branch_select(
            request,
            raw=exp.Alias(this=distance, alias=identifier(branch.raw_score_column)),
            source=table_reference(searched_table(branch)),
            raw_column=branch.raw_score_column,
            higher_is_better=branch.higher_is_better,
            tie_break=True,
            bounded=True,
        )
        return CompiledBranch(select=select, nullable=True)
