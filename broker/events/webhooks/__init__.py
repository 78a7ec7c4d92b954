"""Webhooks: a chain subscription delivered by HTTP POST to a backend, signed as the Standard
Webhooks specification says, retried with backoff, in order and at least once per webhook.

- :mod:`._signing`: secrets and signatures (sans-io).
- :mod:`._queue`: one webhook's deliveries, its retries and its failure state (sans-io).
- :mod:`._target`: where a webhook may POST (the URL's host only; no inside addresses unless allowed).
- :mod:`._sender`: one POST over h11 (no redirects followed).
- :mod:`._records`: the definitions and positions kept (memory; Redis in :mod:`._redis_store`).
- :mod:`._service`: the shell: bus events in, one delivery task per webhook.
- :mod:`._shared`: the operator's side when the webhooks are shared (Redis); :mod:`._leader`: the
  one process that delivers them.
"""

from broker.events.webhooks._leader import WebhookLeader as WebhookLeader
from broker.events.webhooks._queue import RetryPolicy as RetryPolicy
from broker.events.webhooks._records import MemoryWebhookStore as MemoryWebhookStore
from broker.events.webhooks._records import WebhookOperations as WebhookOperations
from broker.events.webhooks._records import WebhookRecord as WebhookRecord
from broker.events.webhooks._records import WebhookStore as WebhookStore
from broker.events.webhooks._redis_store import RedisWebhookStore as RedisWebhookStore
from broker.events.webhooks._redis_store import newest_position as newest_position
from broker.events.webhooks._service import WebhookService as WebhookService
from broker.events.webhooks._service import WebhookSettings as WebhookSettings
from broker.events.webhooks._shared import SharedWebhooks as SharedWebhooks
