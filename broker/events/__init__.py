"""Chain events and session changes, from where they arise to whoever follows them.

At the bottom, what travels (imports :mod:`broker.rpc`, :mod:`broker.transport`, the sessions'
model and below, never Redis):

- :mod:`.chain_events`: the events the fan-out consumes (a new head, a block's logs, a chain
  family's own); :mod:`.family_codecs`: which families' events travel between processes, and how.
- :mod:`.bus`: the bus between ingestion and fan-out (in memory here; Redis Streams in
  :mod:`broker.redis`); :mod:`.session_changes`: the change bus of sessions, on the same terms.
- :mod:`.ingest`: an adapter's blocks through the head tracker onto the bus.
- :mod:`.cursors`: what a notification's ``cursor`` says (sans-io).

Above :mod:`broker.redis`, what follows them:

- :mod:`.subscriptions`: every family's subscriptions and their fan-out;
  :mod:`.stream_methods`: the methods that open them (``eth_subscribe``, Solana's PubSub, the
  polled filters).
- :mod:`.resume`: a dropped connection resumed where it stopped.
- :mod:`.event_path`: the bus to the hub, the polled filters and the response cache's epochs; and
  where this process ingests, each chain's ingestion to the bus.
- :mod:`.webhooks`: a chain subscription delivered by HTTP POST to a backend.
- :mod:`.activity`: whether a chain's blocks must carry their transactions (some ``activity``
  subscription follows an address on it), announced through Redis between processes.

Never imports sessions' service, access, the connections, the engine, the operator's packages or
anything above (tests/test_dependency_rules.py holds the layers).
"""
