"""Train a model with its forward + backward graph run in a peak-memory order found by
dagopt, beside the same model trained eagerly, and measure both steps' real peaks.

python examples/train_in_dagopt_order.py --steps 3 --time-limit 5

The model is a 2-layer GPT-2 language model (``transformers``, random weights, dropout
0) on 128 tokens, whose output is its language-modelling loss. ``graph_from_module``
exports the training step with the operators autograd runs (``core_aten=False``),
``anytime`` orders it, and ``TrainingStep`` runs that order in the training loop.
"""

import argparse
import copy

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from dagopt.integrations.torch import measure_peak, measure_training_peak
from dagopt.integrations.torch_step import TrainingStep
from dagopt.io.torch import TrainingLoss, graph_from_module
from dagopt.schedule import solve

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3, help="training steps of each model")
parser.add_argument("--time-limit", type=float, default=5.0, help="seconds for anytime")
args = parser.parse_args()


class LanguageModel(torch.nn.Module):
    """GPT-2 returning its next-token loss on the tokens it is given."""

    def __init__(self) -> None:
        super().__init__()
        config = GPT2Config(
            vocab_size=2048, n_positions=128, n_embd=256, n_layer=2, n_head=4,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager",
            bos_token_id=0, eos_token_id=0,
        )  # fmt: skip
        self.gpt2 = GPT2LMHeadModel(config)
        self.gpt2.loss_type = "ForCausalLM"

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.gpt2(input_ids=tokens, labels=tokens).loss


torch.manual_seed(0)
model = LanguageModel()
eager = copy.deepcopy(model).train()
tokens = torch.randint(0, 2048, (1, 128))

exported = graph_from_module(model, tokens, mode="training", core_aten=False)
order = solve(exported.graph, "anytime", keep_outputs=True, seed=0, time_limit=args.time_limit)
step = TrainingStep(model, exported, order.order)
print(f"{exported.graph.num_nodes} operators; anytime ordered them in {order.seconds:.1f} s")

eager_peak = measure_training_peak(eager, tokens).peak
dagopt_peak = measure_peak(step.graph_module, tokens).peak
change = 100 * (dagopt_peak / eager_peak - 1)
print(f"measured peak: eager {eager_peak / 1e6:.2f} MB, dagopt order {dagopt_peak / 1e6:.2f} MB")
print(f"change: {change:+.1f} %")

ours = torch.optim.AdamW(model.parameters(), lr=1e-3)
theirs = torch.optim.AdamW(eager.parameters(), lr=1e-3)
worst = 0.0
for k in range(args.steps):
    ours.zero_grad()
    theirs.zero_grad()
    loss = step(tokens)
    (expected,) = TrainingLoss(eager)(tokens)
    expected.backward()
    expected = expected.detach()
    ours.step()
    theirs.step()
    worst = max(worst, abs(float(loss) - float(expected)))
    print(f"step {k}: loss {float(loss):.6f} (eager {float(expected):.6f})")
print(f"largest loss difference over {args.steps} steps: {worst:.1e}")
