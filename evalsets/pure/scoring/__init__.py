"""Scoring retrieval against an eval set's gold spans: per-question metrics, bootstrap
intervals, paired comparisons and the CI gate (``metrics``), and reading a team's own
retrieval run file (``runfile``). No Django: workers, the benchmark and scripts import it
alone. The metric definitions are context-grid's own (``contextgrid.score.metrics``).
"""
