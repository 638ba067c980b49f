"""Rerankers: a score for each (query, text) pair, for the plan's rerank step.

A :class:`Reranker` sits beside the :class:`~hotdata_retrieval.embed.Embedder`: where an
embedder turns one text into a vector, a reranker reads the query and a candidate's text
together and returns one relevance score (higher is more relevant), as a cross-encoder does
(Nogueira & Cho, "Passage Re-ranking with BERT", 2019). Any object with a ``name`` and
``score(pairs)`` is one.

- :class:`CrossEncoderReranker`: a cross-encoder exported to ONNX, run on onnxruntime with
  its ``tokenizers`` tokenizer, from a local directory; nothing is downloaded.
- :class:`TermOverlapReranker`: deterministic, instant, no model: the share of the query's
  BM25 terms a text holds (the library's own analysis). For tests and examples.

A plan names its reranker by text (the plan is data): a registered reranker's ``name``
(:func:`register_reranker`) or a model directory, which :func:`reranker_for` opens once.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from hotdata_retrieval.errors import PlanError, RerankerUnavailableError

MAX_RERANK_TOKENS = 512
"""The longest input, in tokens, a cross-encoder here reads for one pair (the query and the
text together, longer ones cut from the text's end): BERT-family cross-encoders have 512
positions (``max_position_embeddings``), ms-marco-MiniLM-L-6-v2 among them."""

DEFAULT_RERANK_BATCH_SIZE = 32
"""Pairs one model call scores."""

PROGRESS_PAIRS = 256
"""Pairs from which scoring shows progress on standard error."""

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"

EXPORT_HINT = (
    "export a cross-encoder with Hugging Face Optimum, e.g. optimum-cli export onnx --model "
    "cross-encoder/ms-marco-MiniLM-L-6-v2 DIR (it writes model.onnx and tokenizer.json), "
    "and pass DIR"
)


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, text) pairs: higher is more relevant."""

    @property
    def name(self) -> str:
        """A stable identifier of the model and settings behind the scores."""
        ...

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One finite score per pair, in order."""
        ...


class TermOverlapReranker:
    """A deterministic reranker without a model: a pair scores the number of distinct BM25
    terms of the query (:func:`~hotdata_retrieval.analysis.analyze_text`: the library's
    tokenizer, folding, stop words and stemmer) that the text holds, plus that number over
    the text's distinct terms (so a text that is more nearly the query scores higher). For
    tests and examples; it knows nothing of meaning."""

    name = "term-overlap"

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Each pair's score (see the class).

        >>> TermOverlapReranker().score([("disk full", "the disk is full"), ("disk", "cpu")])
        [3.0, 0.0]
        """
        from hotdata_retrieval.analysis import analyze_text

        scores = []
        for query, text in pairs:
            wanted = set(analyze_text(query))
            held = set(analyze_text(text))
            shared = len(wanted & held)
            scores.append(float(shared + (shared / len(held) if held else 0.0)))
        return scores


def _positive(value: Any, label: str, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise PlanError(
            f"{label} must be a whole number from 1 to {maximum}, got {value!r}",
            field=label,
            value=value,
        )
    return value


class CrossEncoderReranker:
    """A cross-encoder exported to ONNX, from a local directory holding ``model.onnx`` and
    ``tokenizer.json`` (``tokenizers``' format), run on onnxruntime's CPU provider (the
    ``local`` extra).

    The model takes ``input_ids`` and ``attention_mask`` (and ``token_type_ids`` when it
    declares them) of shape (pairs, tokens), int64, and returns logits of shape (pairs, 1)
    or (pairs,): each pair's score is its logit. Each pair is encoded as the tokenizer's
    pair template (``[CLS] query [SEP] text [SEP]`` for BERT), cut to ``max_length`` tokens
    from the text's end; a batch is padded to its longest pair.

    Args:
        directory: the model directory.
        max_length: tokens per pair, 1 to :data:`MAX_RERANK_TOKENS` (default 512).
        batch_size: pairs per model call, 1 to 1,024 (default 32).
        threads: onnxruntime's intra-op threads (default: onnxruntime's choice).
        progress: show progress on standard error from :data:`PROGRESS_PAIRS` pairs.

    Raises:
        RerankerUnavailableError: the directory, a model file or onnxruntime/tokenizers is
            missing, or ``tokenizer.json`` or ``model.onnx`` does not load (the message names
            the directory and the file, and says how to get the model); raised on first use.
        PlanError: a bad ``max_length`` or ``batch_size``.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        max_length: int = MAX_RERANK_TOKENS,
        batch_size: int = DEFAULT_RERANK_BATCH_SIZE,
        threads: int | None = None,
        progress: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self.max_length = _positive(max_length, "max_length", MAX_RERANK_TOKENS)
        self.batch_size = _positive(batch_size, "batch_size", 1024)
        self._threads = threads
        self._progress = progress
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, tuple[str, ...], str] | None = None

    @property
    def name(self) -> str:
        """``cross-encoder:<directory name>:<first 12 hex digits of the model's SHA-256>``
        (the model is read to compute it)."""
        return self._load()[3]

    def check_available(self) -> None:
        """Refuse now, naming what is missing, if the model cannot be loaded.

        Raises:
            RerankerUnavailableError: as the class says.
        """
        missing = [
            str(self.directory / name)
            for name in (MODEL_FILE, TOKENIZER_FILE)
            if not (self.directory / name).is_file()
        ]
        if missing:
            where = (
                "is no directory"
                if not self.directory.is_dir()
                else "lacks " + ", ".join(Path(path).name for path in missing)
            )
            raise RerankerUnavailableError(
                f"no cross-encoder model in {self.directory}: it {where}; {EXPORT_HINT}",
                model=str(self.directory),
                missing=missing,
            )
        modules = []
        for module in ("onnxruntime", "tokenizers", "numpy"):
            try:
                __import__(module)
            except ImportError:
                modules.append(module)
        if modules:
            from hotdata_retrieval.extras import install_command

            raise RerankerUnavailableError(
                f"the cross-encoder reranker needs {', '.join(modules)}: "
                f"{install_command('local')}",
                model=str(self.directory),
                missing=modules,
            )

    def _load(self) -> tuple[Any, Any, tuple[str, ...], str]:
        with self._lock:
            if self._loaded is None:
                self.check_available()
                import onnxruntime  # type: ignore[import-untyped]
                from tokenizers import Tokenizer

                tokenizer_file = self.directory / TOKENIZER_FILE
                model_file = self.directory / MODEL_FILE
                try:
                    tokenizer = Tokenizer.from_file(str(tokenizer_file))
                    tokenizer.no_padding()
                    tokenizer.enable_truncation(max_length=self.max_length, strategy="only_second")
                except Exception as error:  # tokenizers raises a bare Exception
                    raise self._unreadable(tokenizer_file, error) from None
                try:
                    model = model_file.read_bytes()
                    options = onnxruntime.SessionOptions()
                    options.log_severity_level = 3
                    if self._threads is not None:
                        options.intra_op_num_threads = self._threads
                    session = onnxruntime.InferenceSession(
                        model, sess_options=options, providers=["CPUExecutionProvider"]
                    )
                    inputs = tuple(item.name for item in session.get_inputs())
                except Exception as error:  # onnxruntime's errors share no base class
                    raise self._unreadable(model_file, error) from None
                digest = hashlib.sha256(model).hexdigest()[:12]
                name = f"cross-encoder:{self.directory.name}:{digest}"
                self._loaded = (session, tokenizer, inputs, name)
            return self._loaded

    def _unreadable(self, file: Path, error: Exception) -> RerankerUnavailableError:
        """The one-line error for a model file that exists but does not load."""
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        return RerankerUnavailableError(
            f"the cross-encoder model in {self.directory} does not load: {file.name} is "
            f"unreadable ({reason}); {EXPORT_HINT}",
            model=str(self.directory),
            missing=[str(file)],
        )

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Each pair's logit, in order, in batches of ``batch_size``.

        Raises:
            RerankerUnavailableError: as the class says.
            PlanError: the model returned a non-finite score or a shape it should not.
        """
        import numpy as np

        from hotdata_retrieval._progress import progress_report

        session, tokenizer, inputs, name = self._load()
        items = list(pairs)
        scores: list[float] = []
        with progress_report(
            "reranking", len(items), enabled=self._progress and len(items) >= PROGRESS_PAIRS
        ) as report:
            for start in range(0, len(items), self.batch_size):
                batch = items[start : start + self.batch_size]
                encodings = tokenizer.encode_batch([(query, text) for query, text in batch])
                width = max(len(encoding.ids) for encoding in encodings)
                arrays = {
                    key: np.zeros((len(batch), width), dtype=np.int64)
                    for key in ("input_ids", "attention_mask", "token_type_ids")
                }
                for row, encoding in enumerate(encodings):
                    count = len(encoding.ids)
                    arrays["input_ids"][row, :count] = encoding.ids
                    arrays["attention_mask"][row, :count] = encoding.attention_mask
                    arrays["token_type_ids"][row, :count] = encoding.type_ids
                (logits,) = session.run(None, {key: arrays[key] for key in inputs})
                values = np.asarray(logits, dtype=np.float64).reshape(len(batch), -1)[:, 0]
                if not np.isfinite(values).all():
                    raise PlanError(
                        f"{name} returned a non-finite score", field="rerank", value=name
                    )
                scores.extend(float(value) for value in values)
                report.advance(len(batch))
        return scores


_RERANKERS: dict[str, Reranker] = {}
_OPENED: dict[str, CrossEncoderReranker] = {}
_REGISTRY_LOCK = threading.Lock()


def register_reranker(reranker: Reranker) -> str:
    """Make ``reranker`` known to plans by its ``name`` (what a rerank step names);
    returns the name. Registering another object under a name in use replaces it.

    Raises:
        PlanError: ``reranker`` has no ``score`` or no name.
    """
    if not isinstance(reranker, Reranker):
        raise PlanError(f"a reranker has a name and score(pairs), got {reranker!r}", field="rerank")
    name = reranker.name
    if not isinstance(name, str) or not name:
        raise PlanError(f"a reranker's name must be text, got {name!r}", field="rerank")
    with _REGISTRY_LOCK:
        _RERANKERS[name] = reranker
    return name


register_reranker(TermOverlapReranker())


def reranker_for(model: str) -> Reranker:
    """The reranker a plan names: a registered one (:func:`register_reranker`; the built-in
    ``term-overlap``), else the :class:`CrossEncoderReranker` of the directory ``model``
    (opened once per directory).

    Raises:
        RerankerUnavailableError: no registered reranker has the name and it is no model
            directory (the message says how to get one).
    """
    with _REGISTRY_LOCK:
        known = _RERANKERS.get(model)
        if known is not None:
            return known
        opened = _OPENED.get(model)
        if opened is None:
            opened = CrossEncoderReranker(model)
            opened.check_available()
            _OPENED[model] = opened
        return opened
