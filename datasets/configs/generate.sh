#!/usr/bin/env bash
# Measure (or continue measuring) the shipped configuration dataset (docs/configs_dataset.md).
# Resumable: every call skips the graphs already written, so rerun it to continue.
# Steps grow the collections together, so a partial run covers every collection and split.
# Run from the repository root: bash datasets/configs/generate.sh
set -euo pipefail
dagopt() { python -c 'from dagopt.cli.entry import main; main()' "$@"; }
for step in 8 16 24 32 40 55; do
  dagopt generate configs --collection tile --graphs "$step" --out datasets/configs
  layout=$((step < 40 ? step : 40))
  for variant in random default; do
    for kind in layout-nlp layout-xla; do
      dagopt generate configs --collection "$kind" --variant "$variant" --graphs "$layout" \
        --out datasets/configs
    done
  done
done
# Issue 20: more training architectures (build.EXTRA_MODELS), in a plan of their own, so
# the files above stay as they are; all of them land in the train split.
for variant in random default; do
  dagopt generate configs --collection layout-xla --variant "$variant" --extra --graphs 24 \
    --out datasets/configs
  dagopt generate configs --collection layout-nlp --variant "$variant" --extra --graphs 14 \
    --out datasets/configs
done
dagopt generate configs --collection tile --extra --graphs 35 --out datasets/configs
# Issue 20, later: 48 more layout:xla:random training graphs of the extra architectures.
dagopt generate configs --collection layout-xla --variant random --extra --graphs 72 \
  --out datasets/configs
# Issue 20, later still: layout:nlp attention at sequence lengths drawn from 2..64 for the
# train and valid architectures (build.LENGTH_RANGE; the zoo's inputs give powers of two).
for variant in random default; do
  dagopt generate configs --collection layout-nlp --variant "$variant" --lengths --graphs 60 \
    --out datasets/configs
done
# Issue 20, wave 2: patch-embedding vision transformers (build.EXTRA_WAVES[1]: PVT-Tiny and
# PVTv2-B0), whose convolutions have stride = window; all of them land in the train split.
for variant in random default; do
  dagopt generate configs --collection layout-xla --variant "$variant" --extra-wave 2 \
    --graphs 14 --out datasets/configs
done
dagopt generate configs --collection tile --extra-wave 2 --graphs 20 --out datasets/configs
# Issue 20, wave 2 too: tile's dense kernels of the train and valid transformers' linear
# layers at token counts drawn from 2..64 (build.LENGTH_RANGE).
dagopt generate configs --collection tile --lengths --graphs 64 --out datasets/configs
# Issue 20, 2026-11-27: the rest of the --extra plan for layout:xla:random, 51 more DenseNet-121
# and GoogLeNet training programs (docs/results.md, "The rest of the extra plan").
dagopt generate configs --collection layout-xla --variant random --extra --graphs 123 \
  --out datasets/configs
# Issue 20, 2026-11-27, wave 3: CNN and hybrid backbones whose convolutions have shapes no
# earlier training architecture had (build.EXTRA_WAVES[2]: RegNetY-4.0GF, SwiftFormer-XS,
# ResNet-18, PoolFormer-S12, CvT-13, DINOv2 ViT-B/14), for layout:xla:random only.
dagopt generate configs --collection layout-xla --variant random --extra-wave 3 --graphs 69 \
  --out datasets/configs
# Issue 20, 2026-11-27, wave 4: the other published sizes of wave 3's families with new conv
# shapes (build.EXTRA_WAVES[3]: RegNetX-200MF/400MF/3.2GF, RegNetY-1.6GF/8.0GF, SwiftFormer-S/L1,
# PoolFormer-M36), the first 72 of their 131 programs, for layout:xla:random only.
dagopt generate configs --collection layout-xla --variant random --extra-wave 4 --graphs 72 \
  --out datasets/configs
# Issue 20, 2026-11-28: wave 3's programs for layout:xla:default too, measured as that collection
# measures (the genetic search's visited layouts; docs/results.md, "Waves 3 and 4 for xla default").
dagopt generate configs --collection layout-xla --variant default --extra-wave 3 --graphs 69 \
  --out datasets/configs
dagopt generate configs --collection layout-xla --variant default --extra-wave 4 --graphs 72 \
  --out datasets/configs
# Issue 20, 2026-11-28: the rest of the --extra plan for layout:xla:default (99 DenseNet-121,
# GoogLeNet and other programs layout:xla:random already trains on; docs/results.md, "Waves 3
# and 4 for xla default", step 3).
dagopt generate configs --collection layout-xla --variant default --extra --graphs 123 \
  --out datasets/configs
# Issue 20, 2026-11-28: the --lengths plan of layout:nlp:random on to its first 160 programs (94
# new: 80 train, 14 valid T5; docs/results.md, "More drawn-length programs for nlp random").
dagopt generate configs --collection layout-nlp --variant random --lengths --graphs 160 \
  --out datasets/configs
# Issue 20, 2026-11-28: the same 94 programs for layout:nlp:default, measured as that collection
# measures (docs/results.md, "More drawn-length programs for nlp default").
dagopt generate configs --collection layout-nlp --variant default --lengths --graphs 160 \
  --out datasets/configs
