"""Request and response shapes of the API, each defined once (pydantic models): the views
validate requests with them and :mod:`arena.web.openapi` documents both from them.

``base`` is the machinery (strict models, bounds read from settings, pydantic errors as the
service's JSON errors, and why pydantic); ``requests`` what clients send; ``responses`` what
the API answers.
"""

from __future__ import annotations

from .base import Between, Length, OneOf, RequestSchema, Shape, from_query
from .responses import Answer, Error

__all__ = ["Answer", "Between", "Error", "Length", "OneOf", "RequestSchema", "Shape",
           "from_query"]
