"""What the person running scopecast uses and watches.

- :mod:`.admin`: the wallet operator API (``POST /admin``, JSON-RPC, a bearer token).
- :mod:`.console`: the operator console (``GET /console``) and its live feed.
- :mod:`.status_server`: ``/metrics`` and ``/healthz`` of a process that serves no dapps (a worker).
- :mod:`.gc_keeper`: short garbage collections in a process that holds thousands of connections.

May import every layer below it (rpc, transport, events, Redis, sessions and their service, access);
only :mod:`broker.app`, :mod:`broker.compose` and :mod:`broker.cli` import it.
"""
