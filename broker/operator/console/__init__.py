"""The operator console: ``GET /console`` (a page shipped in this package) and its live feed.

See :mod:`broker.operator.console._console` for the endpoints, :mod:`broker.operator.console._feed` for what the
feed says, and :mod:`broker.operator.console._feed_connection` for one console's WebSocket.
"""

from broker.operator.console._console import OperatorConsole as OperatorConsole
from broker.operator.console._feed import OperatorFeed as OperatorFeed
