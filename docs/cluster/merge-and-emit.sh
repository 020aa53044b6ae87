#!/bin/bash
# After every task of the tuning array: one database of all shards, then the
# package of kernels. Runs as a Slurm job (sbatch --dependency=afterok:<array
# job>) or a Kubernetes Job after the indexed one, or by hand.
#SBATCH --job-name=attnforge-merge
#SBATCH --output=slurm-%j.out
set -euo pipefail
ATTNFORGE=${ATTNFORGE:-build/attnforge}
OUT=${OUT:-tuning}
"$ATTNFORGE" db merge --out "$OUT/tuning.jsonl" "$OUT"/shard-*.jsonl
"$ATTNFORGE" emit --db "$OUT/tuning.jsonl" --targets "${EMIT_TARGETS:-host}" \
  --out "$OUT/attnforge-kernels"
