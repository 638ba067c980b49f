"""The embedder protocol, and the input and output checks every embedder here shares.

An :class:`Embedder` has the two methods of LangChain's ``Embeddings`` interface,
``embed_documents(texts) -> list[list[float]]`` and ``embed_query(text) -> list[float]``, so
it can be handed to code written for LangChain as it is, plus two read-only attributes:

- ``dimensions``: the length of every vector it returns.
- ``name``: a stable identifier of the model *and* of everything that changes its vectors
  (weights, truncation length, pooling). Store it next to the vectors: vectors made under
  one name must only be compared with vectors, and queries, made under the same name.

Any object with those four members is an :class:`Embedder`; no base class is needed. A
LangChain ``Embeddings`` object (two methods, no ``name`` or ``dimensions``) becomes one
through :func:`hotdata_retrieval.embed.as_embedder`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from hotdata_retrieval._words import counted
from hotdata_retrieval.embed.errors import EmbeddingInputError, EmbeddingOutputError


@runtime_checkable
class TextEmbeddings(Protocol):
    """The two methods of LangChain's ``Embeddings`` interface."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a list of documents, one vector per text, in order."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Embed one search query."""
        ...


@runtime_checkable
class Embedder(TextEmbeddings, Protocol):
    """A :class:`TextEmbeddings` that also says how long its vectors are and what made them."""

    @property
    def dimensions(self) -> int:
        """The length of every vector this embedder returns."""
        ...

    @property
    def name(self) -> str:
        """A stable identifier of the model and settings that determine the vectors."""
        ...


class AsyncEmbeddingsMixin:
    """``aembed_documents`` / ``aembed_query``, as LangChain's base class provides them.

    Both run the synchronous method in a worker thread, so an event loop is not blocked
    while a model runs.
    """

    async def aembed_documents(self: TextEmbeddings, texts: list[str]) -> list[list[float]]:
        """Asynchronous :meth:`embed_documents`."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self: TextEmbeddings, text: str) -> list[float]:
        """Asynchronous :meth:`embed_query`."""
        return await asyncio.to_thread(self.embed_query, text)


def is_embeddable(text: object) -> bool:
    """Whether a loader embeds ``text``: a string with at least one character that is not
    whitespace (Unicode whitespace, as :meth:`str.strip` reads it).

    NULL, empty and whitespace-only texts get a NULL vector, on every loader and engine:
    a model still returns a vector for ``""`` (MiniLM returns the embedding of its two
    special tokens), and that vector would sit near every other short text and be found by
    nearest-neighbour search for queries it has nothing to do with.
    """
    return isinstance(text, str) and bool(text.strip())


def validate_texts(texts: Iterable[str]) -> list[str]:
    """Check that ``texts`` is a sequence of ``str`` and return it as a list.

    Raises:
        EmbeddingInputError: ``texts`` is a bare ``str`` or ``bytes`` (which would otherwise
            be embedded one character at a time), is not iterable, or has an item that is
            not a ``str`` (``None`` included); the error names the item's position.

    >>> validate_texts(("a", "b"))
    ['a', 'b']
    >>> validate_texts(["a", None])
    Traceback (most recent call last):
    ...
    hotdata_retrieval.errors.EmbeddingInputError: texts[1] is None, expected a str
    """
    if isinstance(texts, (str, bytes, bytearray)):
        raise EmbeddingInputError(
            f"expected a sequence of str, got a single {type(texts).__name__}; "
            "wrap it in a list, or use embed_query for one text",
            value=texts,
        )
    try:
        items = list(texts)
    except TypeError:
        raise EmbeddingInputError(
            f"expected a sequence of str, got {type(texts).__name__}", value=texts
        ) from None
    for position, item in enumerate(items):
        if not isinstance(item, str):
            what = "None" if item is None else f"a {type(item).__name__}"
            raise EmbeddingInputError(
                f"texts[{position}] is {what}, expected a str", position=position, value=item
            )
    return items


def validate_query(text: str) -> str:
    """Check that ``text`` is a ``str``.

    Raises:
        EmbeddingInputError: it is anything else (``None`` included).
    """
    if not isinstance(text, str):
        what = "None" if text is None else f"a {type(text).__name__}"
        raise EmbeddingInputError(f"the query is {what}, expected a str", value=text)
    return text


def check_vectors(
    vectors: Sequence[Sequence[float]], *, count: int, dimensions: int, embedder: str
) -> None:
    """Check vectors an embedder returned, in pure Python.

    Raises:
        EmbeddingOutputError: not ``count`` vectors, a vector whose length is not
            ``dimensions``, or a NaN or infinite component; the error lists the positions.
    """
    if len(vectors) != count:
        raise EmbeddingOutputError(
            f"embedder {embedder!r} returned {counted(len(vectors), 'vector')} for "
            f"{counted(count, 'text')}",
            embedder=embedder,
        )
    wrong_length = [i for i, vector in enumerate(vectors) if len(vector) != dimensions]
    if wrong_length:
        raise EmbeddingOutputError(
            f"embedder {embedder!r} returned vectors whose length is not {dimensions} "
            f"at positions {_positions(wrong_length)}",
            embedder=embedder,
            positions=wrong_length,
        )
    not_finite = [
        i for i, vector in enumerate(vectors) if not all(math.isfinite(x) for x in vector)
    ]
    if not_finite:
        raise EmbeddingOutputError(
            f"embedder {embedder!r} returned NaN or infinite components "
            f"at positions {_positions(not_finite)}",
            embedder=embedder,
            positions=not_finite,
        )


def _positions(positions: Sequence[int], shown: int = 10) -> str:
    text = ", ".join(str(p) for p in positions[:shown])
    if len(positions) > shown:
        text += f", ... ({len(positions)} in all)"
    return text
