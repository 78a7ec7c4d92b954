"""Which upstreams may serve requests, in which order (sans-io: every call takes the time ``now``).

An upstream is HEALTHY, BENCHED (after ``bench_after`` consecutive failures, for an exponentially
growing time), PROBING (its bench ran out and one light request is checking it), or EXCLUDED for good
(it serves another chain). An upstream whose chain id was never confirmed (unreachable at start) is
BENCHED and unverified: it gets no traffic until a probe has confirmed its chain id.

Transitions (anything else raises :class:`IllegalTransition` and changes nothing)::

    state      success          failure                  claim_probe  probe_ok  probe_failed      release_probe
    HEALTHY    HEALTHY (reset)  HEALTHY, BENCHED at n *  -            HEALTHY   as failure        HEALTHY
    BENCHED    HEALTHY (reset)  BENCHED                  PROBING **   -         -                 -
    PROBING    HEALTHY (reset)  PROBING                  -            HEALTHY   BENCHED (longer)  BENCHED
    EXCLUDED   -                -                        -            -         -                 -

    *  the ``bench_after``-th consecutive failure benches it.
    ** only once the bench time is over. ``release_probe`` gives back a claim whose probe was
       cancelled before it could tell anything (due again at once, no longer bench).

Reports that race with a state change (a request that started before the bench and succeeded after
it) are accepted as the table says: any answer proves the upstream is alive again.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from adapters.backoff import Backoff


class IllegalTransition(RuntimeError):
    """A report that the upstream's state does not allow (a bug in the caller)."""


class State(enum.Enum):
    HEALTHY = "healthy"
    BENCHED = "benched"
    PROBING = "probing"
    EXCLUDED = "excluded"


@dataclass(frozen=True, slots=True)
class UpstreamStatus:
    """A snapshot of one upstream's health, for ``statistics()`` and logs."""

    label: str
    state: State
    verified: bool
    consecutive_failures: int
    benched_until: float | None
    requests: int
    failures: int


class _Upstream:
    __slots__ = ("backoff", "consecutive", "failures", "label", "requests", "state", "verified")

    def __init__(self, label: str, backoff: Backoff) -> None:
        self.label = label
        self.state = State.BENCHED
        self.verified = False
        self.backoff = backoff
        self.consecutive = 0
        self.requests = 0
        self.failures = 0


class HealthBoard:
    """The health of every upstream of one network, in priority (config) order."""

    def __init__(
        self, labels: list[str], *, bench_after: int, bench_base: float, bench_max: float
    ) -> None:
        self.bench_after = bench_after
        self._upstreams = [_Upstream(label, Backoff(bench_base, bench_max)) for label in labels]

    def __len__(self) -> int:
        return len(self._upstreams)

    # -- choosing -------------------------------------------------------------------------------

    def order(self, *, prefer: int | None = None) -> list[int]:
        """Upstreams to try for one request: the healthy ones in priority order, then, as a last
        resort, verified ones that are benched or being probed. ``prefer`` goes first if healthy."""
        healthy = [i for i, u in enumerate(self._upstreams) if u.state is State.HEALTHY]
        resting = [
            i
            for i, u in enumerate(self._upstreams)
            if u.verified and u.state in (State.BENCHED, State.PROBING)
        ]
        if prefer is not None and prefer in healthy:
            healthy.remove(prefer)
            healthy.insert(0, prefer)
        return healthy + resting

    def due_probes(self, now: float) -> list[int]:
        """Benched upstreams whose bench time is over (nobody is probing them yet)."""
        return [
            i
            for i, u in enumerate(self._upstreams)
            if u.state is State.BENCHED and u.backoff.due(now)
        ]

    def next_probe_at(self) -> float | None:
        """When the earliest bench runs out (None: nothing is benched)."""
        times = [u.backoff.not_before for u in self._upstreams if u.state is State.BENCHED]
        return min(times, default=None)

    def usable(self, index: int) -> bool:
        """Whether ``index`` is healthy (serving requests in its turn)."""
        return self._upstreams[index].state is State.HEALTHY

    def verified(self, index: int) -> bool:
        return self._upstreams[index].verified

    def state(self, index: int) -> State:
        return self._upstreams[index].state

    # -- reports --------------------------------------------------------------------------------

    def success(self, index: int) -> bool:
        """An answer (result or JSON-RPC error) came back. Returns True if it revived ``index``."""
        upstream = self._get(index, State.HEALTHY, State.BENCHED, State.PROBING)
        upstream.requests += 1
        revived = upstream.state is not State.HEALTHY
        upstream.state = State.HEALTHY
        upstream.consecutive = 0
        upstream.backoff.succeeded()
        return revived

    def failure(self, index: int, now: float) -> float | None:
        """No usable answer came back. Returns the bench time if this benched ``index``."""
        upstream = self._get(index, State.HEALTHY, State.BENCHED, State.PROBING)
        upstream.requests += 1
        upstream.failures += 1
        upstream.consecutive += 1
        if upstream.state is State.HEALTHY and upstream.consecutive >= self.bench_after:
            upstream.state = State.BENCHED
            return upstream.backoff.failed(now)
        return None

    def claim_probe(self, index: int, now: float) -> None:
        """Start probing a benched upstream whose time is over (only one prober at a time)."""
        upstream = self._get(index, State.BENCHED)
        if not upstream.backoff.due(now):
            raise IllegalTransition(
                f"{upstream.label} is benched for another {upstream.backoff.not_before - now:.3f} s"
            )
        upstream.state = State.PROBING

    def probe_ok(self, index: int, *, verified: bool = False) -> None:
        """The probe answered (and, with ``verified``, confirmed the chain id)."""
        upstream = self._get(index, State.PROBING, State.HEALTHY)
        upstream.verified = upstream.verified or verified
        upstream.state = State.HEALTHY
        upstream.consecutive = 0
        upstream.backoff.succeeded()

    def probe_failed(self, index: int, now: float) -> float | None:
        """The probe got no answer: bench again, longer. Returns the bench time."""
        upstream = self._get(index, State.PROBING, State.HEALTHY)
        if upstream.state is State.HEALTHY:
            return self.failure(index, now)
        upstream.failures += 1
        upstream.state = State.BENCHED
        return upstream.backoff.failed(now)

    def release_probe(self, index: int) -> None:
        """A claimed probe was cancelled without a verdict: benched as before, due again."""
        upstream = self._get(index, State.PROBING, State.HEALTHY)
        if upstream.state is State.PROBING:
            upstream.state = State.BENCHED

    def exclude(self, index: int) -> None:
        """Never use ``index`` again (it serves another chain)."""
        upstream = self._get(index, State.HEALTHY, State.BENCHED, State.PROBING)
        upstream.state = State.EXCLUDED

    # -- inspection -----------------------------------------------------------------------------

    def statistics(self) -> list[UpstreamStatus]:
        """A frozen snapshot of every upstream, in priority order."""
        return [
            UpstreamStatus(
                label=u.label,
                state=u.state,
                verified=u.verified,
                consecutive_failures=u.consecutive,
                benched_until=(
                    u.backoff.not_before
                    if u.state is State.BENCHED and u.backoff.failures
                    else None
                ),
                requests=u.requests,
                failures=u.failures,
            )
            for u in self._upstreams
        ]

    def _get(self, index: int, *allowed: State) -> _Upstream:
        upstream = self._upstreams[index]
        if upstream.state not in allowed:
            raise IllegalTransition(f"{upstream.label} is {upstream.state.value}")
        return upstream
