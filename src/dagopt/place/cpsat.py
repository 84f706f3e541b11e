"""Exact joint placement and scheduling with OR-Tools CP-SAT (paper 003, section 3.2 (7)).

Paper 003 runs "Constraint Programming (CP) [CP-SAT], an enumerative approach to
establish provably global optima". This placer models the cost model of appendix A.1
(``dagopt.objectives.placement``, free transfers) exactly, so an optimum proved by
CP-SAT is an optimum of ``simulate`` over every placement and every topological order:

- **Decisions.** ``x[v, k]``: op ``v`` runs on device ``k``; ``pos[v]``: its position in
  the priority order (all different, edges increasing). ``seq(a, b)`` = same device and
  ``pos[a] < pos[b]``: the per-device sequences of the list scheduler.
- **Times** (integers): ``start[v] = max(avail[v], finish of its inputs)`` with
  ``avail[v]`` the latest finish among the ops before it on its device (max equalities,
  plus a redundant no-overlap per device). These are exactly the simulator's times.
- **Memory.** The peak of a device is reached right after an op's start or after the
  pulls of its remote inputs at one instant (the *checkpoints*); every other event only
  frees memory. At a checkpoint of op ``o`` a tensor ``x`` is live when (output on
  ``o``'s device) ``x`` came earlier and still has a later local consumer or an outgoing
  transfer at a later ``(time, priority)`` key, or (copy) an earlier consumer on ``o``'s
  device pulled it and a later one still needs it, or ``o`` pulled it at or before the
  checkpoint. Ties at one instant follow the priority order, as in the simulator.
  Liveness literals are only bounded from below: the objective pushes them down.
- **Objective.** The lexicographic cost of ``placement_cost`` as one integer: ``value``
  when every device fits its limit, else ``big + overflow`` with ``big`` above any value.

Op durations (``runtime / speed``, or the given ``(n, d)`` runtimes) and sizes are scaled
to integers by their greatest common dyadic unit. When that is exact (e.g. integer
runtimes, speeds that are powers of two, integer byte sizes) the model is exact and an
``OPTIMAL`` status, confirmed by re-simulating the answer, gives ``proved_optimal``.
Otherwise (e.g. log-normal float runtimes) values are rounded to 2**-24 of their total:
CP-SAT still searches, but ``proved_optimal`` is False. Only free transfers (zero
latency, infinite bandwidth, the setup of section 3.1) are modelled, and only the
simulated cost model (``SimulatedCostModel``), which this model reproduces.

Search starts from a hint (every op on the fastest device, or the ``hint`` option).
Presolve is switched off above ``PRESOLVE_HORIZON`` time units: with fine time scales
it spends the whole time limit on fragmented domains of the start times. The model has
O((n + e) n) literals: graphs of 10-15 ops are usually solved in seconds; at 100 ops and
more CP-SAT only improves on its hint, or finds nothing in the time limit.
"""

import math
import reprlib
import threading
from fractions import Fraction
from itertools import pairwise
from time import perf_counter

import numpy as np
from ortools.sat.python import cp_model

from dagopt.configs import check_option
from dagopt.errors import InputError, SolverError
from dagopt.graph import validate_order
from dagopt.objectives.placement import SimulatedCostModel, placement_cost
from dagopt.place.base import PlacementProblem, PlacerResult, get_placer, register_placer

DEFAULT_TIME_LIMIT = 60.0
EXACT_UNITS = 2**40  # most integer units an exact scale may use (times or bytes)
ROUNDED_UNITS = 2**24  # resolution of a rounded scale, relative to the total
PRESOLVE_HORIZON = 4096  # above it, CP-SAT's presolve drowns in fragmented time domains


def integer_scale(values: np.ndarray) -> tuple[float, np.ndarray, bool]:
    """``(unit, ints, exact)`` with ``values ~ ints * unit`` (non-negative floats).

    Exact when every value is a multiple of one dyadic unit, the total fits
    ``EXACT_UNITS`` units and float sums of the values are exact (below 2**53 of the
    finest unit): then the simulator's float arithmetic is the model's integer one.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    fractions = [Fraction(float(v)) for v in values]
    denominator = math.lcm(1, *(f.denominator for f in fractions))
    numerators = [int(f * denominator) for f in fractions]
    unit = math.gcd(*numerators) or 1
    if sum(numerators) < 2**53 and sum(numerators) // unit <= EXACT_UNITS:
        ints = np.array([m // unit for m in numerators], dtype=np.int64)
        return unit / denominator, ints, True
    scale = float(values.sum()) / ROUNDED_UNITS
    return scale, np.rint(values / scale).astype(np.int64), False


class _Builder:
    """The CP-SAT model of one ``PlacementProblem``; see the module docstring."""

    def __init__(self, problem: PlacementProblem, deadline: float = math.inf):
        graph = problem.graph
        self.problem, self.deadline = problem, deadline
        self.simulator = _simulator(problem)
        self.model = cp_model.CpModel()
        self.n = n = graph.num_nodes
        self.succ = [graph.successors(v).tolist() for v in range(n)]
        self.pred = [set(graph.predecessors(v).tolist()) for v in range(n)]
        self.reach = graph.closure_matrix
        self._before: dict = {}
        self._same: dict = {}
        self._seq: dict = {}
        self._any: dict = {}
        self._decisions()
        self._times()
        # Memory: needed for the peak objective, or when some limit can be exceeded.
        limits = problem.devices.memory_limits
        upper = float(graph.mem.sum() + graph.param_mem.max())  # no peak exceeds it
        self.binding = [k for k in range(len(limits)) if limits[k] < upper]
        self.big = None
        if problem.objective == "runtime" and not self.binding:
            self.exact, self.value_unit = self.time_exact, self.time_unit
            self.model.minimize(self.makespan)
            return
        sizes = np.concatenate([graph.mem, graph.param_mem, limits[self.binding]])
        self.mem_unit, ints, mem_exact = integer_scale(sizes)
        self.exact = self.time_exact and mem_exact
        self.mem, self.param, self.limit = ints[:n], ints[n : 2 * n], ints[2 * n :]
        self.ub = int(self.mem.sum() + self.param.max())
        self.peak = [self.model.new_int_var(0, self.ub, "") for _ in limits]
        self._memory()
        self._objective()

    def _check_time(self) -> None:
        """``SolverError`` once building the model runs past the time limit: the model
        grows as ops x (ops + edges), beyond reach for graphs of thousands of ops."""
        if perf_counter() > self.deadline:
            raise SolverError(
                f"cp-sat could not build its model of {self.n:,} ops within the time limit; "
                "it is exact for graphs of tens of ops: use brkga or regal for larger ones"
            )

    def _decisions(self) -> None:
        """Devices ``x``, priority positions ``pos``, and the device symmetry breaking."""
        m, n, d = self.model, self.n, self.problem.num_devices
        self.x = [[m.new_bool_var("") for _ in range(d)] for _ in range(n)]
        for v in range(n):
            m.add_exactly_one(self.x[v])
        self._break_device_symmetry(self.problem.devices)
        ancestors, descendants = self.reach.sum(axis=0), self.reach.sum(axis=1)
        self.pos = [
            m.new_int_var(int(ancestors[v]), n - 1 - int(descendants[v]), "") for v in range(n)
        ]
        m.add_all_different(self.pos)
        for u, w in zip(*self.problem.graph.edges, strict=True):
            m.add(self.pos[int(u)] < self.pos[int(w)])

    def _times(self) -> None:
        """Integer start and finish times of the list scheduler, and the makespan."""
        m, n = self.model, self.n
        q = self.simulator.durations  # (n, d) seconds, as the simulator
        self.time_unit, dur, self.time_exact = integer_scale(q)
        dur = dur.reshape(q.shape)
        self.horizon = horizon = int(dur.max(axis=1).sum())  # no device ever idles alone
        self.start = [m.new_int_var(0, horizon, "") for _ in range(n)]
        self.finish = [m.new_int_var(0, horizon, "") for _ in range(n)]
        self.avail = [m.new_int_var(0, horizon, "") for _ in range(n)]
        for v in range(n):
            self._check_time()
            duration = sum(int(t) * x for t, x in zip(dur[v], self.x[v], strict=True))
            m.add(self.finish[v] == self.start[v] + duration)
            earlier = []
            for a in range(n):
                s = self.seq(a, v) if a != v else False
                if s is True:
                    earlier.append(self.finish[a])
                elif s is not False:
                    earlier.append(self.finish[a] + horizon * s - horizon)
            m.add_max_equality(self.avail[v], [0, *earlier])
            inputs = [self.finish[u] for u in self.pred[v]]
            m.add_max_equality(self.start[v], [self.avail[v], *inputs])
        for k in range(dur.shape[1]):
            intervals = [
                m.new_optional_fixed_size_interval_var(
                    self.start[v], int(dur[v, k]), self.x[v][k], ""
                )
                for v in range(n)
            ]
            m.add_no_overlap(intervals)
        self.makespan = m.new_int_var(0, horizon, "")
        for v in range(n):
            m.add(self.makespan >= self.finish[v])

    def _objective(self) -> None:
        """``value``, or ``big + overflow`` when a device exceeds its limit (A.2)."""
        m = self.model
        if self.problem.objective == "runtime":
            value, value_ub, self.value_unit = self.makespan, self.horizon, self.time_unit
        else:
            value, value_ub, self.value_unit = m.new_int_var(0, self.ub, ""), self.ub, self.mem_unit
            for peak in self.peak:
                m.add(value >= peak)
        if not self.binding:
            m.minimize(value)
            return
        infeasible = m.new_bool_var("")
        overflow = []
        for k, limit in zip(self.binding, self.limit.tolist(), strict=True):
            m.add(self.peak[k] <= limit).only_enforce_if(~infeasible)
            over = m.new_int_var(0, self.ub, "")
            m.add(over >= self.peak[k] - limit)
            overflow.append(over)
        self.big = value_ub + 1
        objective = m.new_int_var(0, self.big + self.ub * len(overflow), "")
        m.add(objective >= value).only_enforce_if(~infeasible)
        m.add(objective >= self.big + sum(overflow)).only_enforce_if(infeasible)
        m.minimize(objective)

    def add_hint(self, device_of, order) -> None:
        """Hint a placement and a topological order to start the search from.

        Identical devices are relabelled in the order of their first op, as the symmetry
        breaking of ``_break_device_symmetry`` requires.
        """
        order = validate_order(self.problem.graph, order)
        try:
            device_of = np.asarray(device_of)
        except ValueError:  # ragged nested lists: rejected just below
            device_of = np.empty(0)
        if (
            device_of.shape != (self.n,)
            or device_of.dtype.kind not in "iu"
            or not np.isin(device_of, range(len(self.x[0]))).all()
        ):
            raise InputError(f"a hint must place each of the {self.n} ops on a device")
        device_of = device_of.astype(np.int64)
        for group in self.groups:
            first: dict[int, int] = {}
            for v, k in enumerate(device_of.tolist()):
                if k in group:
                    first.setdefault(k, v)
            relabel = dict(zip(sorted(first, key=first.get), group, strict=False))
            device_of = np.array([relabel.get(k, k) for k in device_of.tolist()])
        self.model.clear_hints()
        for v in range(self.n):
            for k, lit in enumerate(self.x[v]):
                self.model.add_hint(lit, int(device_of[v] == k))
        for i, v in enumerate(order.tolist()):
            self.model.add_hint(self.pos[v], i)

    # -------------------------------------------------------------- order literals
    def _break_device_symmetry(self, devices) -> None:
        """Identical devices are interchangeable: order them by their smallest op index.

        Devices are identical when their speed, memory and op durations are all equal.
        """
        durations = self.simulator.durations
        groups: dict[tuple[float, float, bytes], list[int]] = {}
        for k, spec in enumerate(devices.specs):
            key = (spec.speed, spec.memory, durations[:, k].tobytes())
            groups.setdefault(key, []).append(k)
        self.groups = [group for group in groups.values() if len(group) > 1]
        for group in self.groups:
            for prev, k in pairwise(group):
                for v in range(self.n):
                    self.model.add_bool_or([~self.x[v][k], *(self.x[u][prev] for u in range(v))])

    def before(self, a: int, b: int):
        """``pos[a] < pos[b]``: a literal, or a bool when the graph decides it."""
        if self.reach[a, b]:
            return True
        if self.reach[b, a]:
            return False
        if a > b:
            return ~self.before(b, a)
        if (a, b) not in self._before:
            lit = self._before[a, b] = self.model.new_bool_var("")
            self.model.add(self.pos[a] < self.pos[b]).only_enforce_if(lit)
            self.model.add(self.pos[b] < self.pos[a]).only_enforce_if(~lit)
        return self._before[a, b]

    def same(self, a: int, b: int):
        """``a`` and ``b`` run on the same device."""
        a, b = min(a, b), max(a, b)
        if (a, b) not in self._same:
            lit = self._same[a, b] = self.model.new_bool_var("")
            for xa, xb in zip(self.x[a], self.x[b], strict=True):
                self.model.add(xa == xb).only_enforce_if(lit)
                self.model.add_bool_or([~xa, ~xb]).only_enforce_if(~lit)
        return self._same[a, b]

    def seq(self, a: int, b: int):
        """``a`` runs before ``b`` on the same device."""
        order = self.before(a, b)
        if order is False:
            return False
        if order is True:
            return self.same(a, b)
        if (a, b) not in self._seq:
            lit = self._seq[a, b] = self.model.new_bool_var("")
            same = self.same(a, b)
            self.model.add_implication(lit, same)
            self.model.add_implication(lit, order)
            self.model.add_bool_or([~same, ~order, lit])
        return self._seq[a, b]

    def any_of(self, key, terms):
        """A literal implied by each of ``terms`` (a lower bound of their disjunction)."""
        if key in self._any:
            return self._any[key]
        terms = [t for t in terms if t is not False]
        if any(t is True for t in terms):
            lit = True
        elif not terms:
            lit = False
        elif len(terms) == 1:
            lit = terms[0]
        else:
            lit = self.model.new_bool_var("")
            for t in terms:
                self.model.add_implication(t, lit)
        self._any[key] = lit
        return lit

    def all_of(self, terms):
        """``terms`` without the constant True ones, or None when one is False."""
        if any(t is False for t in terms):
            return None
        return [t for t in terms if t is not True]

    # -------------------------------------------------------------- memory
    def _memory(self) -> None:
        """Per-device peaks bounded below by the live bytes at every checkpoint."""
        m, n, horizon = self.model, self.n, self.horizon
        key_range = (horizon + 1) * n  # (time, priority) keys are time * n + pos
        # pulled[u, w]: w is the first consumer of u on its device, another than u's.
        pulled, pull_time = {}, {}
        for u in range(n):
            self._check_time()
            for w in self.succ[u]:
                conj = self.all_of(
                    [~self.same(u, w), *(_neg(self.seq(c, w)) for c in self.succ[u] if c != w)]
                )
                if conj is None:
                    continue
                lit = m.new_bool_var("")
                m.add_bool_and(conj).only_enforce_if(lit)
                m.add_bool_or([*(~c for c in conj), lit])
                pulled[u, w] = lit
                pull_time[u, w] = m.new_int_var(0, horizon, "")
                m.add_max_equality(pull_time[u, w], [self.avail[w], self.finish[u]])
        # last_transfer[x] >= (time, priority) key of every transfer of x's output.
        last_transfer = {}
        for x in range(n):
            keys = [(w, pulled[x, w]) for w in self.succ[x] if (x, w) in pulled]
            if keys:
                last = last_transfer[x] = m.new_int_var(-key_range, key_range, "")
                for w, lit in keys:
                    m.add(last >= pull_time[x, w] * n + self.pos[w] - key_range * (1 - lit))

        # Checkpoints: (owner o, time, constant bytes, op pulled or None, enforcement).
        checkpoints = [
            (o, self.start[o], int(self.mem[o] + self.param[o]), None, []) for o in range(n)
        ]
        for (u, w), lit in pulled.items():
            checkpoints.append((w, pull_time[u, w], int(self.mem[u]), u, [lit]))
        for o, time, constant, u, enforce in checkpoints:
            self._check_time()
            terms = []
            for x in range(n):
                if x in (o, u) or self.reach[o, x]:
                    continue
                if u is None and x in self.pred[o]:
                    constant += int(self.mem[x])  # inputs are live at the op's start
                    continue
                conds = self._live_conditions(x, o, time, u, last_transfer, pulled)
                conds = [c for c in map(self.all_of, conds) if c is not None]
                if not conds:
                    continue
                if any(not c for c in conds):
                    constant += int(self.mem[x])
                    continue
                live = m.new_bool_var("")
                for conj in conds:
                    m.add_bool_or([*(~c for c in conj), live])
                terms.append(int(self.mem[x]) * live)
            load = m.new_int_var(0, self.ub, "")
            m.add(load >= constant + sum(terms))
            for k, peak in enumerate(self.peak):
                m.add(peak >= load).only_enforce_if([self.x[o][k], *enforce])

    def _live_conditions(self, x, o, time, u, last_transfer, pulled) -> list[list]:
        """Conjunctions, any of which makes ``x``'s tensor live at a checkpoint of ``o``.

        ``u`` is the op whose pull the checkpoint follows (None: ``o``'s start).
        """
        m = self.model
        late = self.any_of(("late", x, o), [self.seq(o, c) for c in self.succ[x] if c != o])
        early = self.any_of(("early", x, o), [self.seq(c, o) for c in self.succ[x] if c != o])
        consumer = o in self.succ[x]
        # x's output on o's device: made earlier, used later (locally or by a transfer).
        earlier = self.seq(x, o)
        conds = [[earlier, True if consumer else late]]
        if x in last_transfer:
            after = m.new_bool_var("")
            m.add(last_transfer[x] <= time * self.n + self.pos[o]).only_enforce_if(~after)
            conds.append([earlier, after])
        # A copy of x on o's device: pulled before and still needed, or pulled by o now.
        remote = _neg(self.same(x, o))
        conds.append([remote, early, True if consumer else late])
        if consumer and (x, o) in pulled:
            # o pulls its inputs by (finish, priority); among the pulls at one instant the
            # one of latest finish sees them all, so comparing finishes is enough.
            done = m.new_bool_var("")
            m.add(self.finish[x] >= self.finish[u] + 1).only_enforce_if(~done)
            conds.append([pulled[x, o], done])
        return conds


def _default_hint(problem: PlacementProblem) -> tuple[np.ndarray, np.ndarray]:
    """Every op on the fastest device, in the graph's topological order."""
    graph = problem.graph
    fastest = int(np.argmax(problem.speeds))
    return np.full(graph.num_nodes, fastest), graph.topological_order


def _solve_interruptibly(solver: cp_model.CpSolver, model: cp_model.CpModel) -> int:
    """``solver.solve(model)`` in a worker thread, so that Ctrl-C reaches this (main)
    thread at once: it stops the search and is raised as ``KeyboardInterrupt``, as
    everywhere in dagopt (CP-SAT's own SIGINT handling would end the search as if the
    time limit were reached and report its best placement as the answer)."""
    solver.parameters.catch_sigint_signal = False
    outcome: list = []

    def solve() -> None:
        try:
            outcome.append(solver.solve(model))
        except BaseException as exc:  # raised again in this thread below
            outcome.append(exc)

    worker = threading.Thread(target=solve, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        solver.stop_search()
        worker.join()
        raise
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _neg(lit):
    return (not lit) if isinstance(lit, bool) else ~lit


def _simulator(problem: PlacementProblem) -> SimulatedCostModel:
    """The problem's simulator: cp-sat models 003 A.1's simulator, no other cost model."""
    if not isinstance(problem.cost_model, SimulatedCostModel):
        raise InputError(
            "cp-sat models the simulated cost model of 003 A.1 only, got "
            f"{type(problem.cost_model).__name__}"
        )
    return problem.cost_model


def _check_transfers(problem: PlacementProblem) -> None:
    devices = problem.devices
    if devices.latency != 0 or not math.isinf(devices.bandwidth):
        raise InputError(
            "cp-sat models free transfers only (latency 0, infinite bandwidth, as in "
            f"section 3.1 of paper 003), got latency={devices.latency} "
            f"bandwidth={devices.bandwidth}"
        )


@register_placer(
    "cp-sat",
    "exact placement and order by OR-Tools CP-SAT, proved optimal when it finishes (003 3.2 (7))",
    ("num_workers", "hint", "warm_start"),
)
def cp_sat(
    problem: PlacementProblem,
    *,
    seed=None,
    time_limit=None,
    num_workers: int = 2,
    hint: tuple | None = None,
    warm_start: str | None = None,
) -> PlacerResult:
    """Solve ``problem`` with CP-SAT for up to ``time_limit`` seconds (60 by default).

    ``seed`` seeds CP-SAT's search and ``num_workers`` sets its parallel workers.
    ``hint`` is a ``(device_of, order)`` to start from (e.g. another placer's answer);
    ``warm_start`` names another placer (e.g. ``"brkga"``) whose answer becomes the hint
    (its run counts in the time); by default CP-SAT starts from every op on the fastest
    device in topological order.
    ``proved_optimal`` is True when CP-SAT proved the exact model optimal and the
    re-simulated cost equals the model's. ``info`` holds the CP-SAT ``status``, the
    lexicographic ``objective_bound`` (no solution costs less), the ``model_cost`` of the
    answer (at least its simulated cost; equal once proved), whether the integer model is
    ``exact``, and the solver's ``wall_time``.
    Raises ``InputError`` for costly transfers or a cost model other than the simulator,
    and ``SolverError`` when no solution is found in time.
    """
    _simulator(problem)
    _check_transfers(problem)
    if check_option("num_workers", num_workers, int) < 0:
        raise InputError(f"num_workers must be >= 0 (0: all cores), got {num_workers}")
    if hint is not None and not (isinstance(hint, tuple | list) and len(hint) == 2):
        raise InputError(f"a hint is a pair (device_of, order), got {reprlib.repr(hint)}")
    if problem.graph.num_nodes == 0:
        empty = np.zeros(0, dtype=np.int64)
        return PlacerResult(empty, empty, proved_optimal=True, info={"status": "OPTIMAL"})
    if warm_start is not None:
        if hint is not None:
            raise InputError("give cp-sat a hint or a warm_start method, not both")
        start = get_placer(warm_start).fn(problem, seed=seed)
        hint = (start.device_of, start.order)
    limit = DEFAULT_TIME_LIMIT if time_limit is None else float(time_limit)
    began = perf_counter()
    builder = _Builder(problem, deadline=began + limit)
    builder.add_hint(*(_default_hint(problem) if hint is None else hint))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.0, limit - (perf_counter() - began))
    solver.parameters.num_workers = int(num_workers)
    solver.parameters.random_seed = 0 if seed is None else int(seed) % 2**31
    solver.parameters.cp_model_presolve = builder.horizon <= PRESOLVE_HORIZON
    status = _solve_interruptibly(solver, builder.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise SolverError(
            f"cp-sat found no placement of {problem.graph.name!r} "
            f"({solver.status_name(status)} after {solver.wall_time:.2f} s)"
        )
    n, d = builder.n, problem.num_devices
    device_of = np.array(
        [next(k for k in range(d) if solver.boolean_value(builder.x[v][k])) for v in range(n)],
        dtype=np.int64,
    )
    order = np.argsort([solver.value(p) for p in builder.pos], kind="stable").astype(np.int64)
    cost = _lexicographic(builder, solver.objective_value)
    simulated = builder.simulator.simulate(device_of, order)
    actual = placement_cost(simulated, problem.objective)
    matches = actual[0] == cost[0] and math.isclose(actual[1], cost[1], rel_tol=1e-9)
    return PlacerResult(
        device_of=device_of,
        order=order,
        proved_optimal=bool(status == cp_model.OPTIMAL and builder.exact and matches),
        info={
            "status": solver.status_name(status),
            "objective_bound": _lexicographic(builder, solver.best_objective_bound),
            "model_cost": cost,
            "exact": builder.exact,
            "wall_time": solver.wall_time,
        },
    )


def _lexicographic(builder: _Builder, objective: float) -> tuple[int, float]:
    """The model's integer objective as ``placement_cost``'s ``(infeasible, value)``."""
    value = round(objective)
    if builder.big is not None and value >= builder.big:
        return 1, (value - builder.big) * builder.mem_unit
    return 0, value * builder.value_unit
