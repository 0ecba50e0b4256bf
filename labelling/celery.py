"""The Celery application.

Configuration comes from Django settings under the ``CELERY_`` namespace, so the same code
runs on the embedded broker (a folder on disk, no server) and on Redis in production.
"""

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

# "filesystem://" (the embedded default) is kombu's transport with each message renamed into
# place once written, in every process: producers and workers alike (labelling/fsbroker.py).
TRANSPORT_ALIASES["filesystem"] = "labelling.fsbroker:Transport"

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")

app = Celery("groundwork")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
