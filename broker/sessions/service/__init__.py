"""The multichain sessions of the dapps connected to this process (the I/O shell around
:mod:`broker.sessions`), in parts:

- :mod:`._wallet_methods`: ``wallet_createSession``, ``wallet_getSession``,
  ``wallet_invokeMethod``, ``wallet_revokeSession``, and the operator's changes;
- :mod:`._fanout`: ``wallet_sessionChanged`` to every connection of the dapp (on every process,
  through the change bus), the end of subscriptions a change no longer grants, and the changes a
  resuming connection missed;
- :mod:`._expiry_watch`: the end of sessions at their expiry;
- :mod:`._connected`: the dapps connected here, their sessions' dialect and watched expiries;
- :mod:`._service`: :class:`SessionService`, built from what it uses and wired by
  :mod:`broker.compose`.

Account methods reach the account adapter through :mod:`broker.sessions.signing`, after the approval
policy said yes.
"""

from broker.sessions.service._expiry_watch import EXPIRY_CHECK as EXPIRY_CHECK
from broker.sessions.service._service import SessionService as SessionService
