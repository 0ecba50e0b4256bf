"""Experiments: score retrieval configurations and teams' own runs on a frozen release."""
