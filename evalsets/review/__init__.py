"""Review and collaboration services, one module per job: ``audit`` (the trail every change
writes), ``workflow`` (editing rules, four eyes and the transitions), ``comments`` and
``assignments``. Writes only: what pages and the API read about reviews (history, changes
since a version, an item's writers, my queue) is in ``evalsets.review.selectors``. Callers import
the module they need; this package re-exports nothing.
"""
