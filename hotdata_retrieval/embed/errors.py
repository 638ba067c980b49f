"""The typed errors of :mod:`hotdata_retrieval.embed`.

All of them derive from :class:`~hotdata_retrieval.errors.HotdataRetrievalError` through
:class:`EmbeddingError`, so the library's one ``except`` clause still catches them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hotdata_retrieval.errors import HotdataRetrievalError

__all__ = [
    "EmbeddingError",
    "EmbedderUnavailableError",
    "EmbeddingInputError",
    "EmbeddingOutputError",
]


class EmbeddingError(HotdataRetrievalError):
    """Base class of the errors raised while embedding text."""


class EmbedderUnavailableError(EmbeddingError, RuntimeError):
    """An embedder cannot run here: an optional dependency or a model file is missing or wrong.

    Attributes:
        embedder: which embedder was asked for, e.g. ``"all-MiniLM-L6-v2 (ONNX int8)"``.
        missing: what is missing or wrong (module names, files), in the order found.
        install_hint: the command that installs what is missing.
    """

    def __init__(
        self,
        message: str,
        *,
        embedder: str,
        missing: Sequence[str] = (),
        install_hint: str | None = None,
    ) -> None:
        text = message
        if install_hint:
            text = f"{message}; install it with: {install_hint}"
        super().__init__(text)
        self.embedder = embedder
        self.missing = tuple(missing)
        self.install_hint = install_hint


class EmbeddingInputError(EmbeddingError, TypeError):
    """The texts to embed are not what an embedder takes (a sequence of ``str``).

    Attributes:
        position: 0-based index of the offending item in the sequence, or ``None`` when the
            argument as a whole is wrong (e.g. a bare ``str`` passed where a list is expected).
        value: the offending value, exactly as the caller passed it.
    """

    def __init__(self, message: str, *, position: int | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.position = position
        self.value = value


class EmbeddingOutputError(EmbeddingError, ValueError):
    """An embedder returned vectors that cannot be used: NaN or infinite components, the
    wrong number of vectors, or vectors of the wrong length.

    Attributes:
        embedder: the ``name`` of the embedder that produced them.
        positions: 0-based indices (into the texts of that call) of the offending vectors;
            empty when the problem is the count of vectors.
    """

    def __init__(self, message: str, *, embedder: str, positions: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.embedder = embedder
        self.positions = tuple(positions)
