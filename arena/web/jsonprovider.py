"""Flask's JSON answers (``jsonify``, ``app.json.dumps``) written by orjson.

Every API answer is encoded once per request, and at 100,000 bots the encoding of a listing
by the standard library's C encoder was an eighth of its render (``bench/render_time.py``).
orjson writes the same JSON values several times faster.  What differs, all of it still the
same value for any JSON reader:

* text beyond ASCII is written as UTF-8 rather than as ``\\uXXXX`` escapes (the body is
  UTF-8 either way);
* a float is written in its shortest form (``1e300``, not ``1e+300``);
* a NaN or an infinity is written ``null``, where the standard library wrote ``NaN``, which
  is not JSON at all.

A value orjson refuses is left to Flask's own provider, unchanged: a string with a lone
surrogate (it is then escaped, as before), a key that is not a string, an integer past 64
bits.  Dates, dataclasses and objects with ``__html__`` go through Flask's ``default`` as
before (a ``date`` as an HTTP date, not orjson's ISO form).  An indented answer (Flask's
debug mode) is Flask's own too.
"""

from __future__ import annotations

from typing import Any

import orjson
from flask.json.provider import DefaultJSONProvider

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
"""Dates and dataclasses to Flask's ``default``: the text Flask always gave them."""


class OrjsonProvider(DefaultJSONProvider):
    """:class:`DefaultJSONProvider` with compact answers written by orjson (keys in the
    order given: ``sort_keys`` is False in this app)."""

    sort_keys = False

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        if set(kwargs) <= {"separators"} and not self.sort_keys:  # jsonify's compact answer
            try:
                return orjson.dumps(obj, default=self.default, option=_OPTIONS).decode()
            except TypeError:  # orjson.JSONEncodeError is a TypeError
                pass  # the standard library's text (or its error)
        return super().dumps(obj, **kwargs)


__all__ = ["OrjsonProvider"]
