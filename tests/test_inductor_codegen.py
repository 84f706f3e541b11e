"""The memory Inductor's generated CPU code holds (``dagopt.io.inductor_codegen``): the
model's peak is the peak the CPU allocator measures where Inductor's estimate (and the
``SchedulerGraph`` built on it) is off, and each rule behaves as the generated code does
on hand-made kernels."""

import dataclasses
import functools

import numpy as np
import pytest
import torch
import torch._inductor.config as inductor_config
from torch._inductor.memory import estimate_peak_memory

from codegen_memories import memory
from dagopt.integrations.torch_compile import measured_peak
from dagopt.io.inductor import current_scheduler_graph
from dagopt.io.inductor_codegen import (
    ALONE,
    GROUPED,
    MAX_GROUP_ARGUMENTS,
    NO_OP,
    InPlace,
    codegen_memory,
)
from dagopt.io.inductor_estimate import InductorEstimate, inductor_estimate
from dagopt.objectives import peak_memory
from dagopt.schedule.compiled import _inductor_orders, kernel_order
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


def softmax_chain(x, w):
    """Each softmax keeps its exponentials row by row in a buffer local to the kernel's
    outer loop."""
    a = (x @ w).softmax(1)
    b = (a @ w).softmax(1)
    return (b @ w).sum(1)


def layer_norms(x, w):
    """The wrapper keeps a freed layer-norm statistic for a later one of its size."""
    a = torch.nn.functional.layer_norm(x, (512,))
    b = torch.nn.functional.gelu(a @ w) @ w
    return torch.nn.functional.layer_norm(b + x, (512,)) @ w


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
    [
        (in_place, (X, W)),
        (reduction_read_back, (X,)),
        (group_around_an_extern, (X,)),
        (layer_norms, (X, W)),
    ],
)
def test_codegen_memory_is_the_measured_peak_where_the_graph_is_not(function, args):
    _, estimate, modelled, measured = given_order_peaks(function, args)
    assert modelled == measured != estimate


def test_a_softmax_keeps_its_exponentials_in_a_buffer_local_to_its_outer_loop():
    with inductor_config.patch(allow_buffer_reuse=False):  # nothing held for later
        _, estimate, modelled, measured = given_order_peaks(softmax_chain, (X, W))
    assert modelled == measured == estimate - 256 * 512 * 4


def test_the_graph_counts_a_concatenations_inputs_as_views_into_its_output():
    # Inductor's own estimate counts each input and the output: 3 + 3 buffers of 512 KB
    inductors, estimate, modelled, measured = given_order_peaks(concatenation, (X,))
    assert estimate == modelled == measured < inductors == 6 * 256 * 512 * 4


def test_the_buffer_pool_holds_a_freed_buffer_for_a_later_one_of_its_key():
    seen = []

    def record(kernels):
        pooled = codegen_memory(current_scheduler_graph(kernels))
        unpooled = dataclasses.replace(pooled, takes=np.zeros_like(pooled.takes))
        order = np.arange(len(kernels))
        seen.append((pooled.peak(order), unpooled.peak(order)))
        return kernels

    for reuse in (True, False):
        with with_scheduler_pass(record), inductor_config.patch(allow_buffer_reuse=reuse):
            compiled = torch.compile(layer_norms)
            compiled(X, W)
            seen.append(measured_peak(functools.partial(compiled, X, W)))
    [(pooled, unpooled), measured, (off, same), measured_off] = seen
    assert measured == pooled > unpooled
    assert measured_off == off == same == unpooled  # the pool turned off: nothing is held


def test_inductors_estimate_step_by_step_of_any_order():
    seen = []

    def record(kernels):
        sched = current_scheduler_graph(kernels)
        estimate = inductor_estimate(sched)
        for order in _inductor_orders(kernels, sched):
            position = np.empty(len(kernels), dtype=np.int64)
            position[sched.indices(order)] = np.arange(len(kernels))
            _, steps = estimate_peak_memory(order, sched.freeable_inputs, sched.graph_outputs)
            seen.append(estimate.steps(position).tolist() == steps)
            seen.append(estimate.peak(sched.indices(order)) == max(steps))
        return kernels

    with with_scheduler_pass(record):
        torch.compile(layer_norms)(X, W)
    assert seen == [True] * 8


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


def test_a_freed_buffer_is_held_where_inductors_estimate_stays_within_its_peak():
    # A (100) is freed after kernel 1, D (100, A's key) allocated by kernel 3: holding A
    # through kernel 2 (B and C live: 20) makes 120
    storages = [
        (100, 0, [0, 1], False),
        (10, 1, [1, 2], False),
        (10, 2, [2, 3], False),
        (100, 3, [3], True),
    ]
    pool = [(0, True, True), (1, True, True), (2, True, True), (0, True, True)]
    # the storages' own estimate peaks at 110: not held
    assert memory([ALONE] * 4, storages, pool=pool).peak([0, 1, 2, 3]) == 110
    # an estimate with 200 more during kernel 0 (a buffer the generated code never
    # allocates, say) allows it: the generated code holds 120
    estimate = InductorEstimate(
        np.array([300, 10, 10, 100]),
        0,
        np.array([200, 100, 10, 10]),
        np.array([0, 0, 1, 2]),
        tuple(np.array([k]) for k in (0, 1, 2, 3)),
    )
    held = memory([ALONE] * 4, storages, pool=pool, estimate=estimate)
    assert held.peak([0, 1, 2, 3]) == 120
    # a buffer of another key is never taken
    other = [(0, True, True), (1, True, True), (2, True, True), (3, True, True)]
    assert memory([ALONE] * 4, storages, pool=other, estimate=estimate).peak([0, 1, 2, 3]) == 110


def test_an_in_place_update_of_an_unaligned_buffer_is_pooled_under_its_unaligned_key():
    # kernel 0 (an extern) makes A, unaligned, which its tuple holds until kernel 4;
    # kernel 1 writes B into A; B, freed after kernel 2, enters the pool as unaligned
    # (KernelArgs.make_inplace), and C (aligned, B's size) cannot take it
    storages = [
        (100, 0, [0, 1, 4], False),
        (100, 1, [1, 2], False),
        (100, 3, [3, 4], False),
    ]
    update = InPlace(kernel=1, output=1, input=0, after=())
    pool = [(-1, False, False), (0, True, True), (0, True, True)]
    kinds = [ALONE] * 5
    aligned = memory(kinds, storages, in_place=[update], pool=pool)
    assert aligned.peak(np.arange(5)) == 100  # C would share the memory the tuple holds
    unaligned = memory(kinds, storages, in_place=[update], pool=pool, unaligned=[0])
    assert unaligned.peak(np.arange(5)) == 200


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
