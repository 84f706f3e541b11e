"""Conv2d and linear layer shapes of the zoo models (``dagopt.zoo``), read off a forward
pass at the zoo's ``small`` input size with hooks on every ``Conv2d`` and ``Linear``.

The measured configuration dataset takes its kernels' shapes from here (channels,
window, stride, padding, input side, features, tokens per sequence), so every kernel is
a layer of a real architecture; ``docs/configs_dataset.md`` says how they are cropped to
the measuring budget. Shapes are cached in a JSON file next to the dataset, so that a
resumed run neither builds the models nor depends on torch's version.
"""

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from dagopt.errors import InputError
from dagopt.io.atomic import write_text_atomic


@dataclass(frozen=True)
class LayerShape:
    """One layer: ``kind`` ``"conv2d"`` (``cin`` -> ``cout``, ``kernel``, ``stride``,
    ``pad``, ``groups``, input ``side``) or ``"linear"`` (``cin`` -> ``cout`` features on
    ``side`` tokens); ``heads`` is the model's attention heads (0 when it has none)."""

    model: str
    kind: str
    cin: int
    cout: int
    side: int
    kernel: int = 1
    stride: int = 1
    pad: int = 0
    groups: int = 1
    heads: int = 0


def _heads(module) -> int:
    config = getattr(getattr(module, "model", module), "config", None)
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "num_heads", 0)
    if isinstance(heads, list | tuple):
        heads = heads[0]
    return int(heads or 0)


def _square(value) -> int | None:
    """The one value of a square (int or equal pair) conv attribute, else ``None``."""
    pair = tuple(value) if isinstance(value, tuple | list) else (value, value)
    return int(pair[0]) if pair[0] == pair[1] and isinstance(pair[0], int) else None


def model_layers(name: str) -> list[LayerShape]:
    """Every distinct square conv2d and linear (or GPT-2 ``Conv1D``) layer of zoo model
    ``name``, in forward order (torch and transformers are imported here)."""
    import torch

    from dagopt.zoo import get_model

    module, inputs = get_model(name).build("small")
    heads = _heads(module)
    seen: dict[LayerShape, None] = {}

    def hook(layer, args, _output) -> None:
        shape = args[0].shape
        if isinstance(layer, torch.nn.Conv2d):
            kernel, stride = _square(layer.kernel_size), _square(layer.stride)
            pad = _square(layer.padding) if not isinstance(layer.padding, str) else None
            if None in (kernel, stride, pad) or shape[-1] != shape[-2]:
                return
            seen.setdefault(
                LayerShape(
                    name,
                    "conv2d",
                    layer.in_channels,
                    layer.out_channels,
                    int(shape[-1]),
                    kernel,
                    stride,
                    pad,
                    layer.groups,
                    heads,
                )
            )
        else:  # Linear, or transformers' Conv1D (GPT-2): weight (in, out), ``nf`` outputs
            cin = getattr(layer, "in_features", None) or int(layer.weight.shape[0])
            cout = getattr(layer, "out_features", None) or int(layer.nf)
            tokens = int(shape[-2]) if len(shape) >= 2 else 1
            seen.setdefault(LayerShape(name, "linear", cin, cout, tokens, heads=heads))

    handles = [
        m.register_forward_hook(hook)
        for m in module.modules()
        if isinstance(m, torch.nn.Conv2d | torch.nn.Linear) or type(m).__name__ == "Conv1D"
    ]
    try:
        with torch.no_grad():
            module(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return list(seen)


def zoo_layers(models: list[str], cache: str | os.PathLike) -> dict[str, list[LayerShape]]:
    """``model_layers`` of each model, read from / added to the JSON file ``cache``."""
    path = Path(cache)
    stored: dict[str, list[dict]] = {}
    if path.is_file():
        try:
            stored = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: unreadable zoo shape cache ({exc})") from None
    missing = [m for m in models if m not in stored]
    for name in missing:
        stored[name] = [asdict(layer) for layer in model_layers(name)]
    if missing:
        write_text_atomic(path, json.dumps(stored, indent=1) + "\n")
    return {m: [LayerShape(**layer) for layer in stored[m]] for m in models}
