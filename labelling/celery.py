"""The Celery application.

Configuration comes from Django settings under the ``CELERY_`` namespace, so the same code
runs on the embedded broker (a folder on disk, no server) and on Redis in production.
"""

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")
# ``filesystem://`` (the embedded default) is kombu's transport with whole-message writes.
TRANSPORT_ALIASES["filesystem"] = "labelling.fsbroker:Transport"

app = Celery("groundwork")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
