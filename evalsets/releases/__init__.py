"""Releases of an eval set, imports into one, and the bridge to context-grid's types and
representations.
"""
