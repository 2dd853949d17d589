#!/usr/bin/env bash
# The judging measurements that need a GPU machine with many cores, in one go (each step under its own
# time limit, so one that fails or runs long leaves the others their time):
#   - two judge models with random weights (bench/random_judge_model.py: SmolLM2-135M's shape and
#     Qwen2.5-1.5B's layer sizes), since speed depends on a model's shape, not its weights;
#   - bench/judging.py local --skip-today on the GPU for each: soft (with and without prefix reuse) and
#     swapped, verdicts/s, prompt tokens/s, GPU peak memory, for several --token-budget values (today's
#     one-by-one ways take minutes on a GPU: run them with the bench's own command when wanted);
#   - `python -m engine judge --backend local` as a process, the command a user runs, soft and swapped;
#   - bench/judging_shards.py: one judge process against several sharing one store (--call-shards).
# Everything goes to one log and one archive of bench/_results in OUTDIR.
#
#   bash bench/judging_gpu.sh OUTDIR [TOKENIZER_FOLDER] [QUESTIONS]
set -u
OUTDIR=${1:?usage: bash bench/judging_gpu.sh OUTDIR [TOKENIZER_FOLDER] [QUESTIONS]}
TOK=${2:-$HOME/.cache/tournament-lens/models/SmolLM2-135M-Instruct-Q4_1}
QUESTIONS=${3:-20}
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
  step "$name" 45 python -m engine --db "/tmp/$name.duckdb" judge --dataset gpu --inputs mt_bench \
    --backend local --model "$model" --protocol "$protocol" --token-budget "$budget" --batch-size 512 \
    --no-progress --format csv "$@"
}

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; python -c \
  "import torch, transformers; print(torch.__version__, transformers.__version__)"; } >> "$LOG" 2>&1

step make-135m 30 python bench/random_judge_model.py --shape bench/model_shapes/smollm2-135m.json \
  --tokenizer "$TOK" --out "$MODELS/smollm2-135m" --device cuda
judge_cli cli-soft-135m "$MODELS/smollm2-135m" soft 32768
step local-135m 45 python bench/judging.py local --device cuda --model "$MODELS/smollm2-135m" \
  --questions "$QUESTIONS" --budgets 8192,32768,131072 --max-tokens 16 --skip-today
cp bench/_results/judging_local.json "$OUTDIR/judging_local_135m.json" 2>/dev/null

step shards 50 python bench/judging_shards.py --processes 4 --servers 12 --concurrency 64 --synthetic 400 \
  --setups shards:1,shards:n
cp bench/_results/judging_shards.json "$OUTDIR/" 2>/dev/null

step make-1.5b 30 python bench/random_judge_model.py --shape bench/model_shapes/qwen2-1.5b-layers.json \
  --tokenizer "$TOK" --out "$MODELS/qwen2-1.5b-layers" --device cuda
judge_cli cli-soft-1.5b "$MODELS/qwen2-1.5b-layers" soft 32768
step local-1.5b 45 python bench/judging.py local --device cuda --model "$MODELS/qwen2-1.5b-layers" \
  --questions "$QUESTIONS" --budgets 8192,32768,131072 --max-tokens 16 --skip-today
cp bench/_results/judging_local.json "$OUTDIR/judging_local_1.5b.json" 2>/dev/null
judge_cli cli-swapped-1.5b "$MODELS/qwen2-1.5b-layers" swapped 32768 --limit 5 --max-tokens 32
echo "== done $(date +%T)" >> "$LOG"
