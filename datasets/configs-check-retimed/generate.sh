#!/usr/bin/env bash
# The check set (datasets/configs-check) timed again on the machine that timed the
# training data (docs/configs_dataset.md, "One machine per collection"): the same plans,
# seeds and protocol, so the random collections hold the same configurations.
# Resumable: every call skips the graphs already written. Run from the repository root:
# bash datasets/configs-check-retimed/generate.sh
set -euo pipefail
dagopt() { python -c 'from dagopt.cli.entry import main; main()' "$@"; }
# Issue 20, 2026-11-29.
for variant in random default; do
  dagopt generate configs --collection layout-xla --variant "$variant" --check --graphs 42 \
    --out datasets/configs-check-retimed
  dagopt generate configs --collection layout-nlp --variant "$variant" --check --lengths \
    --graphs 60 --out datasets/configs-check-retimed
done
