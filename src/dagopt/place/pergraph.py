"""What the per-graph learned placers of paper 004 share (HSDAG, Placeto, RNN placer).

Section 3.3 trains every learned placer on the graph it places, against the same
latency environment and, here, with the same number of measured placements. Each of
them works on the co-location groups (appendix G, ``dagopt.graph.coarsen``) with the
node features of section 2.3 (``group_features``), measures the all-on-device-0
placement first (``PerGraphSearch``: the reference latency ``l_ref`` that scales every
reward, and a result never worse than device 0), measures batches of placements
(``PerGraphSearch.measure``, one cost-model call per batch: the simulator runs a batch
in one compiled loop), counts failures, and returns the best placement measured.
The policies are small (tens of groups), so they run on one torch thread
(``one_thread``): with two threads on a loaded two-core machine, Placeto's 10 updates
on Inception-V3 took 165 s against 13 s on one thread.
"""

import contextlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from dagopt.errors import InputError
from dagopt.graph.coarsen import Coarsening, colocate
from dagopt.place.base import PlacementProblem, PlacerResult, best_index
from dagopt.progress import report

#: The latency ratio ``l / l_ref`` a failed placement counts as in the rewards of the
#: placers that use ratios (Placeto, the RNN placer); HSDAG gives it reward 0.
FAILED_RATIO = 10.0
#: Feature groups of section 2.3 that ``ablate`` may switch off (Table 3).
FEATURE_GROUPS = ("op_type", "output_shape", "degrees", "fractal", "positional")


def discounted_returns(rewards: np.ndarray, discount: float) -> np.ndarray:
    """``R_i = sum_{j >= i} discount^(j - i) r_j`` along the last axis of ``rewards``."""
    rewards = np.asarray(rewards, dtype=np.float64)
    out, running = np.zeros_like(rewards), np.zeros(rewards.shape[:-1])
    for i in range(rewards.shape[-1] - 1, -1, -1):
        running = rewards[..., i] + discount * running
        out[..., i] = running
    return out


def parse_ablate(ablate: str | None) -> tuple[str, ...]:
    """The feature groups named in ``ablate`` (comma-separated, ``""`` or None: none)."""
    names = tuple(part.strip() for part in (ablate or "").split(",") if part.strip())
    unknown = [name for name in names if name not in FEATURE_GROUPS]
    if unknown:
        raise InputError(
            f"cannot ablate {unknown[0]!r}: the feature groups are {', '.join(FEATURE_GROUPS)}"
        )
    return names


def group_features(coarse: Coarsening, ablate: tuple[str, ...] = ()) -> np.ndarray:
    """``X^(0)`` of the co-location groups, float32: a group's op type is the mean of its
    ops' one-hots (appendix G, ``Coarsening.op_mix``), then the other groups of section
    2.3 on the quotient graph; the groups in ``ablate`` are left out (Table 3)."""
    from dagopt.nn.hsdag.features import FeatureGroups, FeatureSpace

    switches = {name: name not in ablate for name in FEATURE_GROUPS if name != "op_type"}
    space = FeatureSpace.fit([coarse.quotient], FeatureGroups(op_type=False, **switches))
    parts = [space.features(coarse.quotient)]
    if "op_type" not in ablate:
        parts.insert(0, coarse.op_mix)
    x = np.concatenate(parts, axis=1).astype(np.float32)
    if x.shape[1] == 0:
        x = np.ones((coarse.quotient.num_nodes, 1), dtype=np.float32)  # every group ablated
    return x


@dataclass
class PerGraphSearch:
    """The measuring side of a per-graph learned placer (module docstring)."""

    problem: PlacementProblem
    coarse: Coarsening
    deadline: float
    failed: int = 0
    reference: float = 1.0  # l_ref: the latency of every op on device 0
    found: list[np.ndarray] = field(default_factory=list)
    costs: list[tuple[int, float]] = field(default_factory=list)
    episodes_run: int = 0
    stopped_by_time_limit: bool = False

    @classmethod
    def start(cls, problem: PlacementProblem, time_limit: float | None) -> "PerGraphSearch":
        """Coarsen the graph and measure the all-on-device-0 placement."""
        deadline = np.inf if time_limit is None else time.perf_counter() + time_limit
        search = cls(problem, colocate(problem.graph), deadline)
        ratio = search.measure(np.zeros((1, search.groups), np.int64))
        if ratio[0] < FAILED_RATIO:
            search.reference = search.costs[0][1]
        return search

    @property
    def order(self) -> np.ndarray:
        return self.problem.graph.topological_order

    @property
    def groups(self) -> int:
        return self.coarse.quotient.num_nodes

    def measure(self, group_devices: np.ndarray) -> np.ndarray:
        """Measure ``(B, groups)`` placements of the groups in one call; returns the
        latency ratios ``l / l_ref`` (``FAILED_RATIO`` for a failed placement)."""
        device_of = np.asarray(group_devices, dtype=np.int64)[:, self.coarse.group]
        orders = np.repeat(self.order[None, :], len(device_of), axis=0)
        infeasible, value = self.problem.evaluate(device_of, orders)
        self.found.extend(device_of)
        self.costs.extend(zip(infeasible.tolist(), value.tolist(), strict=True))
        self.failed += int(infeasible.sum())
        bad = (infeasible > 0) | ~(value > 0)
        return np.where(bad, FAILED_RATIO, value / self.reference)

    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline

    def cut_short(self) -> bool:
        """Whether an episode must stop where it is: the time limit has passed
        (``stopped_by_time_limit``). A pass that meets it stops unmeasured (one of
        Placeto or the RNN placer is a network step per group, past 60 s on 2,418 ops,
        GPT-2 large training), a measured episode skips its update (no episode follows
        to use it), and the episode is not counted. The placements measured so far
        stand, at least the all-on-device-0 one of ``start``."""
        if self.out_of_time():
            self.stopped_by_time_limit = True
        return self.stopped_by_time_limit

    def episodes(self, name: str, count: int) -> Iterator[int]:
        """``0 .. count - 1``: after each episode its progress is reported (``name``) and
        the loop ends early once the time limit has passed (``stopped_by_time_limit``;
        a placer whose episode ``cut_short`` stops leaves the loop itself, so that
        episode is not counted)."""
        for episode in range(int(count)):
            yield episode
            self.episodes_run = episode + 1
            report(f"{name}: episodes", episode + 1, int(count))
            if self.out_of_time() and episode + 1 < count:
                self.stopped_by_time_limit = True
                return

    def result(self, **info) -> PlacerResult:
        """The best placement measured, with ``groups``, ``failed``, ``placements``,
        ``episodes`` (those run), ``stopped_by_time_limit`` and ``best_latency``: its
        value when it was measured during the search (what paper 004's Table 2 reports;
        a noisy environment's re-measurement differs)."""
        infeasible = np.array([c[0] for c in self.costs])
        values = np.array([c[1] for c in self.costs])
        best = best_index(infeasible, values)
        info = {"groups": self.groups, "failed": self.failed, "placements": len(self.found),
                "episodes": self.episodes_run, "stopped_by_time_limit": self.stopped_by_time_limit,
                "best_latency": float(values[best]), **info}  # fmt: skip
        return PlacerResult(device_of=self.found[best], order=self.order, info=info)


def reinforce_step(optimizer, critic, log_prob, reward) -> None:
    """One REINFORCE update (``dagopt.rl``): ``critic``'s baseline for ``reward``, the
    policy-gradient loss of ``log_prob``, one ``optimizer`` step."""
    from dagopt.rl.reinforce import policy_gradient_loss

    value, _ = critic.evaluate(None, reward)
    loss = policy_gradient_loss(log_prob, reward, value)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def check_budget(episodes: int, steps: int, lr: float, hidden: int) -> None:
    """``InputError`` unless ``episodes``, ``steps`` and the policy's ``hidden`` size are
    >= 1 and ``lr`` is finite and > 0 (checked before anything is measured)."""
    sizes = {"episodes": episodes, "steps": steps, "hidden": hidden}
    small = [f"{name}={value}" for name, value in sizes.items() if not value >= 1]
    if small:
        raise InputError(
            f"a learned placer needs episodes, steps and hidden >= 1, got {', '.join(small)}"
        )
    if not (math.isfinite(lr) and lr > 0):
        raise InputError(f"a learned placer needs a finite lr > 0, got {lr}")


def torch_seed(seed: int | None) -> int:
    """A torch seed drawn from ``seed`` (so that None gives a fresh one)."""
    return int(np.random.default_rng(seed).integers(2**31))


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one intra-op thread inside the block (module docstring)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
