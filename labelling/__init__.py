"""The Groundwork site: settings, URLs, the Celery app and the annotator/reviewer web UI."""

from labelling.celery import app as celery_app

__all__ = ["celery_app"]
