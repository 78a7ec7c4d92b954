"""``python -m soak``: see :mod:`soak.cli`."""

from soak.cli import main

main()
