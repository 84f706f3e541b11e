"""Compiling under a scheduler pass of one's own, for the torch.compile tests."""

import contextlib
from collections.abc import Callable, Iterator

import torch
import torch._inductor.config as inductor_config


@contextlib.contextmanager
def with_scheduler_pass(scheduler_pass: Callable) -> Iterator[None]:
    """Compiles inside the block run ``scheduler_pass`` as Inductor's post-fusion pass, with
    Inductor's own peak-memory pass and its FX graph cache off (a cache hit would skip
    the pass); Dynamo is reset before and after, so every call compiles afresh."""
    torch._dynamo.reset()
    try:
        with inductor_config.patch(
            _post_fusion_custom_pass=scheduler_pass,
            reorder_for_peak_memory=False,
            fx_graph_cache=False,
        ):
            yield
    finally:
        torch._dynamo.reset()
