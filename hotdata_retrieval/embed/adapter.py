"""Turn any LangChain-style embeddings object into an :class:`Embedder`."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from hotdata_retrieval.embed.errors import EmbeddingInputError, EmbeddingOutputError
from hotdata_retrieval.embed.protocol import (
    AsyncEmbeddingsMixin,
    TextEmbeddings,
    check_vectors,
    validate_query,
    validate_texts,
)


class EmbeddingsAdapter(AsyncEmbeddingsMixin):
    """An object with ``embed_documents`` and ``embed_query`` plus a ``name`` and ``dimensions``.

    Every call's inputs are validated and its vectors checked (count, length, no NaN or
    infinity) before they are returned. Build one with :func:`as_embedder`.
    """

    def __init__(self, embeddings: TextEmbeddings, *, name: str, dimensions: int | None) -> None:
        self._embeddings = embeddings
        self._name = name
        self._dimensions = dimensions
        self._lock = threading.Lock()

    @property
    def wrapped(self) -> TextEmbeddings:
        """The wrapped object."""
        return self._embeddings

    @property
    def name(self) -> str:
        """The name given to :func:`as_embedder`."""
        return self._name

    @property
    def dimensions(self) -> int:
        """The given vector length, or the length of the vector of a probe query."""
        with self._lock:
            if self._dimensions is None:
                probe = self._embeddings.embed_query("dimensions probe")
                if len(probe) < 1:
                    raise EmbeddingOutputError(
                        f"embedder {self._name!r} returned an empty vector", embedder=self._name
                    )
                self._dimensions = len(probe)
            return self._dimensions

    def __repr__(self) -> str:
        return f"as_embedder({self._embeddings!r}, name={self._name!r})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """The wrapped ``embed_documents``, checked."""
        items = validate_texts(texts)
        if not items:
            return []
        vectors = self._embeddings.embed_documents(items)
        check_vectors(vectors, count=len(items), dimensions=self.dimensions, embedder=self._name)
        return [list(vector) for vector in vectors]

    def embed_query(self, text: str) -> list[float]:
        """The wrapped ``embed_query``, checked."""
        vector = self._embeddings.embed_query(validate_query(text))
        check_vectors([vector], count=1, dimensions=self.dimensions, embedder=self._name)
        return list(vector)


def as_embedder(
    embeddings: TextEmbeddings, *, name: str, dimensions: int | None = None
) -> EmbeddingsAdapter:
    """Wrap an object with LangChain's two methods (e.g. any ``langchain`` ``Embeddings``).

    Args:
        embeddings: the object; it must have ``embed_documents`` and ``embed_query``.
        name: a stable identifier of its model and settings, stored with the vectors.
        dimensions: its vector length; if omitted, found by embedding one probe query
            when first needed (``isinstance(x, Embedder)`` reads it on Python < 3.12).

    Raises:
        EmbeddingInputError: ``embeddings`` lacks one of the two methods, ``name`` is empty,
            or ``dimensions`` is not an int >= 1.

    >>> from hotdata_retrieval.embed import HashingEmbedder
    >>> wrapped = as_embedder(HashingEmbedder(dimensions=16), name="hashing test")
    >>> wrapped.dimensions, len(wrapped.embed_documents(["a", "b"]))
    (16, 2)
    """
    if not isinstance(embeddings, TextEmbeddings):
        raise EmbeddingInputError(
            f"{type(embeddings).__name__} has no embed_documents and embed_query methods",
            value=embeddings,
        )
    if not isinstance(name, str) or not name.strip():
        raise EmbeddingInputError(f"name must be a non-empty str, got {name!r}", value=name)
    if dimensions is not None and (
        isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
    ):
        raise EmbeddingInputError(
            f"dimensions must be an int >= 1, got {dimensions!r}", value=dimensions
        )
    return EmbeddingsAdapter(embeddings, name=name, dimensions=dimensions)
