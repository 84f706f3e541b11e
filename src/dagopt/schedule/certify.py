"""How far an order is from optimal: the branch bound (``dagopt.objectives.branch_bound``,
docs/ordering.md, "Lower bounds") with a good order found first as its upper end.

The branch bound stops once its bound meets ``upper``. With the evaluated order's peak
as ``upper``, a poor order leaves it branching on every subproblem between the optimum
and that peak until the time is up, even on graphs of tens of nodes; with a near-optimal
order's peak (``approx-dp`` at ``INCUMBENT_BEAM``, given ``INCUMBENT_SHARE`` of the time)
it closes as soon as the bound reaches that peak, which is then the optimum."""

import time
from dataclasses import dataclass

from dagopt.graph import Graph
from dagopt.objectives import branch_bound, meets_bound
from dagopt.schedule.base import solve

#: The incumbent's method and beam: a near-optimal order at a small memory cost
#: (``approx-dp`` keeps ``K`` bitsets of ``n`` bits per step).
INCUMBENT_METHOD = "approx-dp"
INCUMBENT_BEAM = 1000
#: The share of the time limit the incumbent may take (it narrows its beam when out).
INCUMBENT_SHARE = 0.25


@dataclass(frozen=True)
class Certificate:
    """A lower ``bound`` on the optimal peak, the peak of the incumbent order
    (``INCUMBENT_METHOD``'s), and whether ``bound`` is the optimum (``closed``: no order
    has a lower peak)."""

    bound: float
    incumbent_peak: float
    closed: bool

    def proves(self, peak: float) -> bool:
        """Whether an order of ``peak`` is optimal by this certificate."""
        return meets_bound(peak, self.bound)


def certify(graph: Graph, peak: float, *, keep_outputs: bool, time_limit: float) -> Certificate:
    """Bound the optimal peak of ``graph`` (outputs kept or not, as in ``peak_memory``)
    from below in about ``time_limit`` seconds, for an order of ``peak``: an incumbent
    order first, then the branch bound up to the least peak known."""
    deadline = time.perf_counter() + time_limit
    incumbent = solve(
        graph,
        INCUMBENT_METHOD,
        seed=0,
        time_limit=INCUMBENT_SHARE * time_limit,
        keep_outputs=keep_outputs,
        beam_width=INCUMBENT_BEAM,
    )
    if incumbent.proved_optimal:  # the beam held every state: exact DP
        return Certificate(incumbent.peak_memory, incumbent.peak_memory, True)
    found = branch_bound(
        graph,
        upper=min(peak, incumbent.peak_memory),  # the least peak known
        keep_outputs=keep_outputs,
        time_limit=max(0.0, deadline - time.perf_counter()),
    )
    return Certificate(found.bound, incumbent.peak_memory, found.optimal)
