#!/usr/bin/env bash
# Measure (or continue measuring) the check set (docs/configs_dataset.md, "The check set"):
# architectures no shipped model trains on, all in the test split of this root.
# Resumable: every call skips the graphs already written. Run from the repository root:
# bash datasets/configs-check/generate.sh
set -euo pipefail
dagopt() { python -c 'from dagopt.cli.entry import main; main()' "$@"; }
# Issue 20, 2026-11-28: six transformers of attention widths no nlp architecture has
# (dagopt.zoo.models.CHECK_TRANSFORMERS), ten programs each at drawn lengths.
for variant in random default; do
  dagopt generate configs --collection layout-nlp --variant "$variant" --check --lengths \
    --graphs 60 --out datasets/configs-check
done
# Issue 20, 2026-11-28: PP-HGNetV2 B0-B6 (wave 5, not adopted), six programs each.
for variant in default random; do
  dagopt generate configs --collection layout-xla --variant "$variant" --check --graphs 42 \
    --out datasets/configs-check
done
