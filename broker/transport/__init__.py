"""Bytes on a connection: HTTP/1.1 and WebSocket as machines without I/O, and the trio shells that
drive them (README "Limits" for their bounds).

- :mod:`.http_protocol`: the server side of HTTP/1.1 (sans-io); :mod:`.http`: its shell, one task
  per busy connection; :mod:`.http_reactor`: the one task answering every idle keep-alive
  connection; :mod:`.routing`: which endpoint a request target names (sans-io);
  :mod:`.start_up`: the port bound at once, answering 503 until the broker is ready.
- :mod:`.ws_protocol`: a dapp's WebSocket (sans-io); :mod:`.frames`: server frames built as bytes;
  :mod:`.websocket`: one WebSocket's shell (its calls, its close); :mod:`.outbox`: its outbound
  byte path (direct non-blocking writes, a bounded backlog); :mod:`.after_answer`: frames held
  until the answer of the call under way is sent.
- :mod:`.limits`: the per-connection and per-request bounds every connection shares.

May import: :mod:`broker.rpc` (a WebSocket runs its calls through the dispatcher),
:mod:`broker.metrics`, :mod:`broker.config`, :mod:`broker.sessions`' model. Never events, Redis,
sessions' service, access or anything above: those hold connections, not the other way round.
Which connections are open, and their resume, is :mod:`broker.connections`.
"""
