"""Three tasks of the Slurm array script, run as separate processes with the
variables Slurm sets, merged, measure exactly the candidates of one unsharded
exhaustive run of the same plan.

usage: cluster_shards_test.py ATTNFORGE SBATCH_SCRIPT
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# A small space (online tiles of 16 x 16, 8 lanes; its register tiles, loop
# order and Q copy searched), its first 16 proposals: the presets that fit,
# then candidates. A tiny shape, no autoschedulers.
KNOBS = {"form": "online", "query_tile": "16", "key_block": "16", "vector_width": "8",
         "unroll": "1", "register_rows": "2,4", "register_vectors": "1", "kv_splits": "1",
         "pv_rows": "0", "pv_vectors": "0", "pv_chunk": "0", "prefetch_blocks": "0"}
CANDIDATES = 16
TUNE_ARGS = (f"--strategy exhaustive --max-candidates {CANDIDATES} --budget 20m --confirm 0 "
             "--no-autoschedulers --jobs 1 --threads 1 " +
             " ".join(f"--knob {name}={values}" for name, values in KNOBS.items()))
PLAN = "# one job\nfull.mha2.d32.f32 1,2,16,16 host\n"


def candidates(paths):
    """Schedule JSON of every candidate record (not the naive baseline)."""
    found = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            record = json.loads(line)
            if isinstance(record["schedule"], dict):
                assert record["status"] == "ok", record
                found.append(json.dumps(record["schedule"], sort_keys=True))
    return found


def main():
    attnforge, script = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "plan.txt").write_text(PLAN)
        base = dict(os.environ, ATTNFORGE=attnforge, PLAN=str(work / "plan.txt"),
                    OUT=str(work / "sharded"), TUNE_ARGS=TUNE_ARGS)
        # An array of tasks 1-3, as `sbatch --array=1-3` numbers them.
        tasks = []
        for task in (1, 2, 3):
            env = dict(base, SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_MIN="1",
                       SLURM_ARRAY_TASK_MAX="3", SLURM_ARRAY_JOB_ID="77")
            tasks.append(subprocess.Popen(["bash", script], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        for task in tasks:
            output = task.communicate()[0]
            assert task.returncode == 0, output
            assert "shard" in output and " of 3" in output, output
        single = work / "single.jsonl"
        subprocess.run([attnforge, "tune", "--plan", str(work / "plan.txt"), "--db", str(single),
                        *TUNE_ARGS.split()], check=True, capture_output=True)
        merged = work / "merged.jsonl"
        shard_files = sorted((work / "sharded").glob("shard-*.jsonl"))
        assert [p.name for p in shard_files] == ["shard-1.jsonl", "shard-2.jsonl",
                                                 "shard-3.jsonl"], shard_files
        subprocess.run([attnforge, "db", "merge", "--out", str(merged), *map(str, shard_files)],
                       check=True, capture_output=True)

        per_shard = [candidates([p]) for p in shard_files]
        unsharded = candidates([single])
        assert len(unsharded) == CANDIDATES == len(set(unsharded)), unsharded
        everything = [c for shard in per_shard for c in shard]
        assert len(everything) == len(set(everything)), "a candidate was measured twice"
        assert sorted(candidates([merged])) == sorted(unsharded), (per_shard, unsharded)
        assert sum(1 for shard in per_shard if shard) >= 2, per_shard
        print(f"3 shards measured {[len(s) for s in per_shard]} of the unsharded run's "
              f"{CANDIDATES}")


if __name__ == "__main__":
    main()
