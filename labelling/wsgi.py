"""WSGI entry point for gunicorn: ``gunicorn labelling.wsgi``."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")
application = get_wsgi_application()
