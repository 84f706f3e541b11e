"""Hand-made ``CodegenMemory`` facts, for the tests of the generated code's memory."""

import numpy as np

from dagopt.io.inductor_codegen import CodegenMemory
from dagopt.io.inductor_estimate import InductorEstimate

#: What makes a reuse key the unaligned key of the same buffer, here.
UNALIGNED = 1000


def memory(
    kinds,
    storages,
    *,
    in_place=None,
    arguments=None,
    workspaces=None,
    pool=None,
    unaligned=(),
    estimate=None,
):
    """A ``CodegenMemory`` from ``storages``: (bytes, allocating kernel, readers, kept);
    ``pool``: per storage, its reuse key (-1: none), whether it takes and whether it gives
    (none by default); ``unaligned``: the unaligned storages (their key as given; another
    storage's unaligned key is its key + ``UNALIGNED``); ``estimate``: Inductor's, by
    default the storages' own."""
    n = len(kinds)
    sizes = np.asarray([s[0] for s in storages], dtype=np.int64)
    allocator = np.asarray([s[1] for s in storages])
    readers = tuple(np.asarray(s[2], dtype=np.int64) for s in storages)
    kept = np.asarray([s[3] for s in storages])
    pool = pool or [(-1, False, False)] * len(storages)
    keys = np.asarray([p[0] for p in pool], dtype=np.int64)
    flags = np.isin(np.arange(len(storages)), list(unaligned))
    if estimate is None:
        allocs = np.zeros(n, dtype=np.int64)
        np.add.at(allocs, allocator, sizes)
        freed = np.flatnonzero(~kept)
        users = tuple(readers[s] for s in freed)
        estimate = InductorEstimate(allocs, 0, sizes[freed], allocator[freed], users)
    return CodegenMemory(
        kinds=np.asarray(kinds),
        workspaces=np.asarray(workspaces or [0] * n, dtype=np.int64),
        arguments=tuple(arguments or [frozenset()] * n),
        in_place=tuple(tuple(c for c in in_place or () if c.kernel == k) for k in range(n)),
        sizes=sizes,
        owner=np.arange(len(storages)),
        allocator=allocator,
        readers=readers,
        kept=kept,
        reuse_keys=keys,
        unaligned=flags,
        unaligned_reuse_keys=np.where(keys >= 0, np.where(flags, keys, keys + UNALIGNED), -1),
        takes=np.asarray([p[1] for p in pool], dtype=bool),
        gives=np.asarray([p[2] for p in pool], dtype=bool),
        reuse_bytes=sizes.copy(),
        estimate=estimate,
    )
