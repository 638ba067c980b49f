"""Embed many texts in batches, with a progress bar, into one float32 array."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from hotdata_retrieval._words import counted
from hotdata_retrieval.embed.errors import (
    EmbedderUnavailableError,
    EmbeddingInputError,
    EmbeddingOutputError,
)
from hotdata_retrieval.embed.minilm import INSTALL_HINT
from hotdata_retrieval.embed.protocol import Embedder, check_vectors, validate_texts

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: Texts per call to the embedder: large enough to amortise a call, small enough that the
#: progress bar moves every few seconds with a transformer on two cores.
DEFAULT_BATCH_SIZE = 64


@runtime_checkable
class ArrayEmbedder(Protocol):
    """An embedder that can also return a batch as a float32 array (no Python lists)."""

    def embed_array(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors of ``texts``, shape (len(texts), dimensions)."""
        ...


def embed_in_batches(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = True,
    description: str = "Embedding",
    on_batch: Callable[[int, NDArray[np.float32]], None] | None = None,
) -> NDArray[np.float32]:
    """Embed ``texts`` as documents, ``batch_size`` at a time, into one array.

    This is how document vectors are computed once, at load time: the progress bar (on
    standard error, through ``rich``) counts texts, with the elapsed and remaining time; off
    a terminal, a line such as ``Embedding: 240/721 (33%), 12 s`` every few seconds.

    Args:
        embedder: any :class:`Embedder`; one with an ``embed_array`` method is called
            through it.
        texts: the texts, in row order.
        batch_size: texts per call to the embedder (>= 1).
        progress: show the progress bar.
        description: the label in front of the bar.
        on_batch: called after each batch is embedded and checked, with the position of its
            first text in ``texts`` and its vectors (a float32 ``(batch, dimensions)`` array
            the callee may keep): how a caller saves work as it goes, so that an interrupted
            run keeps every batch it finished.

    Returns:
        A C-contiguous float32 array of shape ``(len(texts), embedder.dimensions)``; for no
        texts, shape ``(0, dimensions)``.

    Raises:
        EmbeddingInputError: ``texts`` is not a sequence of ``str`` (the error names the
            position of the first bad item), or ``batch_size`` is not an int >= 1.
        EmbeddingOutputError: the embedder returned the wrong number of vectors, vectors of
            the wrong length, or NaN or infinite components; positions are into ``texts``.
        EmbedderUnavailableError: numpy is not installed, or the embedder cannot load.

    Example (needs numpy)::

        vectors = embed_in_batches(HashingEmbedder(dimensions=8), ["a b", "c"])
        assert vectors.shape == (2, 8)
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise EmbeddingInputError(
            f"batch_size must be an int >= 1, got {batch_size!r}", value=batch_size
        )
    items = validate_texts(texts)
    if importlib.util.find_spec("numpy") is None:
        raise EmbedderUnavailableError(
            "embed_in_batches needs numpy",
            embedder=getattr(embedder, "name", type(embedder).__name__),
            missing=["numpy"],
            install_hint=INSTALL_HINT,
        )
    import numpy as np

    name = embedder.name
    dimensions = embedder.dimensions
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise EmbeddingOutputError(
            f"embedder {name!r} reports dimensions {dimensions!r}, expected an int >= 1",
            embedder=name,
        )
    out = np.zeros((len(items), dimensions), dtype=np.float32)
    if not items:
        return out

    from hotdata_retrieval._progress import progress_report

    with progress_report(description, len(items), enabled=progress) as bar:
        for start in range(0, len(items), batch_size):
            batch = items[start : start + batch_size]
            try:
                if isinstance(embedder, ArrayEmbedder):
                    vectors = np.asarray(embedder.embed_array(batch))
                else:
                    rows = embedder.embed_documents(batch)
                    check_vectors(rows, count=len(batch), dimensions=dimensions, embedder=name)
                    vectors = np.asarray(rows, dtype=np.float64)
            except EmbeddingOutputError as error:
                raise EmbeddingOutputError(
                    f"{error} (in the batch of texts {start} to {start + len(batch) - 1})",
                    embedder=error.embedder,
                    positions=[start + p for p in error.positions],
                ) from error
            _check_batch(vectors, start=start, count=len(batch), dimensions=dimensions, name=name)
            out[start : start + len(batch)] = vectors
            if on_batch is not None:
                # The float32 rows as stored (a float64 value beyond float32's range is
                # infinite there): checked again before the caller sees them.
                stored = out[start : start + len(batch)]
                _check_batch(
                    stored, start=start, count=len(batch), dimensions=dimensions, name=name
                )
                on_batch(start, stored.copy())
            bar.advance(len(batch))
    # A float64 value beyond float32's range becomes infinite in the copy: check again.
    _check_batch(out, start=0, count=len(items), dimensions=dimensions, name=name)
    return out


def _check_batch(
    vectors: NDArray[np.generic], *, start: int, count: int, dimensions: int, name: str
) -> None:
    import numpy as np

    if vectors.ndim != 2 or vectors.shape[0] != count:
        raise EmbeddingOutputError(
            f"embedder {name!r} returned an array of shape {vectors.shape} for "
            f"{counted(count, 'text')} "
            f"(texts {start} to {start + count - 1})",
            embedder=name,
        )
    if vectors.shape[1] != dimensions:
        raise EmbeddingOutputError(
            f"embedder {name!r} returned vectors of length {vectors.shape[1]}, "
            f"expected {dimensions} (texts {start} to {start + count - 1})",
            embedder=name,
            positions=range(start, start + count),
        )
    if not np.issubdtype(vectors.dtype, np.number):
        raise EmbeddingOutputError(
            f"embedder {name!r} returned vectors of dtype {vectors.dtype}", embedder=name
        )
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if bad.size:
        positions = [start + int(i) for i in bad]
        raise EmbeddingOutputError(
            f"embedder {name!r} returned NaN or infinite components for the texts at "
            f"positions {', '.join(str(p) for p in positions[:10])}"
            + (f", ... ({len(positions)} in all)" if len(positions) > 10 else ""),
            embedder=name,
            positions=positions,
        )
