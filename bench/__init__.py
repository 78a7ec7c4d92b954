"""Benchmarks of scopecast against its peers, measured side by side (``python -m bench``).

Writes ``docs/benchmarks/results.json``, ``README.md`` and PNG plots. See :mod:`bench.cli`.
"""
