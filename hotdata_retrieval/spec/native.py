"""The ``hotdata-native`` dialect: the Hotdata dialect plus a native ``hybrid_search``.

The profile lives with the other dialects, in :mod:`hotdata_retrieval.compile.hotdata`, and is
registered whenever :mod:`hotdata_retrieval.compile` is imported; this module re-exports it for
the conformance kit and its callers.
"""

from __future__ import annotations

from hotdata_retrieval.compile.hotdata import HOTDATA_NATIVE as HOTDATA_NATIVE
from hotdata_retrieval.compile.hotdata import HYBRID_SEARCH_FUNCTION as HYBRID_SEARCH_FUNCTION
from hotdata_retrieval.compile.hotdata import native_profile as native_profile
