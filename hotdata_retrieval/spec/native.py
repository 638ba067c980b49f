"""The ``hotdata-native`` dialect: the Hotdata dialect plus a native ``hybrid_search``.

The Hotdata engine has no ``hybrid_search`` today (engine contract §1.6), so the default
``hotdata`` dialect never emits it. This profile is the same dialect with the capability
declared, for engines that implement ``docs/spec/hybrid_search.md`` (the local engine does):
a fusion of one text branch and one vector branch compiles to one ``hybrid_search(...)``
call; every other plan compiles exactly as for ``hotdata``.
"""

from __future__ import annotations

import attrs

from hotdata_retrieval.compile import HOTDATA, get_dialect, known_dialects, register_dialect
from hotdata_retrieval.compile.dialect import DialectProfile

__all__ = ["HOTDATA_NATIVE", "HYBRID_SEARCH_FUNCTION", "native_profile"]

HYBRID_SEARCH_FUNCTION = "hybrid_search"
"""The table function's name in the spec."""

HOTDATA_NATIVE = register_dialect(
    attrs.evolve(HOTDATA, name="hotdata-native", native_hybrid_search=HYBRID_SEARCH_FUNCTION)
)
"""``hotdata`` with ``native_hybrid_search = "hybrid_search"``."""


def native_profile(function: str = HYBRID_SEARCH_FUNCTION) -> DialectProfile:
    """The Hotdata dialect with a native fused-search function called ``function``.

    >>> native_profile().name
    'hotdata-native'
    >>> native_profile("fused_search").native_hybrid_search
    'fused_search'
    """
    if function == HYBRID_SEARCH_FUNCTION:
        return HOTDATA_NATIVE
    name = f"hotdata-native-{function}"
    if name in known_dialects():
        return get_dialect(name)
    return register_dialect(attrs.evolve(HOTDATA, name=name, native_hybrid_search=function))
