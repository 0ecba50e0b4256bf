"""WSGI entry point for gunicorn: ``gunicorn labelling.wsgi``."""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")
application = get_wsgi_application()

# Import every view now rather than on the first request, then take what start-up allocated
# (Django, DRF, the URL conf: over 100,000 objects) out of the garbage collector's reach. Left
# in, each full collection walks them all: a pause of about 100 ms in the middle of some
# unlucky request (measured on the load benchmark's data); frozen, 20-35 ms at most.
get_resolver().url_patterns  # noqa: B018 -- evaluated for its imports
gc.collect()
gc.freeze()
