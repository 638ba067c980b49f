"""Table values as plain JSON values, one reading for every JSON the library writes."""

from __future__ import annotations

import base64
import datetime
import decimal
import enum
import math
import uuid
from collections.abc import Iterable, Mapping
from typing import Any


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
        return base64.b64encode(bytes(value)).decode("ascii")
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return jsonable(to_dict())
    tolist = getattr(value, "tolist", None)  # NumPy scalars and arrays
    if callable(tolist):
        return jsonable(tolist())
    if isinstance(value, Iterable):
        return [jsonable(item) for item in value]
    return str(value)
