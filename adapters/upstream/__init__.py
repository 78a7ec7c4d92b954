"""The upstream chain adapter: node methods forwarded to JSON-RPC nodes, with failover, and their
chain head followed for subscriptions. Configured per network (``[networks.<name>]`` with
``upstreams = [...]``); every setting is described in the README, "Upstream nodes (the
``upstream`` adapter)".

The chain-neutral pieces (the options every upstream adapter shares, forwarding with failover and
health and the adapter built on it, the transport, the upstream WebSocket and the follower built on
it) are exported for other families' upstream adapters (``solana-upstream``).
"""

from adapters.upstream._adapter import ForwardingAdapter as ForwardingAdapter
from adapters.upstream._adapter import NoUsableUpstream as NoUsableUpstream
from adapters.upstream._adapter import UpstreamAdapter as UpstreamAdapter
from adapters.upstream._forwarding import ChainCheck as ChainCheck
from adapters.upstream._forwarding import Forwarder as Forwarder
from adapters.upstream._forwarding import MaybeSubmitted as MaybeSubmitted
from adapters.upstream._forwarding import UpstreamUnavailable as UpstreamUnavailable
from adapters.upstream._health import State as State
from adapters.upstream._health import UpstreamStatus as UpstreamStatus
from adapters.upstream._options import READ_METHODS as READ_METHODS
from adapters.upstream._options import WRITE_METHODS as WRITE_METHODS
from adapters.upstream._options import BaseUpstreamOptions as BaseUpstreamOptions
from adapters.upstream._options import Endpoint as Endpoint
from adapters.upstream._options import UpstreamOptions as UpstreamOptions
from adapters.upstream._options import endpoint_label as endpoint_label
from adapters.upstream._transport import HttpUpstream as HttpUpstream
from adapters.upstream._ws_follow import SUBSCRIBE_ID as SUBSCRIBE_ID
from adapters.upstream._ws_follow import WsFeed as WsFeed
from adapters.upstream._ws_follow import WsFollower as WsFollower
