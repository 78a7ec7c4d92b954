"""The EVM profile: what every EVM chain adapter shares. Its blocks and events
(:mod:`.blocks`), the adapter bases that report blocks (:mod:`.chain_adapter`), ``eth_subscribe`` as
a chain family (:mod:`.subscriptions`), log filters (:mod:`.log_filter`), cache rules
(:mod:`.cache_rules`) and method descriptions (:mod:`.openrpc`)."""
