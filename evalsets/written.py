"""Model instances from queries written out in SQL, converted as the ORM converts them.

Every API request makes a few fixed look-ups (the token and its user, the membership and its
workspace; for an anchor, its item and the highlighted parse) whose ORM build cost more CPU
than the database's answer, so they are written out. ``Model.objects.raw`` then still
spends, on every run, more than the answer again: it reads the columns back from the
cursor's description (psycopg builds an object per column), matches them to the model's
fields and finds each field's converters. Here the columns are known when the query is
written (``select_list``), so the converters are found once per model and field list, and
each row is converted and handed to ``Model.from_db``, which is what ``raw`` does with it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.db import connection, models


def select_list(model: type[models.Model], alias: str, fields: Sequence[str]) -> str:
    """The columns of ``fields`` (attribute names, in ``model._meta.concrete_fields``
    order) of the table read as ``alias``, for the start of a SELECT that ``first`` reads."""
    q = connection.ops.quote_name
    return ", ".join(f"{alias}.{q(model._meta.get_field(name).column)}" for name in fields)


@functools.cache
def concrete(model: type[models.Model], *, leaving: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The attribute names of ``model``'s concrete fields in order, less those ``leaving``
    (left deferred: read when asked for)."""
    return tuple(f.attname for f in model._meta.concrete_fields if f.name not in leaving)


def first(
    model: type[models.Model], fields: tuple[str, ...], sql: str, params: Sequence[Any]
) -> tuple[models.Model, tuple] | None:
    """The first row of ``sql`` as a ``model`` instance and the row's columns after
    ``fields`` (as read), or None when there is no row. ``sql`` selects ``fields`` first,
    in that order (``select_list``); any other field of the instance is deferred."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row[: len(fields)])
    for n, column, converters in _converters(model, fields):
        for convert in converters:
            values[n] = convert(values[n], column, connection)
    return model.from_db(connection.alias, fields, values), tuple(row[len(fields) :])


@functools.cache
def _converters(model: type[models.Model], fields: tuple[str, ...]) -> list[tuple]:
    """For each of ``fields`` that has any: its position, its column expression and the
    converters the ORM's compiler applies to it (the backend's, then the field's)."""
    found = []
    for n, name in enumerate(fields):
        column = model._meta.get_field(name).get_col(model._meta.db_table)
        converters = [
            *connection.ops.get_db_converters(column),
            *column.get_db_converters(connection),
        ]
        if converters:
            found.append((n, column, converters))
    return found
