"""The RNN placer of Mirhoseini et al. (ICML 2017), a baseline of paper 004 (section 3.3).

A sequence-to-sequence model over the co-located groups in topological order: an LSTM
encoder reads the groups' features (the paper's op type, output shape and adjacency
embeddings; here the features of section 2.3 of paper 004), and an LSTM decoder with
content-based attention over the encoder's outputs emits one device per group. The
decoder's input at step ``t`` is the embedding of the device it chose at ``t - 1``
(a start token at ``t = 0``) and the encoder output of group ``t``. Attention:
``a_t = softmax(v^T tanh(W_e e_i + W_d d_t))``, context ``c_t = sum_i a_t,i e_i``,
logits ``W_o [d_t, c_t]``.

Memory: each step's attention spans all ``n`` groups, so keeping its ``(B, n, h)``
activations for the backward pass held ``O(n^2 B h)`` over a pass (10 GB at 1,000
groups). The attention is recomputed in the backward pass instead
(``torch.utils.checkpoint``): the same gradient, ``O(n B h)`` memory.
"""

from collections.abc import Callable

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class RnnPlacer(nn.Module):
    """Samples placements of the groups, with their log-probabilities (module docstring)."""

    def __init__(self, in_features: int, hidden: int, num_devices: int) -> None:
        super().__init__()
        self.num_devices = num_devices
        self.encoder = nn.LSTM(in_features, hidden, batch_first=True)
        self.device_embedding = nn.Embedding(num_devices + 1, hidden)  # + the start token
        self.decoder = nn.LSTMCell(2 * hidden, hidden)
        self.attend_encoder = nn.Linear(hidden, hidden, bias=False)
        self.attend_decoder = nn.Linear(hidden, hidden)
        self.attention = nn.Linear(hidden, 1, bias=False)
        self.out = nn.Linear(2 * hidden, num_devices)

    def forward(
        self, x: torch.Tensor, batch: int, stop: Callable[[], bool] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``batch`` sampled placements ``(batch, n)`` of the groups with features
        ``x`` ``(n, F)``, and their log-probabilities ``(batch,)``; ``None`` when
        ``stop`` (asked before each group's step) says to give up the pass."""
        encoded, _ = self.encoder(x[None])  # (1, n, H): the same for every placement
        keys = self.attend_encoder(encoded)
        hidden = cell = encoded.new_zeros(batch, encoded.shape[2])
        previous = torch.full((batch,), self.num_devices, dtype=torch.long)
        actions, log_prob = [], encoded.new_zeros(batch)
        for t in range(encoded.shape[1]):
            if stop is not None and stop():
                return None
            step = torch.cat(
                [self.device_embedding(previous), encoded[:, t].expand(batch, -1)], dim=1
            )
            hidden, cell = self.decoder(step, (hidden, cell))
            context = checkpoint(self.attend, keys, encoded, hidden, use_reentrant=False)
            logits = self.out(torch.cat([hidden, context], dim=1))
            sampler = torch.distributions.Categorical(logits=logits)
            previous = sampler.sample()
            log_prob = log_prob + sampler.log_prob(previous)
            actions.append(previous)
        return torch.stack(actions, dim=1), log_prob

    def attend(self, keys: torch.Tensor, encoded: torch.Tensor, hidden: torch.Tensor):
        """The contexts ``c_t`` ``(B, H)`` of decoder states ``hidden`` ``(B, H)`` over
        the encoder's outputs ``encoded`` and their projections ``keys`` ``(1, n, H)``."""
        score = self.attention(torch.tanh(keys + self.attend_decoder(hidden)[:, None]))
        return torch.matmul(torch.softmax(score, dim=1).transpose(1, 2), encoded)[:, 0]
