"""The sustained benchmark's peer: anchors resolved one task per anchor, as before bursts on
one document were coalesced into one ``resolve_document`` task.

The product no longer has this path; a process started with
``DJANGO_SETTINGS_MODULE=per_anchor.settings`` and ``bench/`` on its ``PYTHONPATH`` (the web
server, the workers, the benchmark's own load processes) gets it back: the settings add
``per_anchor.apps.PerAnchorPeer``, whose ``ready`` registers the per-anchor task and puts the
per-anchor ``resolution_request`` in the place of the coalescing one.
"""
