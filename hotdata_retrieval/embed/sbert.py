"""Any sentence-transformers model, for those who want a heavier one than the default.

This needs ``pip install 'hotdata-retrieval[sentence-transformers]'``, which brings PyTorch
(hundreds of megabytes). A model *name* is fetched from the Hugging Face Hub on first use
and cached there, so on a machine without network pass a local directory instead (and
``local_files_only=True``, which is the default here, so nothing is fetched by surprise).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hotdata_retrieval.embed.errors import (
    EmbedderUnavailableError,
    EmbeddingInputError,
    EmbeddingOutputError,
)
from hotdata_retrieval.embed.protocol import AsyncEmbeddingsMixin, validate_query, validate_texts

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

logger = logging.getLogger(__name__)

SENTENCE_TRANSFORMERS_HINT = "pip install 'hotdata-retrieval[sentence-transformers]'"


class SentenceTransformerEmbedder(AsyncEmbeddingsMixin):
    """A ``sentence_transformers.SentenceTransformer`` behind the :class:`Embedder` protocol.

    Args:
        model: a model directory, or a Hub model id (fetched only if ``local_files_only``
            is false).
        revision: the Hub revision (commit, tag or branch); part of :attr:`name`.
        query_prompt: text put before each query (e.g. ``"query: "`` for E5 models).
        document_prompt: text put before each document (e.g. ``"passage: "``).
        max_seq_length: tokens kept per text (default: the model's own setting).
        batch_size: texts per forward pass (default 32).
        device: torch device (default ``"cpu"``).
        local_files_only: never reach the network (default true).
        dimensions: the model's vector length, if known: then reading :attr:`dimensions`
            does not load the model (the model's own figure is checked when it loads).
        name: overrides the generated :attr:`name`; use it when ``model`` is a directory
            whose path says nothing about the weights in it.

    Vectors are scaled to unit length. The model loads on first use; so does reading
    :attr:`dimensions` when it was not given (note that ``isinstance(x, Embedder)`` reads
    it on Python < 3.12).
    """

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        query_prompt: str = "",
        document_prompt: str = "",
        max_seq_length: int | None = None,
        batch_size: int = 32,
        device: str = "cpu",
        local_files_only: bool = True,
        dimensions: int | None = None,
        name: str | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise EmbeddingInputError(f"model must be a non-empty str, got {model!r}", value=model)
        settings = (
            ("max_seq_length", max_seq_length),
            ("batch_size", batch_size),
            ("dimensions", dimensions),
        )
        for what, value in settings:
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise EmbeddingInputError(f"{what} must be an int >= 1, got {value!r}", value=value)
        self._model_id = model
        self._revision = revision
        self._query_prompt = query_prompt
        self._document_prompt = document_prompt
        self._max_seq_length = max_seq_length
        self._batch_size = batch_size
        self._device = device
        self._local_files_only = local_files_only
        self._name = name
        self._dimensions = dimensions
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def name(self) -> str:
        """``sentence-transformers:<model>[@<revision>]:max<n>|default[:prompts]:l2``."""
        if self._name is not None:
            return self._name
        parts = [f"sentence-transformers:{self._model_id}"]
        if self._revision:
            parts[0] += f"@{self._revision}"
        parts.append(f"max{self._max_seq_length}" if self._max_seq_length else "maxdefault")
        if self._query_prompt or self._document_prompt:
            parts.append(f"q={self._query_prompt!r},d={self._document_prompt!r}")
        parts.append("l2")
        return ":".join(parts)

    @property
    def dimensions(self) -> int:
        """The model's vector length (loads the model unless it was given)."""
        if self._dimensions is not None:
            return self._dimensions
        return self._model_dimensions(self._load())

    def _model_dimensions(self, model: Any) -> int:
        getter = getattr(model, "get_sentence_embedding_dimension", None) or getattr(
            model, "get_embedding_dimension", None
        )
        dimensions = getter() if getter is not None else None
        if not isinstance(dimensions, int) or dimensions < 1:
            raise EmbeddingOutputError(
                f"{self.name} does not report its vector length", embedder=self.name
            )
        return dimensions

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._model_id!r})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """The unit-length vector of one query (``query_prompt`` put before it)."""
        vector = self._encode([self._query_prompt + validate_query(text)])[0]
        return vector.tolist()  # type: ignore[no-any-return]

    def embed_array(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Like :meth:`embed_documents`, as a float32 array of shape (n, dimensions)."""
        return self._encode([self._document_prompt + text for text in validate_texts(texts)])

    def _encode(self, texts: list[str]) -> NDArray[np.float32]:
        model = self._load()
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        vectors = np.asarray(
            model.encode(
                texts,
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            dtype=np.float32,
        )
        bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
        if bad.size:
            raise EmbeddingOutputError(
                f"{self.name} produced NaN or infinite values for texts at positions "
                f"{', '.join(str(int(i)) for i in bad[:10])}",
                embedder=self.name,
                positions=[int(i) for i in bad],
            )
        return np.ascontiguousarray(vectors)

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                missing = [
                    module
                    for module in ("sentence_transformers", "numpy")
                    if importlib.util.find_spec(module) is None
                ]
                if missing:
                    raise EmbedderUnavailableError(
                        f"the sentence-transformers embedder needs {', '.join(missing)}",
                        embedder=f"sentence-transformers:{self._model_id}",
                        missing=missing,
                        install_hint=SENTENCE_TRANSFORMERS_HINT,
                    )
                # Imported by name: the package is optional, and ships no type information.
                module = importlib.import_module("sentence_transformers")
                logger.debug("loading sentence-transformers model %r", self._model_id)
                try:
                    model = module.SentenceTransformer(
                        self._model_id,
                        device=self._device,
                        revision=self._revision,
                        local_files_only=self._local_files_only,
                    )
                except OSError as error:
                    raise EmbedderUnavailableError(
                        f"cannot load sentence-transformers model {self._model_id!r}: {error}",
                        embedder=f"sentence-transformers:{self._model_id}",
                        missing=[self._model_id],
                    ) from error
                if self._max_seq_length is not None:
                    model.max_seq_length = self._max_seq_length
                actual = self._model_dimensions(model)
                if self._dimensions is not None and actual != self._dimensions:
                    raise EmbeddingOutputError(
                        f"{self.name} makes vectors of length {actual}, "
                        f"not the {self._dimensions} given",
                        embedder=self.name,
                    )
                self._model = model
            return self._model
