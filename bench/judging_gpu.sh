#!/usr/bin/env bash
# The judging measurements that need a GPU machine with many cores, in one go (each step under its own
# time limit, so one that fails or runs long leaves the others their time):
#   - bench/judging_shards.py: one judge process against four sharing one store (--call-shards), fake
#     servers answering at once (the client-bound case), SHARDS_PROMPTS generated prompts (30 calls each);
#     then the four processes again on fewer prompts under py-spy (where each process's threads wait);
#   - two judge models with random weights (bench/random_judge_model.py: SmolLM2-135M's shape and
#     Qwen2.5-1.5B's layer sizes), since speed depends on a model's shape, not its weights;
#   - bench/judging.py local --skip-today on the GPU for each: soft and swapped, verdicts/s, prompt tokens/s,
#     GPU peak memory, for several --token-budget values;
#   - `python -m engine judge --backend local` as a process, the command a user runs, soft and swapped.
# STEPS (default "shards spy local cli") picks which groups run. Everything goes to one log and one archive
# (bench/_results) in OUTDIR, the py-spy files in OUTDIR/spy.tgz.
#
#   bash bench/judging_gpu.sh OUTDIR [TOKENIZER_FOLDER] [QUESTIONS]
set -u
OUTDIR=${1:?usage: bash bench/judging_gpu.sh OUTDIR [TOKENIZER_FOLDER] [QUESTIONS]}
TOK=${2:-$HOME/.cache/tournament-lens/models/SmolLM2-135M-Instruct-Q4_1}
QUESTIONS=${3:-20}
STEPS=${STEPS:-shards spy local cli}
SHARDS_PROMPTS=${SHARDS_PROMPTS:-5000}
SPY_PROMPTS=${SPY_PROMPTS:-1500}
MODELS=${MODELS:-/tmp/lens-gpu-models}
LOG=$OUTDIR/judging_gpu.log
mkdir -p "$OUTDIR" "$MODELS"
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
unset PYTHONDONTWRITEBYTECODE

step() {  # step NAME SECONDS COMMAND...: run it under a limit, its output and exit status into the log
  local name=$1 limit=$2
  shift 2
  echo "== $name: $* ($(date +%T), load $(cut -d' ' -f1 /proc/loadavg))" >> "$LOG"
  /usr/bin/time -f "$name: %e s wall, %U s user, %S s sys, %M kB peak RSS" timeout "$limit" "$@" >> "$LOG" 2>&1
  echo "== $name: exit $? ($(date +%T))" >> "$LOG"
}

judge_cli() {  # judge_cli NAME MODEL_FOLDER PROTOCOL BUDGET EXTRA...: one judge process on a fresh store
  local name=$1 model=$2 protocol=$3 budget=$4
  shift 4
  rm -f "/tmp/$name.duckdb"
  step "$name" 50 python -m engine --db "/tmp/$name.duckdb" judge --dataset gpu --inputs mt_bench \
    --backend local --model "$model" --protocol "$protocol" --token-budget "$budget" --batch-size 512 \
    --no-progress --format csv "$@"
}

has() { [[ " $STEPS " == *" $1 "* ]]; }

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; git log -1 --format=%h; python -c \
  "import torch, transformers, duckdb; print(torch.__version__, transformers.__version__, duckdb.__version__)"; } \
  >> "$LOG" 2>&1

if has shards; then
  step shards 270 python bench/judging_shards.py --processes 4 --servers 12 --synthetic "$SHARDS_PROMPTS" \
    --setups shards:1,shards:n
  cp bench/_results/judging_shards.json "$OUTDIR/judging_shards_$SHARDS_PROMPTS.json" 2>/dev/null
fi
if has spy; then
  step spy 60 python bench/judging_shards.py --processes 4 --servers 12 --synthetic "$SPY_PROMPTS" \
    --setups shards:n --spy /tmp/lens-spy
  tar -czf "$OUTDIR/spy.tgz" -C /tmp lens-spy 2>/dev/null  # one file back, not one per process
fi
if has local; then
  step make-135m 40 python bench/random_judge_model.py --shape bench/model_shapes/smollm2-135m.json \
    --tokenizer "$TOK" --out "$MODELS/smollm2-135m" --device cuda
  step local-135m 50 python bench/judging.py local --device cuda --model "$MODELS/smollm2-135m" \
    --questions "$QUESTIONS" --budgets 32768,131072 --max-tokens 16 --skip-today
  cp bench/_results/judging_local.json "$OUTDIR/judging_local_135m.json" 2>/dev/null
  step make-1.5b 40 python bench/random_judge_model.py --shape bench/model_shapes/qwen2-1.5b-layers.json \
    --tokenizer "$TOK" --out "$MODELS/qwen2-1.5b-layers" --device cuda
  step local-1.5b 50 python bench/judging.py local --device cuda --model "$MODELS/qwen2-1.5b-layers" \
    --questions "$QUESTIONS" --budgets 32768,131072 --max-tokens 16 --skip-today
  cp bench/_results/judging_local.json "$OUTDIR/judging_local_1.5b.json" 2>/dev/null
fi
if has cli; then
  judge_cli cli-soft-135m "$MODELS/smollm2-135m" soft 131072
  judge_cli cli-swapped-1.5b "$MODELS/qwen2-1.5b-layers" swapped 131072 --limit 5 --max-tokens 32
fi
echo "== done $(date +%T)" >> "$LOG"
tar -czf "$OUTDIR/results.tgz" -C bench _results 2>/dev/null
