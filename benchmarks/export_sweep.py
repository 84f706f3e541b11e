"""The PyTorch importer across many ``transformers`` architectures: predicted against
measured peaks of inference and training graphs.

    python benchmarks/export_sweep.py                     # every architecture, ~5 minutes
    python benchmarks/export_sweep.py --models Bart Mamba --out bench-out/sweep.md

Each architecture is built from its ``transformers`` configuration at a small size
(width 64, two layers or stages; ``ARCHITECTURES``), random weights, batch 2 (32 tokens,
64 x 64 pixels or 4,000 audio samples), and exported with ``graph_from_module`` three
times: inference, training with joint operator outputs (the default) and training with
``split_outputs=True`` (``docs/real_models.md``). For each graph: its nodes, the traced
order's predicted peak (``peak_memory``, outputs kept) and the peak measured on a real
CPU run of the graph module in that order (``measure_peak``). A fourth row goes through
a file: the eval-mode program saved with ``torch.export.save``, read back, written back
in its traced order and run from disk (``measure_saved``). An architecture that
``torch.export`` cannot trace is a row with export's one-line error, and the script
goes on. None of these architectures is in the zoo, and no method was tuned on them.
"""

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dagopt.bench.markdown import markdown_row, markdown_rule
from dagopt.bench.script import run_script, script_parser
from dagopt.errors import InputError
from dagopt.io.atomic import write_text_atomic

#: Batch size and input sizes of every architecture.
BATCH, TOKENS, DECODER_TOKENS, PIXELS, AUDIO_SAMPLES = 2, 32, 16, 64, 4000
#: The vocabulary of the text models.
VOCAB = 1000

_TEXT = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": VOCAB,
}
_DECODER = {**_TEXT, "num_key_value_heads": 2}
_SEQ2SEQ = {
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "vocab_size": VOCAB,
}
_VIT = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "image_size": PIXELS,
    "patch_size": 8,
}
_STAGES = {"hidden_sizes": [16, 32, 64, 128], "depths": [1, 1, 1, 1]}
_AUDIO = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "conv_dim": [16, 16],
    "conv_stride": [5, 2],
    "conv_kernel": [10, 3],
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4,
}


@dataclass(frozen=True)
class Architecture:
    """``transformers.{prefix}{head}({prefix}Config(**config))`` fed ``inputs`` (``text``,
    ``seq2seq``, ``image`` or ``audio``); a ``For...`` head returns ``logits``, any other
    ``last_hidden_state``."""

    prefix: str
    head: str
    inputs: str
    config: dict[str, Any]


ARCHITECTURES = (
    Architecture("Albert", "Model", "text", {**_TEXT, "embedding_size": 32}),
    Architecture(
        "DistilBert",
        "Model",
        "text",
        {"dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 128, "vocab_size": VOCAB},
    ),
    Architecture("Roberta", "Model", "text", _TEXT),
    Architecture("DebertaV2", "Model", "text", _TEXT),
    Architecture("ConvBert", "Model", "text", _TEXT),
    Architecture(
        "SqueezeBert",
        "Model",
        "text",
        {
            **_TEXT,
            "embedding_size": 64,
            "q_groups": 2,
            "k_groups": 2,
            "v_groups": 2,
            "post_attention_groups": 1,
            "intermediate_groups": 2,
            "output_groups": 2,
        },
    ),
    Architecture(
        "Funnel",
        "Model",
        "text",
        {
            "d_model": 64,
            "n_head": 4,
            "d_head": 16,
            "d_inner": 128,
            "block_sizes": [1, 1],
            "vocab_size": VOCAB,
        },
    ),
    Architecture(
        "GPTNeo",
        "ForCausalLM",
        "text",
        {
            "hidden_size": 64,
            "num_layers": 2,
            "num_heads": 4,
            "window_size": 16,
            "attention_types": [[["global", "local"], 1]],
            "vocab_size": VOCAB,
        },
    ),
    Architecture(
        "GPTJ",
        "ForCausalLM",
        "text",
        {"n_embd": 64, "n_layer": 2, "n_head": 4, "rotary_dim": 8, "vocab_size": VOCAB},
    ),
    Architecture(
        "Bloom",
        "ForCausalLM",
        "text",
        {"hidden_size": 64, "n_layer": 2, "n_head": 4, "vocab_size": VOCAB},
    ),
    Architecture(
        "Falcon",
        "ForCausalLM",
        "text",
        {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": VOCAB},
    ),
    Architecture("Mistral", "ForCausalLM", "text", _DECODER),
    Architecture("Gemma", "ForCausalLM", "text", {**_DECODER, "head_dim": 16}),
    Architecture("Qwen3", "ForCausalLM", "text", {**_DECODER, "head_dim": 16}),
    Architecture("Phi3", "ForCausalLM", "text", {**_DECODER, "pad_token_id": 0}),
    Architecture("StableLm", "ForCausalLM", "text", _DECODER),
    Architecture("GPTNeoX", "ForCausalLM", "text", _TEXT),
    Architecture(
        "GPTBigCode",
        "ForCausalLM",
        "text",
        {"n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": VOCAB},
    ),
    Architecture(
        "CodeGen",
        "ForCausalLM",
        "text",
        {"n_embd": 64, "n_layer": 2, "n_head": 4, "rotary_dim": 8, "vocab_size": VOCAB},
    ),
    Architecture(
        "Mamba",
        "ForCausalLM",
        "text",
        {"hidden_size": 64, "num_hidden_layers": 2, "state_size": 8, "vocab_size": VOCAB},
    ),
    Architecture("Bart", "Model", "seq2seq", _SEQ2SEQ),
    Architecture("Pegasus", "Model", "seq2seq", _SEQ2SEQ),
    Architecture("DeiT", "Model", "image", _VIT),
    Architecture("Beit", "Model", "image", _VIT),
    Architecture(
        "Dinov2",
        "Model",
        "image",
        {**{k: v for k, v in _VIT.items() if k != "intermediate_size"}, "mlp_ratio": 2},
    ),
    Architecture("CLIPVision", "Model", "image", _VIT),
    Architecture("ConvNextV2", "Model", "image", _STAGES),
    Architecture("Segformer", "Model", "image", {**_STAGES, "num_attention_heads": [1, 2, 4, 8]}),
    Architecture("PoolFormer", "Model", "image", _STAGES),
    Architecture("RegNet", "Model", "image", {**_STAGES, "groups_width": 8}),
    Architecture("ResNet", "Model", "image", {**_STAGES, "embedding_size": 16}),
    Architecture("MobileNetV1", "Model", "image", {"image_size": PIXELS, "depth_multiplier": 0.25}),
    Architecture("Levit", "Model", "image", {"image_size": PIXELS}),
    # In train mode these skip layers at random (``layerdrop``: a branch on a tensor's
    # value) and mask random time spans (``mask_time_prob``: a tensor of data-dependent
    # shape), neither of which torch.export can trace.
    Architecture("Wav2Vec2", "Model", "audio", {**_AUDIO, "mask_time_prob": 0.0, "layerdrop": 0.0}),
    Architecture("Hubert", "Model", "audio", {**_AUDIO, "mask_time_prob": 0.0, "layerdrop": 0.0}),
)
_BY_NAME = {architecture.prefix: architecture for architecture in ARCHITECTURES}
#: The graphs exported of each architecture: (label, mode, split_outputs).
VARIANTS = (
    ("inference", "inference", False),
    ("training, joint", "training", False),
    ("training, split", "training", True),
    ("inference, saved .pt2", "saved", False),
)


def build(architecture: Architecture) -> tuple[Any, tuple[Any, ...]]:
    """The architecture with random weights (seeded) and its example inputs."""
    import torch
    import transformers

    from dagopt.zoo.models import tensor_forward

    torch.manual_seed(0)
    options = {"attn_implementation": "eager", **architecture.config}
    if architecture.inputs in ("text", "seq2seq"):
        options["use_cache"] = False
    config = getattr(transformers, f"{architecture.prefix}Config")(**options)
    model = getattr(transformers, f"{architecture.prefix}{architecture.head}")(config)
    tokens = torch.randint(0, VOCAB, (BATCH, TOKENS))
    names, inputs = {
        "text": (("input_ids",), (tokens,)),
        "seq2seq": (
            ("input_ids", "decoder_input_ids"),
            (tokens, torch.randint(0, VOCAB, (BATCH, DECODER_TOKENS))),
        ),
        "image": (("pixel_values",), (torch.randn(BATCH, 3, PIXELS, PIXELS),)),
        "audio": (("input_values",), (torch.randn(BATCH, AUDIO_SAMPLES),)),
    }[architecture.inputs]
    output = "logits" if architecture.head.startswith("For") else "last_hidden_state"
    return tensor_forward(model, names, output), inputs


def measure(architecture: Architecture, mode: str, split: bool) -> tuple[int, float, float]:
    """Nodes, predicted and measured peak (bytes) of the traced order of one export
    (``mode="saved"``: ``measure_saved``)."""
    import torch

    from dagopt.bench.realgraphs import predicted_and_measured
    from dagopt.io.torch import graph_from_module

    if mode == "saved":
        return measure_saved(architecture)
    module, inputs = build(architecture)
    with torch.no_grad() if mode == "inference" else torch.enable_grad():
        exported = graph_from_module(
            module, inputs, mode=mode, split_outputs=split, name=architecture.prefix
        )
    nodes = exported.graph.num_nodes
    predicted, measured = predicted_and_measured(exported, inputs, np.arange(nodes))
    return nodes, predicted, measured


def measure_saved(architecture: Architecture) -> tuple[int, float, float]:
    """The eval-mode program saved with ``torch.export.save``, read back
    (``read_exported_program``), written back in its traced order
    (``write_exported_program``) and run from that file (``torch.export.load(...).module()``):
    nodes, predicted and measured peak (bytes)."""
    import torch

    from dagopt.integrations.torch import measure_peak
    from dagopt.io.torch_program import read_exported_program, write_exported_program
    from dagopt.objectives import peak_memory

    module, inputs = build(architecture)
    with tempfile.TemporaryDirectory() as folder:
        saved_path, written_path = Path(folder, "saved.pt2"), Path(folder, "written.pt2")
        with torch.no_grad():
            torch.export.save(torch.export.export(module.eval(), inputs), saved_path)
        saved = read_exported_program(saved_path, split_outputs=False)
        graph = saved.torch_graph.graph
        traced = np.arange(graph.num_nodes)
        write_exported_program(saved, traced, written_path)
        measured = measure_peak(torch.export.load(written_path).module(), inputs).peak
    return graph.num_nodes, peak_memory(graph, traced, keep_outputs=True), measured


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--models", nargs="+", default=list(_BY_NAME), help="architectures (config prefixes)"
    )
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
    unknown = [name for name in args.models if name not in _BY_NAME]
    if unknown:
        raise InputError(f"unknown architectures {unknown} (known: {', '.join(_BY_NAME)})")
    header = ["architecture", "graph", "nodes", "predicted MB", "measured MB", "diff %"]
    lines = [markdown_row(header), markdown_rule("llrrrr")]
    print("\n".join(lines), flush=True)
    gaps: dict[str, list[float]] = {label: [] for label, _, _ in VARIANTS}
    for name in args.models:
        for label, mode, split in VARIANTS:
            try:
                nodes, predicted, measured = measure(_BY_NAME[name], mode, split)
            except InputError as exc:
                row = [name, label, "-", "-", "-", f"export failed: {exc}"]
            else:
                gap = 100 * (predicted / measured - 1)
                gaps[label].append(gap)
                row = [name, label, f"{nodes:,}", f"{predicted / 1e6:.3f}",
                       f"{measured / 1e6:.3f}", f"{gap:+.2f}"]  # fmt: skip
            lines.append(markdown_row(row))
            print(lines[-1], flush=True)
    summary = [""]
    for label, values in gaps.items():
        exact = sum(abs(gap) < 0.01 for gap in values)
        worst = max(values, key=abs, default=0.0)
        summary.append(
            f"{label}: predicted = measured (within 0.01 %) on {exact} of {len(values)} "
            f"graphs; largest difference {worst:+.2f} %"
        )
    print("\n".join(summary))
    if args.out:
        write_text_atomic(args.out, "\n".join(lines + summary) + "\n")
    return 0


if __name__ == "__main__":
    run_script(main)
