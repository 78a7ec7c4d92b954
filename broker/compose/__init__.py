"""The composition root: a broker built from a config and what a command line adds, every part
built and wired in one place (:func:`build_broker`), and served as a managed resource
(:func:`open_broker`). ``scopecast serve``, the tests and the benchmarks all build through it;
tests and benchmarks that bring adapter instances of their own build the engine alone
(:func:`build_bare_broker`).

Objects receive what they use: nothing registers itself into the broker. In parts:

- :mod:`._networks`: the networks, chain adapters and account adapter a config and options
  describe (the installed adapters' development networks by default), and the Redis of a deployment;
- :mod:`._engine`: the engine every broker serves (:class:`broker.engine.Engine`: the dispatcher,
  subscriptions, filters, resume, the event path), and a broker of it alone;
- :mod:`._worker`: the ``scopecast worker`` role (a leader per chain, publishing to Redis);
- :mod:`._root`: the rest (Redis backends, sessions and approvals, access control, the operator
  API and console), wired to the engine.

The roof with :mod:`broker.cli`: may import every part of the broker, and only the command line
imports it.
"""

from broker.compose._engine import build_bare_broker as build_bare_broker
from broker.compose._engine import build_engine as build_engine
from broker.compose._networks import DEV_ADMIN_TOKEN as DEV_ADMIN_TOKEN
from broker.compose._networks import ServeOptions as ServeOptions
from broker.compose._networks import build_network as build_network
from broker.compose._networks import redis_url as redis_url
from broker.compose._networks import require_upstreams as require_upstreams
from broker.compose._root import build_broker as build_broker
from broker.compose._root import open_broker as open_broker
from broker.compose._worker import build_worker as build_worker
