"""The operator console: ``GET /console`` (a page shipped in this package) and its live feed.

See :mod:`broker.console._console` for the endpoints, :mod:`broker.console._feed` for what the
feed says, and :mod:`broker.console._feed_connection` for one console's WebSocket.
"""

from broker.console._console import OperatorConsole as OperatorConsole
from broker.console._feed import OperatorFeed as OperatorFeed
