"""The model zoo catalogue: real architectures from ``transformers`` configs, random weights.

Every entry builds its model from a ``transformers`` config class (the library's
defaults for the named checkpoint unless its description says otherwise; Inception-V3,
which ``transformers`` lacks, from ``dagopt.zoo.inception``) with
weights drawn after ``torch.manual_seed(0)``: nothing is downloaded. The model is
wrapped so that its forward takes tensors only and returns one tensor. Attention runs
``attn_implementation="eager"``, so the attention scores and probabilities are graph
nodes rather than the inside of a fused kernel. Each model has two input sizes,
``"small"`` and ``"large"`` (batch 1).

This module imports neither torch nor transformers until a model is built, so the
catalogue can be listed cheaply.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dagopt.errors import InputError

if TYPE_CHECKING:
    import torch

SIZES = ("small", "large")
#: Text models: tokens per sequence.
SEQUENCE_LENGTH = {"small": 64, "large": 256}
#: Vision models: side of the square RGB image in pixels.
IMAGE_SIDE = {"small": 64, "large": 224}
#: Swin: its 7 x 7 windows must fit the last stage (side / 32), so 224 px is its smallest
#: input (``transformers`` fails on smaller ones, eager included).
SWIN_SIDE = {"small": 224, "large": 448}
#: Whisper encoder: ``max_source_positions`` (the log-mel input has twice as many frames).
AUDIO_POSITIONS = {"small": 250, "large": 1500}

Built = tuple["torch.nn.Module", tuple["torch.Tensor", ...]]


@dataclass(frozen=True)
class ZooModel:
    """One catalogue entry: how to build the model and its example inputs at each size.

    ``inputs`` describes the example inputs of each size (batch 1: tokens, encoder +
    decoder tokens, image side, log-mel frames of 80 bins); ``description`` names the
    ``transformers`` class and config, and any departure from the published one.
    ``held_out`` marks the held-out multi-branch CNNs (``HELD_OUT_BATCH`` images each),
    which no method is tuned on: ``model_names()`` leaves them out unless asked.
    """

    name: str
    family: str
    description: str
    inputs: Mapping[str, str]
    builder: Callable[[str], Built]
    held_out: bool = False

    def build(self, size: str = "small") -> Built:
        """The eval-mode wrapped model and its example inputs at ``size`` (seeded)."""
        import torch

        check_size(size)
        torch.manual_seed(0)
        module, inputs = self.builder(size)
        return module.eval(), inputs


def check_size(size: str) -> None:
    """Raise ``InputError`` unless ``size`` is one of ``SIZES``."""
    if size not in SIZES:
        raise InputError(f"unknown size {size!r} (sizes: {', '.join(SIZES)})")


def tensor_forward(model: Any, input_names: tuple[str, ...], output: str) -> "torch.nn.Module":
    """``model`` called with keyword tensors, returning the field ``output`` of its result.

    Tied weights need nothing here: ``graph_from_module`` exports under
    ``dagopt.io.torch_tied.registered_once``.
    """
    import torch

    class TensorForward(torch.nn.Module):
        """Forward of tensors only: ``inputs`` bound to ``input_names``, one output field."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return getattr(self.model(**dict(zip(input_names, inputs, strict=True))), output)

    return TensorForward()


def _tokens(vocab_size: int, length: int) -> "torch.Tensor":
    import torch

    return torch.randint(0, vocab_size, (1, length))


def _image(side: int, batch: int = 1) -> "torch.Tensor":
    import torch

    return torch.randn(batch, 3, side, side)


def _bert(size: str) -> Built:
    from transformers import BertConfig, BertModel

    config = BertConfig(attn_implementation="eager")
    model = BertModel(config, add_pooling_layer=False)
    inputs = (_tokens(config.vocab_size, SEQUENCE_LENGTH[size]),)
    return tensor_forward(model, ("input_ids",), "last_hidden_state"), inputs


def _gpt2(size: str) -> Built:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(use_cache=False, attn_implementation="eager")
    inputs = (_tokens(config.vocab_size, SEQUENCE_LENGTH[size]),)
    return tensor_forward(GPT2LMHeadModel(config), ("input_ids",), "logits"), inputs


def _t5(size: str) -> Built:
    from transformers import T5Config, T5Model

    config = T5Config(use_cache=False, attn_implementation="eager")
    length = SEQUENCE_LENGTH[size]
    inputs = (_tokens(config.vocab_size, length), _tokens(config.vocab_size, length // 2))
    names = ("input_ids", "decoder_input_ids")
    return tensor_forward(T5Model(config), names, "last_hidden_state"), inputs


def _llama(size: str) -> Built:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=32000,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        use_cache=False,
        attn_implementation="eager",
    )
    inputs = (_tokens(config.vocab_size, SEQUENCE_LENGTH[size]),)
    return tensor_forward(LlamaForCausalLM(config), ("input_ids",), "logits"), inputs


def _vit(size: str) -> Built:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(image_size=IMAGE_SIDE[size], num_labels=1000, attn_implementation="eager")
    model = ViTForImageClassification(config)
    return tensor_forward(model, ("pixel_values",), "logits"), (_image(IMAGE_SIDE[size]),)


def _swin(size: str) -> Built:
    from transformers import SwinConfig, SwinForImageClassification

    config = SwinConfig(image_size=SWIN_SIDE[size], num_labels=1000, attn_implementation="eager")
    model = SwinForImageClassification(config)
    return tensor_forward(model, ("pixel_values",), "logits"), (_image(SWIN_SIDE[size]),)


def _resnet(size: str) -> Built:
    from transformers import ResNetConfig, ResNetForImageClassification

    model = ResNetForImageClassification(ResNetConfig(num_labels=1000))
    return tensor_forward(model, ("pixel_values",), "logits"), (_image(IMAGE_SIDE[size]),)


#: Inception-V3: 299 px as published; 149 px is a small input its grid reductions take.
INCEPTION_SIDE = {"small": 149, "large": 299}


def _inception(size: str) -> Built:
    from dagopt.zoo.inception import inception_v3

    return inception_v3(), (_image(INCEPTION_SIDE[size]),)


def _convnext(size: str) -> Built:
    from transformers import ConvNextConfig, ConvNextForImageClassification

    model = ConvNextForImageClassification(ConvNextConfig(num_labels=1000))
    return tensor_forward(model, ("pixel_values",), "logits"), (_image(IMAGE_SIDE[size]),)


def _mobilenet_v2(size: str) -> Built:
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    model = MobileNetV2ForImageClassification(MobileNetV2Config(num_labels=1001))
    return tensor_forward(model, ("pixel_values",), "logits"), (_image(IMAGE_SIDE[size]),)


#: The held-out CNNs run a batch of 2 images (the held-out set of issue 21).
HELD_OUT_BATCH = 2


def _multibranch(build: Callable[[], "torch.nn.Module"]) -> Callable[[str], Built]:
    """A builder of a ``dagopt.zoo.multibranch`` network on ``HELD_OUT_BATCH`` images."""

    def builder(size: str) -> Built:
        return build(), (_image(IMAGE_SIDE[size], HELD_OUT_BATCH),)

    return builder


def _transformers_classifier(
    config_class: str,
    model_class: str,
    batch: int = HELD_OUT_BATCH,
    sized: bool = False,
    **config: Any,
) -> Callable[[str], Built]:
    """A builder of a ``transformers`` image classifier on ``batch`` images; ``sized``:
    the config's ``image_size`` is the input side (PVT's position embeddings follow it)."""

    def builder(size: str) -> Built:
        import transformers

        side = IMAGE_SIDE[size]
        options = {**config, "image_size": side} if sized else config
        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**options))
        return tensor_forward(model, ("pixel_values",), "logits"), (_image(side, batch),)

    return builder


def _whisper_encoder(size: str) -> Built:
    import torch
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = WhisperConfig(max_source_positions=AUDIO_POSITIONS[size], attn_implementation="eager")
    features = torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions)
    return tensor_forward(WhisperEncoder(config), ("input_features",), "last_hidden_state"), (
        features,
    )


def _text() -> dict[str, str]:
    return {size: f"{n} tokens" for size, n in SEQUENCE_LENGTH.items()}


def _images(sides: Mapping[str, int] = IMAGE_SIDE, batch: int = 1) -> dict[str, str]:
    images = f"{batch} x " if batch > 1 else ""
    return {size: f"{images}{side}x{side} px" for size, side in sides.items()}


MODELS: tuple[ZooModel, ...] = (
    ZooModel(
        "bert-base",
        "encoder",
        "BertModel(BertConfig()): BERT-base, 12 layers, hidden 768, 12 heads, no pooler;"
        " last_hidden_state",
        _text(),
        _bert,
    ),
    ZooModel(
        "gpt2",
        "decoder",
        "GPT2LMHeadModel(GPT2Config()): GPT-2 small, 12 layers, hidden 768, 12 heads,"
        " tied LM head; logits",
        _text(),
        _gpt2,
    ),
    ZooModel(
        "t5-small",
        "encoder-decoder",
        "T5Model(T5Config()): T5-small, 6 + 6 layers, d_model 512, 8 heads;"
        " decoder_input_ids half the input length; decoder last_hidden_state",
        {size: f"{n}+{n // 2} tokens" for size, n in SEQUENCE_LENGTH.items()},
        _t5,
    ),
    ZooModel(
        "llama-small",
        "decoder",
        "LlamaForCausalLM(LlamaConfig(hidden_size=256, intermediate_size=688,"
        " num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4)): a small"
        " Llama-style decoder (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention),"
        " vocabulary 32000; logits",
        _text(),
        _llama,
    ),
    ZooModel(
        "vit-base",
        "vision-transformer",
        "ViTForImageClassification(ViTConfig(image_size=side)): ViT-B/16, 12 layers,"
        " hidden 768; image_size set to the input side (64: 16 patches); logits",
        _images(),
        _vit,
    ),
    ZooModel(
        "swin-tiny",
        "vision-transformer",
        "SwinForImageClassification(SwinConfig(image_size=side)): Swin-T, depths 2-2-6-2,"
        " embed 96, window 7; inputs 224 and 448 px (its windows need side >= 224); logits",
        _images(SWIN_SIDE),
        _swin,
    ),
    ZooModel(
        "resnet-50",
        "cnn",
        "ResNetForImageClassification(ResNetConfig()): ResNet-50, bottleneck depths 3-4-6-3;"
        " logits",
        _images(),
        _resnet,
    ),
    ZooModel(
        "inception-v3",
        "cnn",
        "Inception-V3 (Szegedy et al. 2016) from its published layer configuration"
        " (dagopt.zoo.inception), without the auxiliary classifier; logits",
        _images(INCEPTION_SIDE),
        _inception,
    ),
    ZooModel(
        "convnext-tiny",
        "cnn",
        "ConvNextForImageClassification(ConvNextConfig()): ConvNeXt-T, depths 3-3-9-3,"
        " widths 96-768; logits",
        _images(),
        _convnext,
    ),
    ZooModel(
        "mobilenet-v2",
        "cnn",
        "MobileNetV2ForImageClassification(MobileNetV2Config()): MobileNetV2 1.0,"
        " 1001 classes; logits",
        _images(),
        _mobilenet_v2,
    ),
    ZooModel(
        "whisper-tiny-encoder",
        "audio-encoder",
        "WhisperEncoder(WhisperConfig(max_source_positions=P)): Whisper-tiny encoder,"
        " 4 layers, d_model 384, 6 heads; P = 1500 (30 s of audio, the published config)"
        " for large, 250 (5 s) for small; last_hidden_state",
        {size: f"{2 * n} frames" for size, n in AUDIO_POSITIONS.items()},
        _whisper_encoder,
    ),
)


def _multibranch_model(
    name: str, description: str, build_name: str, *args: int, held_out: bool = True
) -> ZooModel:
    def build() -> "torch.nn.Module":
        from dagopt.zoo import multibranch

        return getattr(multibranch, build_name)(*args)

    return ZooModel(
        name,
        "cnn",
        f"{description} (dagopt.zoo.multibranch.{build_name}); logits",
        _images(batch=HELD_OUT_BATCH),
        _multibranch(build),
        held_out=held_out,
    )


#: Multi-branch CNNs held out from tuning (issue 21): ordering methods are compared on
#: their training graphs, and nothing is tuned on them.
HELD_OUT_MODELS: tuple[ZooModel, ...] = (
    _multibranch_model("densenet-121", "DenseNet-121 (Huang et al. 2017)", "densenet_121"),
    _multibranch_model("squeezenet-1.1", "SqueezeNet 1.1 (Iandola et al. 2016)", "squeezenet_1_1"),
    _multibranch_model("shufflenet-v2", "ShuffleNet V2 1.0x (Ma et al. 2018)", "shufflenet_v2"),
    _multibranch_model("googlenet", "GoogLeNet (Szegedy et al. 2015), batch norm", "googlenet"),
    _multibranch_model("randwire-ws-1", "RandWire-WS small, graph seed 1", "randwire_ws", 1),
    _multibranch_model("randwire-ws-2", "RandWire-WS small, graph seed 2", "randwire_ws", 2),
    ZooModel(
        "efficientnet-b0",
        "cnn",
        "EfficientNetForImageClassification(EfficientNetConfig(width_coefficient=1.0,"
        " depth_coefficient=1.0, image_size=224, hidden_dim=1280, num_labels=1000)):"
        " EfficientNet-B0"
        " (squeeze-excitation branches); logits",
        _images(batch=HELD_OUT_BATCH),
        _transformers_classifier(
            "EfficientNetConfig",
            "EfficientNetForImageClassification",
            width_coefficient=1.0,
            depth_coefficient=1.0,
            image_size=224,
            hidden_dim=1280,
            dropout_rate=0.2,
            num_labels=1000,
        ),
        held_out=True,
    ),
    ZooModel(
        "mobilevit-small",
        "cnn",
        "MobileViTForImageClassification(MobileViTConfig(num_labels=1000)): MobileViT-S,"
        " convolutions with transformer blocks (eager attention); logits",
        _images(batch=HELD_OUT_BATCH),
        _transformers_classifier(
            "MobileViTConfig",
            "MobileViTForImageClassification",
            num_labels=1000,
            attn_implementation="eager",
        ),
        held_out=True,
    ),
)

#: Multi-branch CNNs for training ordering policies (``dagopt.train.mix``): RandWire-WS
#: with graph seeds the held-out set does not use and 16 nodes per stage (about 3,000
#: graph nodes at batch 2, 64 x 64), so nothing of ``HELD_OUT_MODELS`` is trained on.
TRAINING_CNNS: tuple[ZooModel, ...] = tuple(
    _multibranch_model(
        f"randwire-ws16-{seed}",
        f"RandWire-WS, 16 nodes per stage, graph seed {seed} (training only)",
        "randwire_ws",
        seed,
        1000,
        16,
        held_out=False,
    )
    for seed in (3, 4, 5, 6)
)


def _training_classifier(
    name: str, family: str, description: str, prefix: str, sized: bool = False, **config: Any
) -> ZooModel:
    """A training-only ``transformers`` image classifier (``{prefix}Config`` and
    ``{prefix}ForImageClassification``, 1000 classes, batch 1), exportable by name."""
    builder = _transformers_classifier(
        f"{prefix}Config",
        f"{prefix}ForImageClassification",
        batch=1,
        sized=sized,
        num_labels=1000,
        **config,
    )
    return ZooModel(name, family, description, _images(), builder)


#: Vision transformers whose convolutions have stride = window (patch embeddings, and
#: PVT's spatial-reduction attention): training architectures of the measured
#: configuration dataset (``dagopt.rank.configs.build.EXTRA_WAVES``, issue 20), exportable
#: by name but neither in the catalogue nor held out.
PATCH_EMBEDDING_MODELS: tuple[ZooModel, ...] = (
    _training_classifier(
        "pvt-tiny",
        "vision-transformer",
        "PvtForImageClassification(PvtConfig(image_size=side)): PVT-Tiny (Wang et al. 2021),"
        " depths 2-2-2-2, widths 64-128-320-512, patch embeddings 4-2-2-2 (stride = window),"
        " spatial reduction 8-4-2-1; eager attention; logits",
        "Pvt",
        sized=True,
        attn_implementation="eager",
    ),
    _training_classifier(
        "pvt-v2-b0",
        "vision-transformer",
        "PvtV2ForImageClassification(PvtV2Config()): PVTv2-B0 (Wang et al. 2022),"
        " depths 2-2-2-2, widths 32-64-160-256, overlapping patch embeddings 7/4 then 3/2,"
        " spatial reduction 8-4-2-1; eager attention; logits",
        "PvtV2",
        attn_implementation="eager",
    ),
)

#: CNN and hybrid backbones whose groups-1 convolutions have shapes (channels, window,
#: stride) no earlier training architecture of the measured configuration dataset had:
#: its third wave of training architectures (``dagopt.rank.configs.build.EXTRA_WAVES``,
#: issue 20), exportable by name but neither in the catalogue nor held out. None is of
#: the held-out families (ConvNeXt, Swin, MobileNet).
CONV_SHAPE_MODELS: tuple[ZooModel, ...] = (
    _training_classifier(
        "regnet-y-040",
        "cnn",
        "RegNetForImageClassification(RegNetConfig()): RegNetY-4.0GF (Radosavovic et al."
        " 2020), widths 128-192-512-1088, depths 2-6-12-2, group width 64; logits",
        "RegNet",
    ),
    _training_classifier(
        "swiftformer-xs",
        "vision-transformer",
        "SwiftFormerForImageClassification(SwiftFormerConfig()): SwiftFormer-XS (Shaker et al."
        " 2023), widths 48-56-112-220, depths 3-3-6-4, 1 x 1 conv MLPs; logits",
        "SwiftFormer",
    ),
    _training_classifier(
        "resnet-18",
        "cnn",
        "ResNetForImageClassification(ResNetConfig(layer_type='basic', depths=[2, 2, 2, 2],"
        " hidden_sizes=[64, 128, 256, 512])): ResNet-18 (He et al. 2016); logits",
        "ResNet",
        layer_type="basic",
        depths=[2, 2, 2, 2],
        hidden_sizes=[64, 128, 256, 512],
    ),
    _training_classifier(
        "poolformer-s12",
        "vision-transformer",
        "PoolFormerForImageClassification(PoolFormerConfig()): PoolFormer-S12 (Yu et al."
        " 2022), widths 64-128-320-512, overlapping patch embeddings 7 / 4 then 3 / 2,"
        " 1 x 1 conv MLPs; logits",
        "PoolFormer",
    ),
    _training_classifier(
        "cvt-13",
        "vision-transformer",
        "CvtForImageClassification(CvtConfig()): CvT-13 (Wu et al. 2021), convolutional"
        " token embeddings 7 / 4, 3 / 2, 3 / 2 to widths 64-192-384; logits",
        "Cvt",
    ),
    _training_classifier(
        "dinov2-base",
        "vision-transformer",
        "Dinov2ForImageClassification(Dinov2Config()): DINOv2 ViT-B/14 (Oquab et al. 2023),"
        " patch embedding 14 x 14 / 14, position embeddings interpolated to the side; logits",
        "Dinov2",
    ),
)


def _spelled(config: Mapping[str, Any]) -> str:
    """``config`` as the keyword arguments of a call, for a model's description."""
    return ", ".join(f"{key}={value!r}" for key, value in config.items())


def _published_size(name: str, family: str, title: str, prefix: str, **config: Any) -> ZooModel:
    """``_training_classifier`` at a published size: ``config`` overrides the library's
    default ``{prefix}Config`` and is spelled out in the description."""
    description = (
        f"{prefix}ForImageClassification({prefix}Config({_spelled(config)})): {title}; logits"
    )
    return _training_classifier(name, family, description, prefix, **config)


def _regnet(
    name: str, title: str, layer_type: str, widths: list, depths: list, group: int
) -> ZooModel:
    """RegNet ``title`` at pycls' published widths, depths and group width."""
    return _published_size(
        name,
        "cnn",
        f"{title} (Radosavovic et al. 2020)",
        "RegNet",
        layer_type=layer_type,
        hidden_sizes=widths,
        depths=depths,
        groups_width=group,
    )


#: Other published sizes of wave 3's families, each with at least five groups-1
#: convolution shapes (channels, window, stride) no earlier training architecture had:
#: the measured configuration dataset's fourth wave (``dagopt.rank.configs.build.
#: EXTRA_WAVES``, issue 20), exportable by name but neither in the catalogue nor held out.
SIZE_VARIANT_MODELS: tuple[ZooModel, ...] = (
    _regnet("regnet-x-002", "RegNetX-200MF", "x", [24, 56, 152, 368], [1, 1, 4, 7], 8),
    _regnet("regnet-x-004", "RegNetX-400MF", "x", [32, 64, 160, 384], [1, 2, 7, 12], 16),
    _regnet("regnet-y-016", "RegNetY-1.6GF", "y", [48, 120, 336, 888], [2, 6, 17, 2], 24),
    _regnet("regnet-x-032", "RegNetX-3.2GF", "x", [96, 192, 432, 1008], [2, 6, 15, 2], 48),
    _regnet("regnet-y-080", "RegNetY-8.0GF", "y", [168, 448, 896, 2016], [2, 4, 10, 1], 56),
    *(
        _published_size(
            name,
            "vision-transformer",
            f"{title} (Shaker et al. 2023)",
            "SwiftFormer",
            depths=depths,
            embed_dims=widths,
        )
        for name, title, depths, widths in (
            ("swiftformer-s", "SwiftFormer-S", [3, 3, 9, 6], [48, 64, 168, 224]),
            ("swiftformer-l1", "SwiftFormer-L1", [4, 3, 10, 5], [48, 96, 192, 384]),
        )
    ),
    _published_size(
        "poolformer-m36",
        "vision-transformer",
        "PoolFormer-M36 (Yu et al. 2022)",
        "PoolFormer",
        hidden_sizes=[96, 192, 384, 768],
        depths=[6, 6, 18, 6],
    ),
)

#: The published stage widths of PP-HGNetV2 B0-B6 (PaddleClas; timm's ``hgnetv2_b*``):
#: stem widths, then per stage (input, mid, output) channels, blocks, downsampling, light
#: blocks, window and layers per block; B0-B3 have learnable affine blocks.
_HGNET_V2_STAGES = {
    "b0": ((16, 16), ((16, 16, 64, 1, 0, 0, 3, 3), (64, 32, 256, 1, 1, 0, 3, 3),
                      (256, 64, 512, 2, 1, 1, 5, 3), (512, 128, 1024, 1, 1, 1, 5, 3))),
    "b1": ((24, 32), ((32, 32, 64, 1, 0, 0, 3, 3), (64, 48, 256, 1, 1, 0, 3, 3),
                      (256, 96, 512, 2, 1, 1, 5, 3), (512, 192, 1024, 1, 1, 1, 5, 3))),
    "b2": ((24, 32), ((32, 32, 96, 1, 0, 0, 3, 4), (96, 64, 384, 1, 1, 0, 3, 4),
                      (384, 128, 768, 3, 1, 1, 5, 4), (768, 256, 1536, 1, 1, 1, 5, 4))),
    "b3": ((24, 32), ((32, 32, 128, 1, 0, 0, 3, 5), (128, 64, 512, 1, 1, 0, 3, 5),
                      (512, 128, 1024, 3, 1, 1, 5, 5), (1024, 256, 2048, 1, 1, 1, 5, 5))),
    "b4": ((32, 48), ((48, 48, 128, 1, 0, 0, 3, 6), (128, 96, 512, 1, 1, 0, 3, 6),
                      (512, 192, 1024, 3, 1, 1, 5, 6), (1024, 384, 2048, 1, 1, 1, 5, 6))),
    "b5": ((32, 64), ((64, 64, 128, 1, 0, 0, 3, 6), (128, 128, 512, 2, 1, 0, 3, 6),
                      (512, 256, 1024, 5, 1, 1, 5, 6), (1024, 512, 2048, 2, 1, 1, 5, 6))),
    "b6": ((48, 96), ((96, 96, 192, 2, 0, 0, 3, 6), (192, 192, 512, 3, 1, 0, 3, 6),
                      (512, 384, 1024, 6, 1, 1, 5, 6), (1024, 768, 2048, 3, 1, 1, 5, 6))),
}  # fmt: skip


def _hgnet_v2(size: str) -> ZooModel:
    """PP-HGNetV2-``size`` (``_HGNET_V2_STAGES``) as a ``transformers`` classifier."""
    stem, stages = _HGNET_V2_STAGES[size]
    column = [list(values) for values in zip(*stages, strict=True)]
    return _published_size(
        f"hgnet-v2-{size}",
        "cnn",
        f"PP-HGNetV2-{size.upper()} (PaddleClas 2023)",
        "HGNetV2",
        stem_channels=[3, *stem],
        stage_in_channels=column[0],
        stage_mid_channels=column[1],
        stage_out_channels=column[2],
        hidden_sizes=column[2],
        stage_num_blocks=column[3],
        stage_downsample=[bool(x) for x in column[4]],
        stage_light_block=[bool(x) for x in column[5]],
        stage_kernel_size=column[6],
        stage_numb_of_layers=column[7],
        use_learnable_affine_block=size in ("b0", "b1", "b2", "b3"),
    )


#: PP-HGNetV2 B0-B6, a CNN family whose groups-1 convolutions (stems, 1 x 1
#: aggregations, the first convolutions of light blocks) mostly have shapes no earlier
#: training architecture had, and none of a held-out family: the measured configuration
#: dataset's fifth wave (``dagopt.rank.configs.build.EXTRA_WAVES``, issue 20), exportable
#: by name but neither in the catalogue nor held out.
HGNET_V2_MODELS: tuple[ZooModel, ...] = tuple(_hgnet_v2(size) for size in _HGNET_V2_STAGES)


def _check_text_model(
    name: str,
    family: str,
    title: str,
    prefix: str,
    head: str,
    pooler: bool = True,
    config_class: str | None = None,
    **config: Any,
) -> ZooModel:
    """A ``transformers`` text model ``{prefix}{head}({prefix}Config(**config))`` (eager
    attention, no cache, ``SEQUENCE_LENGTH`` tokens), ``config`` spelled out in the
    description; ``head`` ``"Model"`` returns ``last_hidden_state``, any other head
    ``logits``; ``pooler=False`` builds the model without its pooler; ``config_class``
    names another configuration class than ``{prefix}Config``."""
    output = "last_hidden_state" if head == "Model" else "logits"
    config_class = config_class or f"{prefix}Config"
    description = f"{prefix}{head}({config_class}({_spelled(config)})): {title}; {output}"

    def builder(size: str) -> Built:
        import transformers

        options = {"attn_implementation": "eager", "use_cache": False, **config}
        model_config = getattr(transformers, config_class)(**options)
        model_class = getattr(transformers, f"{prefix}{head}")
        model = model_class(model_config, **({} if pooler else {"add_pooling_layer": False}))
        inputs = (_tokens(model_config.vocab_size, SEQUENCE_LENGTH[size]),)
        return tensor_forward(model, ("input_ids",), output), inputs

    return ZooModel(name, family, description, _text(), builder)


#: Transformers whose attention (model width, head size) no architecture of the measured
#: configuration dataset's ``nlp`` collections has, at their published configurations:
#: the architectures of its check set (``dagopt.rank.configs.build.CHECK_MODELS``, issue
#: 20), which no shipped model trains on, exportable by name but neither in the
#: catalogue nor held out. None is of a held-out family (T5, ViT, Swin).
CHECK_TRANSFORMERS: tuple[ZooModel, ...] = (
    _check_text_model(
        "electra-small", "encoder", "ELECTRA-small discriminator (Clark et al. 2020),"
        " 12 layers, hidden 256, 4 heads", "Electra", "Model",
        embedding_size=128, hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
        intermediate_size=1024,
    ),
    _check_text_model(
        "mobilebert", "encoder", "MobileBERT (Sun et al. 2020), 24 layers, bottleneck"
        " attention at width 128, 4 heads, no pooler", "MobileBert", "Model", pooler=False,
        hidden_size=512, true_hidden_size=128, num_hidden_layers=24, num_attention_heads=4,
    ),
    _check_text_model(
        "smollm-135m", "decoder", "SmolLM-135M (Hugging Face 2024), a Llama-style decoder,"
        " 30 layers, hidden 576, 9 heads, 3 key-value heads", "Llama", "ForCausalLM",
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True,
    ),
    _check_text_model(
        "qwen2-0.5b", "decoder", "Qwen2-0.5B (Qwen team 2024), 24 layers, hidden 896,"
        " 14 heads, 2 key-value heads", "Qwen2", "ForCausalLM",
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True,
    ),
    _check_text_model(
        "opt-350m", "decoder", "OPT-350M (Zhang et al. 2022), 24 layers, hidden 1024,"
        " 16 heads, embeddings projected from 512", "OPT", "ForCausalLM",
        hidden_size=1024, ffn_dim=4096, num_hidden_layers=24, num_attention_heads=16,
        word_embed_proj_dim=512, do_layer_norm_before=False,
    ),
    _check_text_model(
        "phi-1.5", "decoder", "Phi-1.5 (Li et al. 2023), 24 layers, hidden 2048, 32 heads,"
        " partial rotary embeddings", "Phi", "ForCausalLM",
        vocab_size=51200, hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
        num_attention_heads=32, partial_rotary_factor=0.5,
    ),
)  # fmt: skip


#: Decoder language models at their published configurations, of families neither held
#: out nor in the catalogue, added on 2026-12-07 as development graphs for ``anytime``
#: (their training graphs), after the held-out transformers above had shown searches
#: ending far above the lower bound on two decoders with tied embeddings: exportable by
#: name, neither in the catalogue nor held out, and not used by the configuration
#: dataset.
DEV_DECODERS: tuple[ZooModel, ...] = (
    _check_text_model(
        "pythia-160m", "decoder", "Pythia-160M (Biderman et al. 2023), 12 layers, hidden"
        " 768, 12 heads, rotary embeddings on a quarter of each head", "GPTNeoX",
        "ForCausalLM", vocab_size=50304, hidden_size=768, num_hidden_layers=12,
        num_attention_heads=12, intermediate_size=3072, rotary_pct=0.25,
        tie_word_embeddings=False,
    ),
    _check_text_model(
        "gpt-neo-125m", "decoder", "GPT-Neo 125M (Black et al. 2021), 12 layers, hidden"
        " 768, 12 heads, global and local attention alternating", "GPTNeo", "ForCausalLM",
        vocab_size=50257, hidden_size=768, num_layers=12, num_heads=12,
        attention_types=[[["global", "local"], 6]], window_size=256,
    ),
    _check_text_model(
        "bloom-560m", "decoder", "BLOOM-560M (BigScience 2022), 24 layers, hidden 1024,"
        " 16 heads, ALiBi, tied embeddings of a 250,880-token vocabulary", "Bloom",
        "ForCausalLM", vocab_size=250880, hidden_size=1024, n_layer=24, n_head=16,
    ),
    _check_text_model(
        "gemma3-270m", "decoder", "Gemma 3 270M (Gemma team 2025), 18 layers, hidden 640,"
        " 4 heads, 1 key-value head, tied embeddings of a 262,144-token vocabulary",
        "Gemma3", "ForCausalLM", config_class="Gemma3TextConfig", vocab_size=262144,
        hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
        num_attention_heads=4, num_key_value_heads=1, head_dim=256,
        tie_word_embeddings=True,
    ),
    _check_text_model(
        "olmo-1b", "decoder", "OLMo-1B (Groeneveld et al. 2024), 16 layers, hidden 2048,"
        " 16 heads, tied embeddings", "Olmo", "ForCausalLM", vocab_size=50304,
        hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=16, tie_word_embeddings=True,
    ),
    _check_text_model(
        "tinyllama-1.1b", "decoder", "TinyLlama-1.1B (Zhang et al. 2024), a Llama-style"
        " decoder, 22 layers, hidden 2048, 32 heads, 4 key-value heads", "Llama",
        "ForCausalLM", vocab_size=32000, hidden_size=2048, intermediate_size=5632,
        num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4,
        tie_word_embeddings=False,
    ),
)  # fmt: skip


_BY_NAME = {
    model.name: model
    for model in MODELS
    + HELD_OUT_MODELS
    + TRAINING_CNNS
    + PATCH_EMBEDDING_MODELS
    + CONV_SHAPE_MODELS
    + SIZE_VARIANT_MODELS
    + HGNET_V2_MODELS
    + CHECK_TRANSFORMERS
    + DEV_DECODERS
}


def model_names(held_out: bool = False) -> list[str]:
    """Names of the catalogue's models in catalogue order; ``held_out=True``: the held-out
    multi-branch CNNs instead."""
    return [model.name for model in (HELD_OUT_MODELS if held_out else MODELS)]


def get_model(name: str) -> ZooModel:
    """The catalogue entry ``name``; an unknown name raises ``InputError`` listing the names."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InputError(f"unknown zoo model {name!r} (models: {', '.join(_BY_NAME)})") from None
