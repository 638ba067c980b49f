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
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.errors import PlanError

if TYPE_CHECKING:
    from hotdata_retrieval.plan.search import SearchPlan

MAX_CURSOR_CHARACTERS = 1024
"""The longest token a plan accepts: a key, a number, a count and a 16-character
fingerprint take well under 200 characters; anything longer is not a token."""

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
    except (ValueError, UnicodeError, binascii.Error):
        document = None
    value = document.get("v") if isinstance(document, dict) else None
    key = document.get("k") if isinstance(document, dict) else None
    served = document.get("n") if isinstance(document, dict) else None
    fingerprint = document.get("p") if isinstance(document, dict) else None
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not isinstance(key, (str, int))
        or isinstance(key, bool)
        or not isinstance(served, int)
        or isinstance(served, bool)
        or served < 1
        or not isinstance(fingerprint, str)
    ):
        raise PlanError(
            "after is not a cursor token a result returned as next_after",
            field="after",
            value=token,
        )
    return Cursor(value=float(value), key=key, served=served, fingerprint=fingerprint)


def ranking_fingerprint(plan: SearchPlan) -> str:
    """16 hex digits of SHA-256 over the plan's JSON document less its page fields
    (:data:`_PAGE_FIELDS`): equal for two plans exactly when their rankings are the same
    search, filter, fusion, key and tie-breakers."""
    from hotdata_retrieval.plan.document import plan_to_document

    document = {
        name: value for name, value in plan_to_document(plan).items() if name not in _PAGE_FIELDS
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
