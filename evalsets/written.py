"""Model instances from queries written out in SQL, converted as the ORM converts them, and
new ones written by an INSERT built once per model.

Every API request makes a few fixed look-ups (the token and its user, the membership and its
workspace; for an anchor, its item and the highlighted parse) whose ORM build cost more CPU
than the database's answer, so they are written out. ``Model.objects.raw`` then still
spends, on every run, more than the answer again: it reads the columns back from the
cursor's description (psycopg builds an object per column), matches them to the model's
fields and finds each field's converters. Here the columns are known when the query is
written (``select_list``), so the converters are found once per model and field list, and
each row is converted and handed to ``Model.from_db``, which is what ``raw`` does with it.

An anchor create also writes two rows (the anchor, its event), and ``Model.save`` compiled
each one's INSERT afresh (quoting every column, asking every field for its placeholder),
about as much CPU as a look-up's answer. ``insert`` does what ``save`` does for a new row of
a model without parents, with the same signals and each field's value prepared by the field
itself, through an INSERT compiled once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.db import connection, models, transaction
from django.db.models import signals


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


def insert(instance: models.Model) -> None:
    """Write the new ``instance`` as ``instance.save(force_insert=True)`` does, for a model
    with no parent model and an automatic primary key: the same ``pre_save`` and ``post_save``
    signals, each column's value from its field (``pre_save``: defaults, ``auto_now_add``;
    ``get_db_prep_save``), the primary key the database gave."""
    model = type(instance)
    if model._meta.parents or not instance._state.adding or instance.pk is not None:
        raise ValueError(f"written.insert writes a new {model.__name__} without parents only")
    using = connection.alias
    instance._prepare_related_fields_for_save(operation_name="save")
    signals.pre_save.send(
        sender=model, instance=instance, raw=False, using=using, update_fields=None
    )
    sql, fields = _insert_sql(model)
    params = [
        field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields
    ]
    with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
        cursor.execute(sql, params)
        values = list(cursor.fetchone())
    for _n, column, converters in _converters(model, (model._meta.pk.attname,)):
        for convert in converters:
            values[0] = convert(values[0], column, connection)
    instance.pk = values[0]
    instance._state.adding = False
    instance._state.db = using
    signals.post_save.send(
        sender=model, instance=instance, created=True, update_fields=None, raw=False, using=using
    )


@functools.cache
def _insert_sql(model: type[models.Model]) -> tuple[str, list[models.Field]]:
    """The INSERT of one new ``model`` row returning its primary key, and the fields whose
    values it takes, in order (every local concrete field but the automatic key)."""
    q = connection.ops.quote_name
    fields = [
        f
        for f in model._meta.local_concrete_fields
        if not f.generated and f is not model._meta.auto_field
    ]
    if any(hasattr(f, "get_placeholder") for f in fields):
        raise ValueError(f"{model.__name__} has a field with a placeholder of its own")
    columns = ", ".join(q(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    return (
        f"INSERT INTO {q(model._meta.db_table)} ({columns}) VALUES ({marks}) "
        f"RETURNING {q(model._meta.pk.column)}",
        fields,
    )
