"""Cursor tokens: where a page of a ranking ended, to continue it without ``OFFSET``.

A token is the URL-safe base64 of a small JSON object: the last row's ranking value (a
fused score, a BM25 score or a distance) and key, the rows served up to it, and a
fingerprint of everything in the plan that decides the ranking. The next page holds the
rows ranked after that row (``search_after`` in Elasticsearch:
https://www.elastic.co/guide/en/elasticsearch/reference/current/paginate-search-results.html#search-after),
and a plan whose ranking differs from the one that gave the token refuses it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.errors import PlanError

if TYPE_CHECKING:
    from hotdata_retrieval.plan.search import SearchPlan

MAX_CURSOR_CHARACTERS = 1024
"""The longest token a plan accepts: a key, a number, a count and a 16-character
fingerprint take well under 200 characters; anything longer is not a token."""

MAX_CURSOR_SERVED = 2**53
"""The most rows a token may say were served before it: its page then reads at most that
many and ``limit`` more, a count a 64-bit ``LIMIT`` holds."""

_LARGEST_WHOLE_DOUBLE = 2**1023
"""Below this, an integer ranking value converts to a finite double."""

_FINGERPRINT = re.compile(r"[0-9a-f]{16}")
"""A :func:`ranking_fingerprint`: 16 lowercase hex digits."""

_PAGE_FIELDS = frozenset(
    {
        "limit",
        "offset",
        "after",
        "columns",
        "include_branch_scores",
        "include_vectors",
        "score_name",
        "explain_scores",
        "facets",
    }
)
"""Plan document keys that change the page or what each row carries, not the ranking: a
token stays valid across them."""

_BRANCH_PAGE_FIELDS = frozenset({"allow_empty"})
"""Branch document keys that never change a ranking a cursor continues: ``allow_empty`` only
decides whether a query with no word is an empty branch or an error, and a query with a word
ranks the same either way (so ``hdq search``, which refuses a query with no word, and the tool
doors, which answer it, continue each other's tokens)."""


@attrs.frozen(kw_only=True)
class Cursor:
    """A decoded token.

    Attributes:
        value: the last row's ranking value (higher is better for a score, lower for a
            distance).
        key: the last row's key (a string or an integer).
        served: rows of the ranking up to and including that row.
        fingerprint: :func:`ranking_fingerprint` of the plan that gave it.
    """

    value: float
    key: str | int
    served: int
    fingerprint: str

    def token(self) -> str:
        """The token, as :attr:`SearchResult.next_after
        <hotdata_retrieval.engines.results.SearchResult.next_after>` returns it."""
        document = {"v": self.value, "k": self.key, "n": self.served, "p": self.fingerprint}
        text = json.dumps(document, separators=(",", ":"), allow_nan=False)
        return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii")


def read_cursor(token: Any) -> Cursor:
    """The cursor ``token`` holds.

    Raises:
        PlanError: not a token this library wrote (naming ``after``).
    """
    if not isinstance(token, str) or not token or len(token) > MAX_CURSOR_CHARACTERS:
        raise PlanError(
            f"after must be a cursor token a result returned as next_after, got {token!r:.80}",
            field="after",
            value=token,
        )
    try:
        document = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error, RecursionError):
        document = None
    if not isinstance(document, dict) or not _well_formed(document):
        raise PlanError(
            "after is not a cursor token a result returned as next_after",
            field="after",
            value=token,
        )
    value, key, served, fingerprint = (document[name] for name in ("v", "k", "n", "p"))
    return Cursor(value=float(value), key=key, served=served, fingerprint=fingerprint)


def _well_formed(document: dict[str, Any]) -> bool:
    """Whether each field of a decoded token has the type and range :meth:`Cursor.token`
    writes: ``v`` a finite number, ``k`` a 64-bit integer or valid Unicode text, ``n`` a
    count from 1 to :data:`MAX_CURSOR_SERVED`, ``p`` 16 lowercase hex digits. A forged
    token that fails any of them never reaches a comparison or a statement."""
    value, key, served, fingerprint = (document.get(name) for name in ("v", "k", "n", "p"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int) and abs(value) > _LARGEST_WHOLE_DOUBLE:
        return False  # beyond a double: float() would overflow or round
    if not math.isfinite(value):
        return False
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        return False
    if isinstance(key, int) and not -(2**63) <= key < 2**63:
        return False
    if isinstance(key, str):
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate, which no stored key holds
            return False
    if isinstance(served, bool) or not isinstance(served, int):
        return False
    if not 1 <= served <= MAX_CURSOR_SERVED:
        return False
    return isinstance(fingerprint, str) and _FINGERPRINT.fullmatch(fingerprint) is not None


def ranking_fingerprint(plan: SearchPlan) -> str:
    """16 hex digits of SHA-256 over the plan's JSON document less its page fields
    (:data:`_PAGE_FIELDS`, and its branches' :data:`_BRANCH_PAGE_FIELDS`): equal for two
    plans exactly when their rankings are the same search, filter, fusion, key and
    tie-breakers."""
    from hotdata_retrieval.plan.document import plan_to_document

    document = {
        name: value for name, value in plan_to_document(plan).items() if name not in _PAGE_FIELDS
    }
    document["branches"] = [
        {name: value for name, value in branch.items() if name not in _BRANCH_PAGE_FIELDS}
        for branch in document.get("branches", [])
    ]
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
