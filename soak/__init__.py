"""Reliability in figures (``python -m soak``, ``make soak``): faults, a soak, overload and hostile
input against a real deployment on loopback (a dev chain node as the upstream, Redis, two workers,
two web processes). Writes ``docs/reliability/results.json``, ``README.md`` and plots.
See :mod:`soak.cli`.
"""
