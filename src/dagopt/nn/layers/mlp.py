"""The multi-layer perceptron every GNN of dagopt builds its message and update functions from."""

from itertools import pairwise

from torch import nn


def mlp(in_dim: int, hidden: int, out_dim: int, layers: int) -> nn.Sequential:
    """``layers`` linear layers ``in_dim -> hidden -> ... -> out_dim`` with ReLU between.

    ``MLP(x) = W_L ReLU(... ReLU(W_1 x + b_1) ...) + b_L`` (003 A.3's ``MLP``s).
    """
    dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
    modules: list[nn.Module] = []
    for i in range(layers):
        if i:
            modules.append(nn.ReLU())
        modules.append(nn.Linear(dims[i], dims[i + 1]))
    return nn.Sequential(*modules)


def mlp_weights(in_dim: int, hidden: int, out_dim: int, layers: int) -> int:
    """The number of weights and biases of ``mlp(in_dim, hidden, out_dim, layers)``, known
    before building it (the memory guards of the models that build many)."""
    dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
    return sum((a + 1) * b for a, b in pairwise(dims))
