"""``python -m bench``: see :mod:`bench.cli`."""

import signal
import sys

from bench.cli import main


def _stop(signum: int, _frame: object) -> None:
    # SIGTERM (a CI timeout, `kill`) unwinds like Ctrl-C: every server and peer the run started
    # is stopped by the finally blocks that own it, instead of outliving the run.
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _stop)
main()
