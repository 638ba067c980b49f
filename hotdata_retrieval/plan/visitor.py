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

from typing import Any

from hotdata_retrieval.errors import UnvisitableNodeError as UnvisitableNodeError


def visit_name_of(node_type: type) -> str | None:
    """The ``visit_name`` of a node class, or ``None`` if it has none.

    >>> class Leaf:
    ...     visit_name = "leaf"
    >>> visit_name_of(Leaf), visit_name_of(int)
    ('leaf', None)
    """
    name = getattr(node_type, "visit_name", None)
    return name if isinstance(name, str) else None


_METHOD_NAMES: dict[type, str | None] = {}
"""Per node class, the name of the method that visits it (``visit_<visit_name>``; ``None``: the
class has no visit name). Names, not methods: a visitor class, or an instance, may gain or
replace a ``visit_<name>`` method after its first dispatch, and the next dispatch uses it."""


def _method_name(node_type: type) -> str | None:
    try:
        return _METHOD_NAMES[node_type]
    except KeyError:
        name = visit_name_of(node_type)
        method = _METHOD_NAMES[node_type] = f"visit_{name}" if name is not None else None
        return method


class NodeVisitor:
    """Calls ``self.visit_<node.visit_name>(node, *args)`` for each node it visits.

    The method's name is worked out once per node class; the method itself is looked up on the
    visitor at each dispatch (Python caches attribute lookups per class), so a method added to
    a visitor class, or replaced (say by a test's monkeypatch), after a first dispatch is the one
    called next. Methods take the node and whatever extra arguments the caller of :meth:`visit`
    passes; what they return is the visitor's business (typed visitors such as
    :class:`~hotdata_retrieval.plan.filters.PredicateVisitor` declare it).
    """

    def visit(self, node: Any, *args: Any) -> Any:
        """Dispatch ``node`` to its ``visit_<name>`` method.

        Raises:
            UnvisitableNodeError: from :meth:`generic_visit`, when there is no such method.
        """
        name = _method_name(type(node))
        method = getattr(self, name, None) if name is not None else None
        if not callable(method):
            return self.generic_visit(node, *args)
        return method(node, *args)

    @classmethod
    def visits(cls, node_type: type) -> bool:
        """Whether this visitor has a ``visit_<name>`` method for ``node_type``."""
        name = _method_name(node_type)
        return name is not None and callable(getattr(cls, name, None))

    def generic_visit(self, node: Any, *args: Any) -> Any:
        """Called for a node with no ``visit_<name>`` method; raises by default.

        Raises:
            UnvisitableNodeError: always (subclasses may raise their own typed error).
        """
        raise self.unvisitable(node)

    def unvisitable(self, node: Any) -> UnvisitableNodeError:
        """The error saying this visitor has no ``visit_<name>`` method for ``node`` (naming
        the method from the node's ``visit_name``), for :meth:`generic_visit` and its
        overrides to raise."""
        return UnvisitableNodeError(type(self).__name__, node, method=_method_name(type(node)))
