"""Token authentication with its one lookup written out.

DRF's ``TokenAuthentication`` reads the token and its user through the ORM on every API
request, and building that query took about as much CPU as an anchor create's own writes.
The same lookup, the same answers (the user, the token; 401 for an unknown key or an inactive
user); the token's creation time is read only when something asks for it.
"""

from __future__ import annotations

import functools

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions

from evalsets import written


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key):
        model = self.get_model()
        users = get_user_model()
        found = written.first(users, written.concrete(users), _token_sql(), [key])
        if found is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        user, _rest = found
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token = model.from_db(user._state.db, ["key", "user_id"], [key, user.pk])
        token.user = user
        return user, token


@functools.cache
def _token_sql() -> str:
    q = connection.ops.quote_name
    users = get_user_model()
    columns = written.select_list(users, "u", written.concrete(users))
    tokens = authentication.TokenAuthentication().get_model()
    return (
        f"SELECT {columns} FROM {q(users._meta.db_table)} u "
        f"JOIN {q(tokens._meta.db_table)} t ON t.{q('user_id')} = u.{q(users._meta.pk.column)} "
        f"WHERE t.{q('key')} = %s"
    )
