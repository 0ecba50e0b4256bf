"""The Celery application.

Configuration comes from Django settings under the ``CELERY_`` namespace, so the same code
runs on the embedded broker (a folder on disk, no server) and on Redis in production.
Workers log as the web processes do (``labelling.logs``) and count their tasks for
Prometheus (``labelling.metrics``).
"""

import os

from celery import Celery, signals
from django.conf import settings
from kombu.transport import TRANSPORT_ALIASES

from labelling import logs, metrics

# "filesystem://" (the embedded default) is kombu's transport with each message renamed into
# place once written, in every process: producers and workers alike (labelling/fsbroker.py).
TRANSPORT_ALIASES["filesystem"] = "labelling.fsbroker:Transport"

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")

app = Celery("groundwork")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
metrics.connect_task_signals()


@signals.setup_logging.connect(weak=False)
def log_as_django_does(**_) -> None:
    """A receiver here stops Celery configuring logging its own way: the worker's lines get
    the same format (text or JSON) and levels as the web's, from ``settings.LOGGING``."""
    logs.configure(settings.LOGGING)
