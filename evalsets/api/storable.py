"""The API's boundary for values no database can hold: one parser and one serializer mixin.

``StrictJSONParser`` refuses ``NaN``, ``Infinity`` and numbers too large for a float (``1e999``
would become infinity) while the body is parsed. ``StorableInput`` is mixed into every input
serializer: after DRF has converted the fields, it checks each value with
``evalsets.validation.check_storable`` (text without NUL or lone surrogates, JSON that is
finite and not too deep, integers within the width of the model column they land in), so a
bad request gets a 400 naming the field and nothing is written. Text is checked as sent too,
before the fields convert it, since a field's conversion may already query the database.
"""

from __future__ import annotations

import codecs
import math

from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.fields import get_attribute
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

from evalsets.errors import InvalidInput
from evalsets.validation import (
    DEFAULT_INT_RANGE,
    check_storable,
    check_storable_text,
    column_range,
)


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise _NonFinite(f"{name} is not a JSON number; numbers must be finite")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(f"{text[:40]} is too large for a number; numbers must be finite")
    return value


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, refusing non-finite numbers (and bodies nested past Python's
    recursion limit) with a 400 that says so."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            decoded = codecs.getreader(encoding)(stream)
            return json.load(decoded, parse_constant=_refuse_constant, parse_float=_finite_float)
        except ValueError as exc:  # _NonFinite included
            raise ParseError(f"JSON parse error - {exc}") from None
        except RecursionError:
            raise ParseError(
                "JSON parse error - the body nests too deeply to read; flatten it"
            ) from None


class StorableInput:
    """Mix into an input serializer: every converted value must fit the database.

    Integers are bounded by the column they are stored in: the field of the same name on
    ``storable_model`` (a ``ModelSerializer``'s own model by default), else a 32-bit integer.
    """

    storable_model = None

    def to_internal_value(self, data):
        self._check_raw_text(data)
        value = super().to_internal_value(data)
        errors: dict[str, list[str]] = {}
        for field in self._writable_fields:
            if field.source == "*":
                continue
            try:
                item = get_attribute(value, field.source_attrs)
            except (KeyError, AttributeError):
                continue
            try:
                check_storable(item, field.field_name, self._int_bounds(field))
            except InvalidInput as exc:
                errors[field.field_name] = [exc.message]
        if errors:
            raise serializers.ValidationError(errors)
        return value

    def _check_raw_text(self, data) -> None:
        """Text as sent (a string, or the strings of a list), before any field converts it: a
        field that looks a value up (a member by user name) would otherwise send PostgreSQL
        a NUL it cannot compare. Objects are left to the check after conversion, which
        walks them whole; no field looks one up."""
        errors: dict[str, list[str]] = {}
        for field in self._writable_fields:
            raw = field.get_value(data) if hasattr(data, "get") else None
            if isinstance(raw, str):
                texts = [raw]
            elif isinstance(raw, list):
                texts = [value for value in raw if isinstance(value, str)]
            else:
                continue
            try:
                for text in texts:
                    check_storable_text(text, field.field_name)
            except InvalidInput as exc:
                errors[field.field_name] = [exc.message]
        if errors:
            raise serializers.ValidationError(errors)

    def _int_bounds(self, field) -> tuple[int, int]:
        model = self.storable_model or getattr(getattr(self, "Meta", None), "model", None)
        if model is None:
            return DEFAULT_INT_RANGE
        return column_range(model, field.source_attrs[0])
