"""Which database errors are the moment's (a lock, a lost connection, a uniqueness race) and
which are a fault of our own.

Only the first kind is worth a retry, so only it may be answered 503 "busy, try again" or
409 "written by someone else at the same moment". A NOT NULL or foreign-key violation, a
missing column or table, a syntax error: each is a bug that a retry repeats, and saying
"busy" or "conflict" sends the operator looking for load or a race that is not there. The
drivers say which is which by code, not by message (the message's wording changes between
versions and locales): SQLite through ``sqlite_errorcode`` on its exception, psycopg through
the SQLSTATE on the exception Django wraps (``exc.__cause__.sqlstate``). Only an error with
no driver exception behind it (one Django or a test raised itself) is judged by its text.
"""

from __future__ import annotations

from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError

#: SQLite's primary result codes for "another connection holds the lock" (an extended code
#: such as SQLITE_BUSY_SNAPSHOT carries the primary one in its low byte), "the disk is full"
#: (space can be freed; the API answers it 507 before asking here) and "the file cannot be
#: opened" (the database's storage is gone, as good as a lost connection).
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_CANTOPEN = 5, 6, 13, 14
SQLITE_TRANSIENT = {SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_CANTOPEN}
#: SQLite's extended codes for a UNIQUE or PRIMARY KEY constraint that failed.
SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY = 2067, 1555

#: PostgreSQL SQLSTATEs that a retry can get past: a lock not granted, a deadlock or a
#: serialization failure (the transaction was chosen to give way), a statement cancelled by
#: a timeout, a full disk, too many connections, and the server shutting down or starting.
#: Class 08 (any connection exception) is added by its prefix.
PG_TRANSIENT = {"55P03", "40P01", "40001", "57014", "53100", "53300", "57P01", "57P02", "57P03"}
PG_CONNECTION_CLASS = "08"
PG_UNIQUE_VIOLATION = "23505"

#: With no driver exception to ask, these words in the message mean a lock or a connection.
TRANSIENT_WORDS = (
    "database is locked",
    "table is locked",
    "schema is locked",
    "disk is full",
    "connection",
)


def _sqlite_code(cause: BaseException | None) -> int | None:
    code = getattr(cause, "sqlite_errorcode", None)
    return code if isinstance(code, int) else None


def _sqlstate(cause: BaseException | None) -> str | None:
    state = getattr(cause, "sqlstate", None)
    return state if isinstance(state, str) else None


def _is_psycopg(cause: BaseException | None) -> bool:
    return cause is not None and type(cause).__module__.startswith("psycopg")


def transient(exc: BaseException) -> bool:
    """True when ``exc`` is a lock or connection error: the same request may well succeed
    in a moment. False for every other database error, and for anything else."""
    if isinstance(exc, InterfaceError):
        return True  # Django's "connection already closed" and the drivers' alike
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    code = _sqlite_code(cause)
    if code is not None:
        return code & 0xFF in SQLITE_TRANSIENT
    if _is_psycopg(cause):
        state = _sqlstate(cause)
        if state is None:
            # libpq's own failures (refused, reset, closed) come with no SQLSTATE.
            return True
        return state in PG_TRANSIENT or state.startswith(PG_CONNECTION_CLASS)
    message = str(exc).lower()
    return any(words in message for words in TRANSIENT_WORDS)


def unique_race(exc: BaseException) -> bool:
    """True when ``exc`` is a UNIQUE (or primary key) violation: a row that was not there
    when the request looked was written by another before it could write its own. Every
    other integrity error (NOT NULL, a foreign key, a CHECK) is a bug in what we wrote."""
    if not isinstance(exc, IntegrityError):
        return False
    cause = exc.__cause__
    code = _sqlite_code(cause)
    if code is not None:
        return code in (SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY)
    state = _sqlstate(cause)
    if state is not None:
        return state == PG_UNIQUE_VIOLATION
    message = str(exc).lower()
    return "unique constraint" in message or "duplicate key" in message


def describe(exc: DatabaseError) -> str:
    """The error as a log line names it: its class, the driver's code and message."""
    cause = exc.__cause__
    code = _sqlite_code(cause)
    state = _sqlstate(cause)
    if code is not None:
        where = f" ({getattr(cause, 'sqlite_errorname', code)})"
    elif state is not None:
        where = f" (SQLSTATE {state})"
    else:
        where = ""
    return f"{type(exc).__name__}{where}: {str(exc).strip()}"
