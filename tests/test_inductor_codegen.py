"""The memory Inductor's generated CPU code holds (``dagopt.io.inductor_codegen``): the
model's peak is the peak the CPU allocator measures where Inductor's estimate (and the
``SchedulerGraph`` built on it) is off, and each rule behaves as the generated code does
on hand-made kernels."""

import functools

import numpy as np
import pytest
import torch
from torch._inductor.memory import estimate_peak_memory

from dagopt.integrations.torch_compile import measured_peak
from dagopt.io.inductor import current_scheduler_graph
from dagopt.io.inductor_codegen import (
    ALONE,
    GROUPED,
    MAX_GROUP_ARGUMENTS,
    NO_OP,
    CodegenMemory,
    InPlace,
    codegen_memory,
)
from dagopt.objectives import peak_memory
from dagopt.schedule.compiled import kernel_order
from scheduler_passes import with_scheduler_pass


def concatenation(x):
    """Three kernels write straight into the concatenation's output."""
    return torch.cat([x.sin(), x.cos(), x.exp()]).sum(0)


def in_place(x, w):
    """The relu kernel writes into the matmul's output, its last reader."""
    return (x @ w).relu() * 2


def reduction_read_back(x):
    """One C++ call: a row maximum that the next loop (over other ranges) loads back,
    and a column sum: all three buffers allocated before the call."""
    t = x.sin() + 1
    s = (t - t.amax(1, keepdim=True)).exp()
    return s / s.sum(0)


def group_around_an_extern(x):
    """Generated kernels on both sides of an extern ``cumsum``."""
    a = x.sum(1, keepdim=True)
    b = torch.softmax(x + a, 1)
    return (b * 3).cumsum(0).sum(0) + b.sum()


def given_order_peaks(function, args) -> tuple[int, int, int, int]:
    """Inductor's own estimate, the graph's peak and the generated code's
    (``codegen_memory``) of the order Inductor hands its scheduler pass, and the measured
    peak of a call in that order."""
    seen = []

    def record(kernels):
        sched = current_scheduler_graph(kernels)
        inductors, _ = estimate_peak_memory(kernels, sched.freeable_inputs, sched.graph_outputs)
        estimate = int(peak_memory(sched.graph, sched.node_order(kernels)))
        modelled = codegen_memory(sched).peak(np.arange(len(kernels)))
        seen.append((inductors, estimate, modelled))
        return kernels

    with with_scheduler_pass(record):
        compiled = torch.compile(function)
        compiled(*args)
        measured = measured_peak(functools.partial(compiled, *args))
    [(inductors, estimate, modelled)] = seen
    return inductors, estimate, modelled, measured


X, W = torch.randn(256, 512), torch.randn(512, 512)


@pytest.mark.parametrize(
    "function, args",
    [(in_place, (X, W)), (reduction_read_back, (X,)), (group_around_an_extern, (X,))],
)
def test_codegen_memory_is_the_measured_peak_where_the_graph_is_not(function, args):
    _, estimate, modelled, measured = given_order_peaks(function, args)
    assert modelled == measured != estimate


def test_the_graph_counts_a_concatenations_inputs_as_views_into_its_output():
    # Inductor's own estimate counts each input and the output: 3 + 3 buffers of 512 KB
    inductors, estimate, modelled, measured = given_order_peaks(concatenation, (X,))
    assert estimate == modelled == measured < inductors == 6 * 256 * 512 * 4


def memory(kinds, storages, *, in_place=None, arguments=None, workspaces=None):
    """A ``CodegenMemory`` from ``storages``: (bytes, allocating kernel, readers, kept)."""
    n = len(kinds)
    return CodegenMemory(
        kinds=np.asarray(kinds),
        workspaces=np.asarray(workspaces or [0] * n, dtype=np.int64),
        arguments=tuple(arguments or [frozenset()] * n),
        in_place=tuple(tuple(c for c in in_place or () if c.kernel == k) for k in range(n)),
        sizes=np.asarray([s[0] for s in storages], dtype=np.int64),
        owner=np.arange(len(storages)),
        allocator=np.asarray([s[1] for s in storages]),
        readers=tuple(np.asarray(s[2], dtype=np.int64) for s in storages),
        kept=np.asarray([s[3] for s in storages]),
    )


# kernel 0 makes A (100, read by 1), kernel 1 makes B (100, read by 3), kernel 2 (an extern
# with nothing to do with them) makes C (10, a graph output), kernel 3 makes D (1, kept)
CHAIN = [(100, 0, [0, 1], False), (100, 1, [1, 3], False), (10, 2, [2], True), (1, 3, [3], True)]


def test_a_group_allocates_all_its_buffers_before_its_call_and_frees_them_after():
    grouped = memory([GROUPED, GROUPED, ALONE, GROUPED], CHAIN)
    # 0 and 1 are one call: A and B at once; the extern between 1 and 3 ends that call
    assert grouped.peak([0, 1, 2, 3]) == 200
    # with the extern first, 0, 1 and 3 are one call: A, B and D at once, C already live
    assert grouped.peak([2, 0, 1, 3]) == 211
    # each kernel a call of its own (another device): Inductor's estimate
    assert memory([ALONE] * 4, CHAIN).peak([0, 1, 2, 3]) == 200
    assert memory([ALONE] * 4, CHAIN).peak([2, 0, 1, 3]) == 210


def test_a_no_op_frees_at_the_next_flush_and_the_argument_limit_ends_a_group():
    storages = [(100, 0, [0, 1], False), (50, 2, [2], True)]
    # A's last reader is the no-op 1: freed when the extern 2 flushes, before C
    assert memory([ALONE, NO_OP, ALONE], storages).peak([0, 1, 2]) == 100
    many = [frozenset(f"buf{i}" for i in range(k, k + MAX_GROUP_ARGUMENTS)) for k in (0, 1)]
    storages = [(100, 0, [0], False), (50, 1, [1], False), (1, 2, [2], False)]
    assert memory([GROUPED] * 3, storages).segments(np.arange(3)).tolist() == [0, 0, 0]
    # 501 distinct arguments once kernel 1 joins: the group is called after it
    split = memory([GROUPED] * 3, storages, arguments=[*many, frozenset()])
    assert split.segments(np.arange(3)).tolist() == [0, 0, 1]
    assert split.peak([0, 1, 2]) == 150


def test_an_in_place_update_needs_the_inputs_other_readers_to_have_run():
    # kernel 1 may write B into A (A's other reader, kernel 2, must run first)
    storages = [(100, 0, [0, 1, 2], False), (100, 1, [1, 3], False), (5, 2, [2], True)]
    update = InPlace(kernel=1, output=1, input=0, after=(2,))
    model = memory([ALONE] * 4, storages, in_place=[update])
    assert model.peak([0, 2, 1, 3]) == 105  # B takes A's memory
    assert model.peak([0, 1, 2, 3]) == 205  # kernel 2 still reads A: no update


def test_workspaces_count_while_their_kernel_runs():
    model = memory([ALONE, ALONE], [(100, 0, [0, 1], False)], workspaces=[0, 30])
    assert model.peak([0, 1]) == 130


def test_the_pass_reports_the_generated_codes_peak_of_the_order_it_keeps():
    torch._dynamo.reset()
    with kernel_order("anytime", time_limit=0.5, seed=0) as order_pass:
        compiled = torch.compile(in_place)
        compiled(X, W)
        measured = measured_peak(functools.partial(compiled, X, W))
    torch._dynamo.reset()
    [report] = order_pass.reports
    assert report.chosen_peak == measured
