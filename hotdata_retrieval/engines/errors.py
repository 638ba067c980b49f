"""The error every engine raises when it rejects or fails a statement.

It lives apart from any one engine so that code handling it needs neither engine's
dependencies: the local engine needs DataFusion and tantivy, the Hotdata engine needs the
Hotdata client, and ``except EngineError`` should work with either installed alone.
"""

from __future__ import annotations

from hotdata_retrieval.errors import EngineError as EngineError
