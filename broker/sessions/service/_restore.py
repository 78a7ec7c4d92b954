"""Writing back the sessions of the dapps connected here after Redis lost its data.

Every process writes back what it knows (:meth:`ConnectedDapps.remember`): the first write of a
session wins (``SET NX``), so a dapp with tabs on several processes keeps one session. A connected
dapp whose session this process does not know (it connected a moment before the loss, and was not
looked up yet) is told that its session is gone: ``wallet_sessionChanged`` with no scopes. Sessions
of dapps connected nowhere cannot be written back by anyone; they are simply gone.
"""

from __future__ import annotations

from broker.redis import Repair
from broker.sessions import SessionStore, decode_session, is_expired
from broker.sessions.service._connected import ConnectedDapps
from broker.sessions.service._fanout import ChangeFanOut
from broker.sessions.wall_clock import WallClock


async def restore_sessions(
    dapps: ConnectedDapps, store: SessionStore, fanout: ChangeFanOut, clock: WallClock
) -> Repair:
    """Write back the known sessions of the dapps connected here; tell the others."""
    repair = Repair()
    restored = told = 0
    now = clock.now()
    for identity in list(dapps.by_identity):
        if not dapps.known(identity):
            told += fanout.tell_lost(identity)
            continue
        data = dapps.recall(identity)
        if data is None:
            continue  # it had no session: nothing was lost
        session = decode_session(data)
        if is_expired(session, now):
            continue  # over anyway: the expiry watch tells its connections
        # False: another process (or the dapp) wrote it first; either way it is back.
        await store.restore(session, data)
        restored += 1
    repair.repaired["sessions"] = restored
    repair.lost["sessions not known here (their connections were told)"] = told
    repair.lost_uncounted.append("the sessions of dapps connected to no process")
    return repair
