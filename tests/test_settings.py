"""Settings: production flips by environment, fails loudly on bad values, passes --deploy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "x" * 60 + "-not-a-real-secret-but-long-and-varied-9f8e7d6c5b4a",
    "DJANGO_ALLOWED_HOSTS": "groundwork.example",
}


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_the_deploy_check_with_no_warnings():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_SECRET_KEY"}
    result = _manage("check", **env)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_a_malformed_boolean_setting_stops_start_up_and_names_the_variable():
    result = _manage("check", DJANGO_DEBUG="maybe")
    assert result.returncode != 0
    assert "DJANGO_DEBUG must be true or false, got 'maybe'" in result.stderr


@pytest.mark.django_db
def test_the_openapi_schema_generates_without_warnings_and_the_docs_page_serves(client):
    result = _manage("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)
    assert result.returncode == 0, result.stderr
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200


def test_a_cache_url_that_is_not_redis_stops_start_up_and_says_so():
    result = _manage("check", GROUNDWORK_CACHE_URL="memcached://x")
    assert result.returncode != 0
    assert "GROUNDWORK_CACHE_URL must be a redis:// URL" in result.stderr


def test_the_wsgi_entry_point_imports_every_view_and_freezes_what_start_up_allocated():
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    probe = (
        "import gc, sys; import labelling.wsgi; "
        "print(gc.get_freeze_count(), 'evalsets.anchoring.api.views' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env={**clean, **PRODUCTION},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    frozen, views_loaded = result.stdout.split()
    assert int(frozen) > 50_000 and views_loaded == "True"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-1", "GROUNDWORK_PROXY_COUNT must be 0 or more, got -1"),
        ("one", "GROUNDWORK_PROXY_COUNT must be a whole number, got 'one'"),
    ],
)
def test_a_bad_proxy_count_stops_start_up_and_says_so(value, message):
    result = _manage("check", GROUNDWORK_PROXY_COUNT=value)
    assert result.returncode != 0
    assert message in result.stderr


def _database_setting(key: str, **env: str) -> str:
    """What ``DATABASES['default'][key]`` reads in a fresh process with ``env``."""
    shown = f"from django.conf import settings; print(settings.DATABASES['default'][{key!r}])"
    result = _manage("shell", "-c", shown, **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def _conn_max_age(**env: str) -> str:
    return _database_setting("CONN_MAX_AGE", **env)


def test_the_embedded_sqlite_keeps_its_connections_between_requests_other_databases_do_not():
    """A new SQLite connection costs a third of an anchor-create's CPU; a server
    database's connections are a shared resource, kept only when the deployment says so."""
    assert _conn_max_age() == "600"
    assert _conn_max_age(DATABASE_CONN_MAX_AGE="0") == "0"
    assert _conn_max_age(DATABASE_URL="postgres://u@127.0.0.1:5432/groundwork") == "0"


def test_postgresql_binds_parameters_on_the_server_and_prepares_repeated_statements():
    """PostgreSQL plans an anchor create's fixed look-ups once per connection; a deployment
    behind a pooler that shares sessions turns it off."""
    postgres = "postgres://u@127.0.0.1:5432/groundwork"
    shown = _database_setting("OPTIONS", DATABASE_URL=postgres)
    assert "'server_side_binding': True" in shown
    assert "'prepare_threshold': 5" in shown
    off = _database_setting("OPTIONS", DATABASE_URL=postgres, DATABASE_PREPARED_STATEMENTS="false")
    assert "server_side_binding" not in off
    assert "prepare_threshold" not in off


def test_the_embedded_sqlite_reads_its_file_memory_mapped(tmp_path):
    """Columns after a parse's text of megabytes are reached by walking its overflow pages:
    mapped, that costs microseconds instead of a read() call a page."""
    shown = (
        "from django.db import connection; "
        "print(connection.cursor().execute('PRAGMA mmap_size').fetchone()[0])"
    )
    result = _manage("shell", "-c", shown, DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip().splitlines()[-1]) >= 64 * 1024 * 1024


PROBE = """
import json
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST="groundwork.example")
token = "/api/auth/token/"
print(json.dumps({
    "renderers": settings.REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"],
    "proxy_ssl_header": getattr(settings, "SECURE_PROXY_SSL_HEADER", None),
    "healthz": client.get("/healthz/").status_code,
    "api": client.get(token).status_code,
    "api_claiming_https": client.get(token, HTTP_X_FORWARDED_PROTO="https").status_code,
}))
"""


def _probe(tmp_path, **env: str) -> dict:
    database = {"DATABASE_URL": f"sqlite:///{tmp_path / 'probe.sqlite3'}"}
    migrated = _manage("migrate", "--noinput", **database, **env)
    assert migrated.returncode == 0, migrated.stderr
    result = _manage("shell", "-c", PROBE, **database, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_answers_the_api_in_json_only_and_development_keeps_the_browsable_api(
    tmp_path,
):
    production = _probe(tmp_path, **PRODUCTION)
    development = _probe(tmp_path)

    assert production["renderers"] == ["rest_framework.renderers.JSONRenderer"]
    assert "rest_framework.renderers.BrowsableAPIRenderer" in development["renderers"]


def test_without_a_trusted_proxy_a_client_saying_https_is_still_redirected(tmp_path):
    seen = _probe(tmp_path, **PRODUCTION)

    assert seen["proxy_ssl_header"] is None
    assert seen["api"] == 301 and seen["api_claiming_https"] == 301


def test_behind_a_trusted_proxy_its_https_header_is_believed(tmp_path):
    seen = _probe(tmp_path, **PRODUCTION, GROUNDWORK_PROXY_COUNT="1")

    assert seen["proxy_ssl_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    # GET on the token endpoint is 405: the request reached the view, over "https".
    assert seen["api"] == 301 and seen["api_claiming_https"] == 405


def test_the_health_probe_answers_over_plain_http_in_production(tmp_path):
    assert _probe(tmp_path, **PRODUCTION)["healthz"] == 200
