"""Train a model with ``torch.compile`` whose kernels dagopt orders for peak memory.

python examples/compile_in_dagopt_order.py --time-limit 2

A four-block GPT-2 (``transformers`` config, random weights, no dropout) is trained on
next-token prediction for a few AdamW steps on the CPU, compiled by ``torch.compile``
twice: by Inductor alone and inside ``dagopt.schedule.compiled.kernel_order()``, which
gives Inductor a scheduler pass ordering each compiled graph's fused kernels with
``anytime`` (the pass keeps the order of least estimated peak among dagopt's and
Inductor's own heuristics'). The script prints, per compiled graph, the peak estimate
of Inductor's best order and of the one kept; then, measured by the CPU allocator
(``dagopt.integrations.torch_compile.measured_peak``), the peak of one training step
of each, and whether the two runs' losses are bitwise equal (the same kernels, in
another order).
"""

import argparse

import torch
import torch._inductor.config as inductor_config
from transformers import GPT2Config, GPT2LMHeadModel

from dagopt.integrations.torch_compile import measured_peak
from dagopt.schedule.compiled import kernel_order

parser = argparse.ArgumentParser()
parser.add_argument("--time-limit", type=float, default=5.0, help="anytime seconds per graph")
parser.add_argument("--steps", type=int, default=3, help="training steps")
args = parser.parse_args()

config = GPT2Config(
    n_layer=4, n_embd=256, n_head=4, vocab_size=2000, n_positions=64, bos_token_id=0,
    eos_token_id=0, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0,
)  # fmt: skip
tokens = torch.randint(0, config.vocab_size, (2, 64), generator=torch.Generator().manual_seed(1))


def train(compile_context) -> tuple[list[float], int, list]:
    """Losses of ``--steps`` AdamW steps from the same initial weights, compiled under
    ``compile_context``, and the measured peak of one more step's forward + backward."""
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch._dynamo.reset()
    with compile_context as order_pass:
        loss_of = torch.compile(lambda ids: model(input_ids=ids, labels=ids).loss)

        def step():
            loss = loss_of(tokens)
            loss.backward()
            return loss.detach()

        losses = []
        for _ in range(args.steps):
            optimizer.zero_grad(set_to_none=True)
            losses.append(step().item())
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        peak = measured_peak(step)
    torch._dynamo.reset()
    return losses, peak, order_pass.reports if order_pass is not None else []


# Inductor alone, its FX graph cache off as kernel_order turns it off (the patch yields None)
inductor_losses, inductor_peak, _ = train(inductor_config.patch(fx_graph_cache=False))
dagopt_losses, dagopt_peak, reports = train(kernel_order("anytime", time_limit=args.time_limit))
for r in reports:
    print(
        f"{r.graph}: {r.kernels} kernels, estimate of the order Inductor runs "
        f"({r.inductor_choice}) {r.inductor_peak / 1e6:.3f} MB, "
        f"with dagopt {r.chosen_peak / 1e6:.3f} MB ({r.seconds:.1f} s of search)"
    )
print(
    f"measured step peak: Inductor {inductor_peak / 1e6:.3f} MB, dagopt {dagopt_peak / 1e6:.3f} MB"
)
print(f"change: {100 * (dagopt_peak / inductor_peak - 1):+.2f} %")
shown = ", ".join(f"{x:.4f}" for x in dagopt_losses)
print(f"same losses: {inductor_losses == dagopt_losses} ({shown})")
