"""The CAIP-25 session layer: a sans-io model plus the stores that keep sessions.

Everything but :mod:`broker.sessions.store` is plain functions over immutable values, with the
clock passed in as ``now`` (a timezone-aware datetime). Errors a dapp should see are raised as
:mod:`schemas.errors` classes carrying their wire codes. Anything else escaping from
:func:`grant`, :func:`update_scopes` or :func:`revoke_scopes` (a ``ValueError`` for bad shell
arguments, a store failure around them) is a bug or an outage, which the shell reports as 5000
(:class:`~schemas.errors.UnknownSessionError`) for ``wallet_createSession`` and
``wallet_revokeSession``.

Two layers in one package. At the floor, imported by anything and importing nothing of the
broker's: the model above, :mod:`.client_profiles` (whose behaviour a connection's answers follow
where SPEC and a wallet differ) and :mod:`.wall_clock` (time stated in wall-clock terms). Above
events and Redis: :mod:`.service` (the sessions of the dapps connected here), :mod:`.approvals`
(who says yes to a session and to every signature) and :mod:`.signing` (account methods through
the approval policy). The model never imports the service.
"""

from broker.sessions.authorization import InvokeRequest as InvokeRequest
from broker.sessions.authorization import authorize_invoke as authorize_invoke
from broker.sessions.authorization import granted_scope as granted_scope
from broker.sessions.authorization import is_notification_granted as is_notification_granted
from broker.sessions.authorization import parse_invoke_method as parse_invoke_method
from broker.sessions.authorization import permitted_addresses as permitted_addresses
from broker.sessions.grant import ChainSupport as ChainSupport
from broker.sessions.grant import SupportLookup as SupportLookup
from broker.sessions.grant import apply_support as apply_support
from broker.sessions.grant import grant as grant
from broker.sessions.model import DEFAULT_MAX_EXPIRY as DEFAULT_MAX_EXPIRY
from broker.sessions.model import Identity as Identity
from broker.sessions.model import ScopeUpdate as ScopeUpdate
from broker.sessions.model import Session as Session
from broker.sessions.model import SessionRequest as SessionRequest
from broker.sessions.model import create_session_result as create_session_result
from broker.sessions.model import decode_session as decode_session
from broker.sessions.model import encode_session as encode_session
from broker.sessions.model import get_session_result as get_session_result
from broker.sessions.model import is_expired as is_expired
from broker.sessions.model import session_changed_params as session_changed_params
from broker.sessions.store import MemorySessionStore as MemorySessionStore
from broker.sessions.store import SessionStore as SessionStore
from broker.sessions.updates import diff_sessions as diff_sessions
from broker.sessions.updates import parse_revoke_session as parse_revoke_session
from broker.sessions.updates import revoke_scopes as revoke_scopes
from broker.sessions.updates import update_scopes as update_scopes
from broker.sessions.validation import parse_create_session as parse_create_session
