"""The machinery of the shapes: a strict pydantic base model, bounds that may come from the
app's settings, and the translation of pydantic's errors into the service's JSON errors.

Why pydantic v2 and a small derivation of our own (:mod:`arena.web.openapi`) rather than
spectree, APIFlask or apispec: those take over how a view reads its body (they parse it
themselves and answer their own error shape, a 422 with pydantic's list), while this service
has one JSON parser with rules of its own (:func:`arena.web.errors.json_object`: duplicate keys,
depth, 64-bit numbers, NUL...) and one error shape (``{"error": {"code", "message"}}``) with
stable codes.  pydantic validates a dict we have already parsed, and ``model_json_schema()``
emits JSON Schema 2020-12, which is what OpenAPI 3.1 uses for its schemas: deriving the
document is one walk over the routes (it also documents the HTML pages, the rate limits and
``Idempotency-Key``, which no such library knows about).

Rules the shapes keep, as the hand-written checks did:

* strict types: ``1.0`` is not an integer, ``0`` not a boolean, ``"3"`` not a number;
* an unknown field is refused (``unknown_field``), a missing one too (``missing_field``);
* a field may be left out for its default, never sent as ``null``;
* bounds are inclusive and may name a setting (``Between(1, "MATCH_MAX_DEALS")``): it is
  read when a request is validated and when the document is made, so the document shows the
  deployment's real bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, ClassVar, TypeVar, Union, get_args, get_origin

from flask import current_app, request
from pydantic import (
    BaseModel,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationError,
    model_validator,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from arena.web.errors import ApiError, json_object, optional_json_object

S = TypeVar("S", bound="Shape")

WRONG_TYPE = {"integer": "an integer", "boolean": "true or false", "string": "a string",
              "object": "an object", "array": "a list"}
"""What a field of each JSON type must be, in the wrong-type messages."""


def setting(value: int | str) -> int:
    """A bound: a number, or the name of an integer setting of the current app."""
    return int(current_app.config[value]) if isinstance(value, str) else value


def either(values: Sequence[str]) -> str:
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


@dataclass(frozen=True)
class Between:
    """An inclusive range for an integer (each end a number or a setting's name)."""

    lo: int | str
    hi: int | str

    def __get_pydantic_core_schema__(self, source: Any,
                                     handler: GetCoreSchemaHandler) -> CoreSchema:
        def check(value: int) -> int:
            lo, hi = setting(self.lo), setting(self.hi)
            if not lo <= value <= hi:
                raise PydanticCustomError("out_of_range", "must be between {lo} and {hi}",
                                          {"lo": lo, "hi": hi})
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        out.update(minimum=setting(self.lo), maximum=setting(self.hi))
        return out


@dataclass(frozen=True)
class Length:
    """The length of a string, counted after stripping spaces at the ends (as the views
    store it); ``code`` is the error code of a string too short or too long."""

    lo: int
    hi: int | str
    code: str = "bad_length"
    status: int = 400

    def __get_pydantic_core_schema__(self, source: Any,
                                     handler: GetCoreSchemaHandler) -> CoreSchema:
        def check(value: str) -> str:
            hi = setting(self.hi)
            if not self.lo <= len(value.strip()) <= hi:
                raise PydanticCustomError(
                    self.code, ("must be at most {hi} characters" if self.lo == 0
                                else "must be {lo} to {hi} characters"),
                    {"lo": self.lo, "hi": hi, "status": self.status})
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        out["maxLength"] = setting(self.hi)
        if self.lo:
            out["minLength"] = self.lo
        return out


@dataclass(frozen=True)
class OneOf:
    """A string out of a fixed list (an ``enum`` in the document)."""

    values: tuple[str, ...]
    code: str = "bad_value"

    def __get_pydantic_core_schema__(self, source: Any,
                                     handler: GetCoreSchemaHandler) -> CoreSchema:
        def check(value: str) -> str:
            if value not in self.values:
                raise PydanticCustomError(self.code, "must be {values}",
                                          {"values": either(self.values)})
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {**handler(schema), "enum": list(self.values)}


@dataclass(frozen=True)
class DefaultSetting:
    """A default that is a setting of the app (shown in the document; the view reads it)."""

    name: str

    def __get_pydantic_json_schema__(self, schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        out["default"] = current_app.config[self.name]
        return out


class Shape(BaseModel):
    """A request body or query: strict, closed (unknown fields refused), no ``null``."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    wrong_type: ClassVar[dict[str, str]] = {}
    """Field -> what it must be, where the JSON type says too little (``a list of bot
    ids``)."""

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if value is None and key in cls.model_fields:
                    raise PydanticCustomError(
                        "wrong_type", "{key} may not be null (leave it out for the default)",
                        {"key": key})
        return data

    @classmethod
    def validate_json(cls: type[S], data: Any) -> S:
        """``data`` (already parsed) as this shape, or the ApiError saying what is wrong."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise api_error(cls, exc) from None

    @classmethod
    def from_body(cls: type[S], *, optional: bool = False) -> S:
        """The request's body (through :func:`arena.web.errors.json_object`, the one parser)
        as this shape; ``optional``: no body at all is ``{}``."""
        return cls.validate_json(optional_json_object() if optional else json_object())


TYPE_ERRORS = {"int_type": "integer", "bool_type": "boolean", "string_type": "string",
               "model_type": "object", "dict_type": "object", "list_type": "array",
               "model_attributes_type": "object"}


def api_error(model: type[Shape], exc: ValidationError) -> ApiError:
    """The one ApiError for a failed validation, in the order the hand-written checks used:
    unknown fields first, then missing ones, then the first bad value in field order."""
    errors = exc.errors(include_url=False)
    for kind, code, say in (("extra_forbidden", "unknown_field", "unknown field(s)"),
                            ("missing", "missing_field", "missing field(s)")):
        hits = [e for e in errors if e["type"] == kind]
        if hits:
            parent = hits[0]["loc"][:-1]  # () or a nested object's field ("limits")
            names = sorted(".".join(map(str, e["loc"])) for e in hits
                           if e["loc"][:-1] == parent)
            return ApiError(400, code, f"{say}: {', '.join(names)}")
    order = list(model.model_fields)
    first = min(errors, key=lambda e: order.index(str(e["loc"][0]))
                if e["loc"] and str(e["loc"][0]) in order else -1)
    loc = tuple(first["loc"])
    ctx = first.get("ctx") or {}
    if not loc:  # a model-level rule (``_no_nulls``, or a shape's own validator)
        return ApiError(int(ctx.get("status", 400)), first["type"], first["msg"])
    name = ".".join(part for part in loc if isinstance(part, str))  # "limits.deadline_ms"
    kind = first["type"]
    if kind in TYPE_ERRORS:
        top = str(loc[0])
        if top in model.wrong_type:  # the field's own words ("a list of bot ids")
            return ApiError(400, "wrong_type", f"{top} must be {model.wrong_type[top]}")
        return ApiError(400, "wrong_type", f"{name} must be {WRONG_TYPE[TYPE_ERRORS[kind]]}")
    return ApiError(int(ctx.get("status", 400)), kind, f"{name} {first['msg']}")


# --- queries ---------------------------------------------------------------------------------


QUERY_DIGITS = 18
"""Digits of the longest integer a query parameter may hold (an id, as in URLs)."""


def from_query(model: type[S]) -> S:
    """The request's query string as ``model``: integers must be whole numbers in ASCII
    digits (at most ``QUERY_DIGITS``; the shape bounds them), anything else is a 400
    ``bad_query``; parameters the shape does not name are ignored (links carry what they
    like)."""
    data: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        raw = request.args.get(name)
        if raw is None:
            continue
        if _is_int(field.annotation):
            if not raw.isascii() or not raw.isdigit() or len(raw) > QUERY_DIGITS:
                raise ApiError(400, "bad_query", f"{name} must be a whole number")
            data[name] = int(raw)
        else:
            data[name] = raw
    return model.validate_json(data)


def _is_int(annotation: Any) -> bool:
    """Whether a field holds an integer (``int``, ``Annotated[int, ...]``, ``... | None``)."""
    if get_origin(annotation) is Annotated:
        return _is_int(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return any(_is_int(a) for a in get_args(annotation))
    return annotation is int


# --- documenting -----------------------------------------------------------------------------


class RequestSchema(GenerateJsonSchema):
    """JSON Schema of a request shape: a field that may be left out is not ``null``-able
    (the Python type says ``| None`` for "absent"; the wire refuses ``null``)."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        if schema.get("default", 0) is None:  # "absent", not a value: show the inner schema
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)
