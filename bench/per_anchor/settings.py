"""The product's settings plus the benchmark's per-anchor peer (see ``per_anchor``)."""

from labelling.settings import *  # noqa: F403
from labelling.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "per_anchor.apps.PerAnchorPeer"]
