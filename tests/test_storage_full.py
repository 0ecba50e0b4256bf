"""Which errors mean the server's storage is full (answered 507 under /api/): no database."""

from __future__ import annotations

import errno
import sqlite3

import psycopg
import pytest
from django.db import OperationalError

from evalsets.api.errors import storage_full


def _from_database(message: str, cause: Exception) -> OperationalError:
    try:
        raise OperationalError(message) from cause
    except OperationalError as exc:
        return exc


@pytest.mark.parametrize(
    ("error", "full"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), True),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), True),
        (OSError(errno.EACCES, "Permission denied"), False),
        (_from_database("database or disk is full", sqlite3.OperationalError()), True),
        (_from_database("database is locked", sqlite3.OperationalError()), False),
        (ValueError("No space left on device"), False),
    ],
)
def test_only_a_full_disk_or_quota_counts_as_storage_full(error, full):
    assert storage_full(error) is full


def test_postgresqls_disk_full_state_counts_as_storage_full():
    cause = psycopg.errors.DiskFull("could not extend file")

    assert storage_full(_from_database("could not extend file", cause))
