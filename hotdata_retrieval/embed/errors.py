"""The typed errors of :mod:`hotdata_retrieval.embed`.

All of them derive from :class:`~hotdata_retrieval.errors.HotdataRetrievalError` through
:class:`EmbeddingError`, so the library's one ``except`` clause still catches them.
"""

from __future__ import annotations

from hotdata_retrieval.errors import EmbedderUnavailableError as EmbedderUnavailableError
from hotdata_retrieval.errors import EmbeddingError as EmbeddingError
from hotdata_retrieval.errors import EmbeddingInputError as EmbeddingInputError
from hotdata_retrieval.errors import EmbeddingOutputError as EmbeddingOutputError
