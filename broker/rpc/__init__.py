"""From a call to its answer: the configured networks, a chain adapter's call contained, the
response cache, and the dispatcher that maps every frame or body to its reply.

- :mod:`.networks`: the configured networks (name, CAIP-2 chain id, the adapter serving it).
- :mod:`.plugin_calls`: an adapter's call, whatever it returns or raises made that call's answer.
- :mod:`.response_cache`: encoded answers kept while they are true (sans-io);
  :mod:`.chain_calls`: its I/O shell (identical concurrent calls coalesced).
- :mod:`.dispatch`: decoding, routing each call to its handler, mapping errors (read it first).
- :mod:`.discover`: ``rpc.discover``, an OpenRPC document of what a caller can use.
- :mod:`.filter_logs`: ``eth_getFilterLogs`` of the polled filters (:mod:`adapters.evm.filters`)
  asks the adapter serving the filter's chain.

May import: :mod:`broker.config`, :mod:`broker.metrics`, :mod:`broker.sessions`' model, the plug-in
SDK and :mod:`schemas`. Never transport, events, sessions' service or anything above: the methods
that need them (subscriptions, sessions, signing, the operator's) register into the dispatcher from
their own packages.
"""
