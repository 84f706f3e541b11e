#!/usr/bin/env bash
# Paper 004 on a CPU + GPU machine in one call, sized for a short lease: the steps of
# docs/hsdag.md "Measured on a CPU + GPU", each written to $OUT (default bench-out).
#
#   bash benchmarks/hsdag_gpu.sh                               # cpu,cuda:0, ends by 500 s
#   DEVICES=cpu,cpu MODELS=bert-base EPISODES=1 PLACEMENTS=6 bash benchmarks/hsdag_gpu.sh
#
# 1. a profile of every model (benchmarks/hsdag_profile.py): op times on each device and
#    the fitted transfer cost;
# 2. Spearman's rho of the profiled predictions against measured PyTorch latency over
#    PLACEMENTS placements (benchmarks/hsdag_profile_spearman.py), each record kept
#    as $OUT/spearman-MODEL.json for rescoring without the hardware;
# 3. with TRANSFER="FILE..." (placements written by hsdag_profile_transfer.py place), those
#    placements measured beside CPU-only and GPU-only;
# 4. Table 2 MEASURED in PyTorch (benchmarks/hsdag_table2.py --env torch), seed 0, every
#    learned placer trained for EPISODES x 20 measured placements, BRKGA with as many;
#    one model after the other while DEADLINE seconds (from the start) allow.
# A step that fails is reported and the next one runs.
set -uo pipefail
out=${OUT:-bench-out}
devices=${DEVICES:-cpu,cuda:0}
models=${MODELS-inception-v3 resnet-50 bert-base}
table2_models=${TABLE2_MODELS-resnet-50 bert-base inception-v3}
episodes=${EPISODES:-3}
placements=${PLACEMENTS:-50}
deadline=${DEADLINE:-500}
tag=$(echo "$devices" | tr -d ':' | tr ',' '-')
mkdir -p "$out"
export PYTHONUNBUFFERED=1

python -c "import torch; print('torch', torch.__version__, '| cpu threads', torch.get_num_threads(),
'| gpu', torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)"
for model in $models; do
  python benchmarks/hsdag_profile.py --model "$model" --devices "$devices" \
    --out "$out/hsdag-profile-$model-$tag.json" || echo "profile of $model FAILED"
done
for model in $models; do
  python benchmarks/hsdag_profile_spearman.py --model "$model" --devices "$devices" \
    --profile "$out/hsdag-profile-$model-$tag.json" --placements "$placements" \
    --save "$out/spearman-$model.json" \
    || echo "Spearman of $model FAILED"
done
if [[ -n "${TRANSFER:-}" ]]; then
  # shellcheck disable=SC2086  # a list of files
  python benchmarks/hsdag_profile_transfer.py measure $TRANSFER \
    --deadline $((deadline - SECONDS - 60)) || echo "transfer measurement FAILED"
fi
for model in $table2_models; do
  left=$((deadline - SECONDS))
  if ((left < 60)); then
    echo "Table 2 of $model not run: $left s left of $deadline"
    continue
  fi
  timeout "$left" python benchmarks/hsdag_table2.py --env torch --devices "$devices" \
    --models "$model" --seeds 0 --episodes "$episodes" --rounds 10 --random 20 \
    --search brkga || echo "Table 2 of $model stopped (exit $?) at $SECONDS s"
done
echo "done in $SECONDS s"
