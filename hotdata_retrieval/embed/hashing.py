"""A deterministic feature-hashing embedder: no model, no dependencies, for tests.

Each text is split into words, each word is hashed to one of ``dimensions`` buckets with a
sign (the "hashing trick", Weinberger et al., "Feature Hashing for Large Scale Multitask
Learning", ICML 2009), the signed counts are dampened to ``1 + log(count)`` and the vector
is scaled to unit length. Texts that share words get a positive cosine; texts that share
none get a cosine near 0. It knows nothing of meaning (synonyms land in unrelated buckets),
so it stands in for a real model only where the test is about plumbing, not relevance.

Words: the text is normalised to Unicode NFKC and case-folded, and every maximal run of
word characters (``re``'s Unicode ``\\w``: letters, digits, underscore) is one word. This is
the whole tokenizer; it is deliberately this small so that its output is easy to predict.
Components are rounded to float32.

Hashing uses BLAKE2b (``hashlib``) keyed with the seed, never Python's ``hash()``, whose
value for a ``str`` changes from one process to the next: the same text, dimensions and seed
give the same vector in every process and on every machine.
"""

from __future__ import annotations

import array
import functools
import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from hotdata_retrieval.embed.errors import EmbeddingInputError
from hotdata_retrieval.embed.protocol import (
    AsyncEmbeddingsMixin,
    validate_query,
    validate_texts,
)

#: Bumped whenever a change to this module would change any vector.
HASHING_VERSION = 1

_WORD = re.compile(r"\w+")
#: The feature a text with no words is given, so that its vector still has unit length.
#: It contains no word character, so no word can collide with it by spelling.
_EMPTY_FEATURE = "\x00empty"


def hashing_tokens(text: str) -> list[str]:
    """The words :class:`HashingEmbedder` hashes: NFKC, case-folded runs of ``\\w``.

    >>> hashing_tokens("Café-au-lait, 2 CUPS!")
    ['café', 'au', 'lait', '2', 'cups']
    """
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


@functools.lru_cache(maxsize=1 << 16)
def _bucket(token: str, key: bytes, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8, key=key).digest()
    value = int.from_bytes(digest, "little")
    sign = -1.0 if value >> 63 else 1.0
    return value % dimensions, sign


class HashingEmbedder(AsyncEmbeddingsMixin):
    """Feature hashing of words into unit-length vectors; deterministic across processes.

    Args:
        dimensions: vector length, >= 1 (default 256).
        seed: an integer in ``[0, 2**64)`` that keys the hash (default 0); different seeds
            give unrelated vectors.

    >>> embedder = HashingEmbedder(dimensions=8)
    >>> embedder.name
    'hashing-v1:blake2b:d8:seed0'
    >>> vector = embedder.embed_query("hello world")
    >>> len(vector), round(sum(x * x for x in vector), 6)
    (8, 1.0)
    >>> vector == HashingEmbedder(dimensions=8).embed_documents(["Hello, WORLD"])[0]
    True
    """

    def __init__(self, dimensions: int = 256, seed: int = 0) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise EmbeddingInputError(
                f"dimensions must be an int >= 1, got {dimensions!r}", value=dimensions
            )
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
            raise EmbeddingInputError(
                f"seed must be an int in [0, 2**64), got {seed!r}", value=seed
            )
        self._dimensions = dimensions
        self._seed = seed
        self._key = seed.to_bytes(8, "little")

    @property
    def dimensions(self) -> int:
        """The vector length."""
        return self._dimensions

    @property
    def seed(self) -> int:
        """The hash seed."""
        return self._seed

    @property
    def name(self) -> str:
        """``hashing-v<version>:blake2b:d<dimensions>:seed<seed>``."""
        return f"hashing-v{HASHING_VERSION}:blake2b:d{self._dimensions}:seed{self._seed}"

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self._dimensions}, seed={self._seed})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order.

        Raises:
            EmbeddingInputError: ``texts`` is not a sequence of ``str``.
        """
        return [self._embed(text) for text in validate_texts(texts)]

    def embed_query(self, text: str) -> list[float]:
        """The unit-length vector of one text (the same as for a document).

        Raises:
            EmbeddingInputError: ``text`` is not a ``str``.
        """
        return self._embed(validate_query(text))

    def _embed(self, text: str) -> list[float]:
        counts = Counter(hashing_tokens(text)) or Counter({_EMPTY_FEATURE: 1})
        vector = [0.0] * self._dimensions
        for token, count in counts.items():
            index, sign = _bucket(token, self._key, self._dimensions)
            vector[index] += sign * (1.0 + math.log(count))
        norm = math.sqrt(math.fsum(x * x for x in vector))
        if norm == 0.0:
            # Every feature cancelled out in its bucket (e.g. two words of opposite sign in
            # a one-bucket space): fall back to the empty text's feature.
            index, sign = _bucket(_EMPTY_FEATURE, self._key, self._dimensions)
            vector = [0.0] * self._dimensions
            vector[index] = sign
            return vector
        # Rounded to float32, the precision vectors are stored and searched at, so the
        # lists returned here equal the rows of embed_in_batches' float32 array exactly.
        return array.array("f", [x / norm for x in vector]).tolist()
