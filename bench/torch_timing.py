"""What the torch peers share: their timing rule, the same as the C++ benchmark's
(one warm-up, the caller's first run, then repeats until at least 3 runs and
min_time seconds, stopping early once the best and third-best are within 3%),
and how they report."""
import json
import os
import time


def time_runs(run, min_time, max_runs=50, before_each=None):
    """`before_each`: untimed work before every timed run (a cache eviction)."""
    times = []
    total = 0.0
    while len(times) < max_runs:
        if before_each:
            before_each()
        start = time.perf_counter()
        run()
        ms = (time.perf_counter() - start) * 1e3
        times.append(ms)
        total += ms / 1e3
        s = sorted(times)
        if len(s) >= 3 and total >= min_time and s[2] <= s[0] * 1.03:
            break
    s = sorted(times)
    return {"ms_median": s[len(s) // 2], "ms_min": s[0], "ms_max": s[-1], "repeats": len(s)}


def write_result(directory, timing, out, torch_version, file_name="result.json", extra=None):
    """`file_name` in `directory`: the timing, torch's version and `extra`; next to it, with
    the extension .bin, the output as raw f32 for the benchmark to check as it checks its own."""
    output = os.path.join(directory, os.path.splitext(file_name)[0] + ".bin")
    out.detach().float().cpu().contiguous().numpy().tofile(output)
    result = dict(timing)
    result.update({"torch": torch_version})
    result.update(extra or {})
    with open(os.path.join(directory, file_name), "w") as f:
        json.dump(result, f)


def write_error(directory, error, file_name):
    """`file_name` in `directory`, saying why a peer could not run."""
    with open(os.path.join(directory, file_name), "w") as f:
        json.dump({"error": error}, f)
