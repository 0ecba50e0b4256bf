"""Authoring gold evidence: eval sets, items, anchors, their resolution in every parse,
portability and confirmation.
"""
