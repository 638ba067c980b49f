"""Table values as plain JSON values and as text, one reading for every door.

Binary values (``bytes``, an Arrow ``binary`` column) are written in base64 (RFC 4648's
standard alphabet, padded) everywhere the library shows them: the JSON of the tools, the DDN
connector and ``hdq search --format json``, the cells of ``hdq search``'s table and a
LangChain Document's ``page_content``; never as Python's ``b'...'``.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import enum
import math
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

MAX_JSON_NESTING = 64
"""The deepest a JSON value the library reads or writes may nest arrays and objects: a line
of a loaded JSON file (pyarrow's JSON reader recurses per level and crashes the process on a
line nested about 100,000 deep) and a document's metadata, stored as JSON text
(:class:`~hotdata_retrieval.documents.DocumentStore`). No table column nests anywhere near
this."""


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON values: dates and times in ISO 8601, decimals and UUIDs as
    strings, bytes in base64, NaN and infinities as ``null``, tuples and arrays as lists.

    Every JSON the library writes of a table's values reads them through this one function:
    the tools' envelopes (LangChain, LlamaIndex, MCP), the DDN connector's rows and
    ``hdq search --format json``. JSON (RFC 8259) has no NaN or infinity, and Python's writer
    would print ``NaN`` and ``Infinity``, which strict readers (``jq``, JavaScript's
    ``JSON.parse``) refuse; a float column may hold them, and JavaScript's
    ``JSON.stringify`` writes them as ``null`` too.

    >>> jsonable({"t": (1.5, float("nan")), "d": decimal.Decimal("2.50")})
    {'t': [1.5, None], 'd': '2.50'}
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return binary_text(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return jsonable(to_dict())
    tolist = getattr(value, "tolist", None)  # NumPy scalars and arrays
    if callable(tolist):
        return jsonable(tolist())
    if isinstance(value, Iterable):
        return [jsonable(item) for item in value]
    return str(value)


def binary_text(value: bytes | bytearray | memoryview) -> str:
    """A binary value as the library shows it: base64 (RFC 4648, standard alphabet, padded).

    >>> binary_text(b"\\x00\\xff")
    'AP8='
    """
    return base64.b64encode(bytes(value)).decode("ascii")


def as_text(value: Any) -> str:
    """One value where text is wanted (a table cell, a Document's ``page_content``): ``None``
    as ``""``, a binary value in base64 (:func:`binary_text`), anything else as ``str``.

    >>> [as_text(None), as_text(b"hi"), as_text(1.5)]
    ['', 'aGk=', '1.5']
    """
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return binary_text(value)
    return str(value)
