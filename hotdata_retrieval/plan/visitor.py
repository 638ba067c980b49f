"""Dispatch on plan nodes by name: one ``visit_<name>`` method per node a visitor interprets.

Every plan node class — each search branch, each fusion method, each filter node — carries a
stable ``visit_name`` (a class attribute such as ``"bm25_search"`` or ``"in_list"``).
:meth:`NodeVisitor.visit` calls the visitor's ``visit_<visit_name>`` method, so an
interpretation of the plan (SQL, the JSON document, a row mask, ...) is one class with one
method per node, and a new node is one new method on each interpretation that supports it,
never a branch added to an ``isinstance`` chain. A subclass overrides single methods (a
dialect's compiler overrides how one branch kind compiles, say). A node the visitor has no
method for goes to :meth:`NodeVisitor.generic_visit`, which raises unless overridden.

This module is pure Python: it knows nothing of sqlglot, Arrow or any engine.

>>> class Sizes(NodeVisitor):
...     def visit_leaf(self, node):
...         return 1
...     def visit_pair(self, node):
...         return self.visit(node.left) + self.visit(node.right)
>>> class Leaf:
...     visit_name = "leaf"
>>> class Pair:
...     visit_name = "pair"
...     def __init__(self, left, right):
...         self.left, self.right = left, right
>>> Sizes().visit(Pair(Leaf(), Pair(Leaf(), Leaf())))
3
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from hotdata_retrieval.errors import HotdataRetrievalError

__all__ = ["NodeVisitor", "UnvisitableNodeError", "visit_name_of"]


class UnvisitableNodeError(HotdataRetrievalError, TypeError):
    """A visitor has no ``visit_<name>`` method for a node (or the node has no visit name).

    Attributes:
        visitor: the visitor's class name.
        node: the node.
    """

    def __init__(self, visitor: str, node: Any) -> None:
        name = visit_name_of(type(node))
        method = f"visit_{name}" if name is not None else "a visit method"
        super().__init__(f"{visitor} has no {method} for {type(node).__name__} nodes")
        self.visitor = visitor
        self.node = node


def visit_name_of(node_type: type) -> str | None:
    """The ``visit_name`` of a node class, or ``None`` if it has none.

    >>> class Leaf:
    ...     visit_name = "leaf"
    >>> visit_name_of(Leaf), visit_name_of(int)
    ('leaf', None)
    """
    name = getattr(node_type, "visit_name", None)
    return name if isinstance(name, str) else None


class NodeVisitor:
    """Calls ``self.visit_<node.visit_name>(node, *args)`` for each node it visits.

    The method a node class resolves to is looked up once per visitor class and cached, so
    dispatch costs one dictionary lookup. Methods take the node and whatever extra arguments
    the caller of :meth:`visit` passes; what they return is the visitor's business (typed
    visitors such as :class:`~hotdata_retrieval.plan.filters.PredicateVisitor` declare it).
    """

    _visit_methods: ClassVar[dict[type, Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._visit_methods = {}  # each class resolves its own methods (overrides differ)

    def visit(self, node: Any, *args: Any) -> Any:
        """Dispatch ``node`` to its ``visit_<name>`` method.

        Raises:
            UnvisitableNodeError: from :meth:`generic_visit`, when there is no such method.
        """
        method = self._visit_methods.get(type(node))
        if method is None:
            method = self._resolve(type(node))
        return method(self, node, *args)

    @classmethod
    def _resolve(cls, node_type: type) -> Callable[..., Any]:
        name = visit_name_of(node_type)
        method = getattr(cls, f"visit_{name}", None) if name is not None else None
        if not callable(method):
            method = cls.generic_visit
        cls._visit_methods[node_type] = method
        return method

    @classmethod
    def visits(cls, node_type: type) -> bool:
        """Whether this visitor has a ``visit_<name>`` method for ``node_type``."""
        name = visit_name_of(node_type)
        return name is not None and callable(getattr(cls, f"visit_{name}", None))

    def generic_visit(self, node: Any, *args: Any) -> Any:
        """Called for a node with no ``visit_<name>`` method; raises by default.

        Raises:
            UnvisitableNodeError: always (subclasses may raise their own typed error).
        """
        raise UnvisitableNodeError(type(self).__name__, node)
