"""Kernel launches of a Halide CUDA pipeline, read from its lowered statement.

Grid sizes in the statement are symbolic (lets over the buffers' extents);
they are evaluated here for one concrete shape, and launches inside host
loops are counted once per iteration.
"""

import re

LET = re.compile(r"^\s*let (\S+) = (.*)$")
LOOP = re.compile(r"^(\s*)(?:for|parallel)\w*(?:<[^>]*>)?\s*\((.*)\) \{$")
RUN = re.compile(r"halide_cuda_run\((.*)$")
NAME = re.compile(r"[A-Za-z_][\w.$]*")
FUNCTIONS = {"min": min, "max": max, "int64": int, "int32": int, "uint64": int, "uint32": int}


def split_args(text):
    """Top-level comma-separated arguments of text (which starts after an open paren)."""
    args, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                args.append(text[start:i].strip())
                return args
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    args.append(text[start:].strip())
    return args


def shape_values(batch, heads, kv_heads, q_len, k_len, dim):
    """Extents, mins and strides of the pipeline's buffers (dims: d, position, head, batch)."""
    values = {}
    for buffer, length, h in (("q", q_len, heads), ("out", q_len, heads),
                              ("k", k_len, kv_heads), ("v", k_len, kv_heads)):
        extents = [dim, length, h, batch]
        stride = 1
        for i, extent in enumerate(extents):
            values[f"{buffer}.extent.{i}"] = extent
            values[f"{buffer}.min.{i}"] = 0
            values[f"{buffer}.stride.{i}"] = stride
            stride *= extent
    return values


class Evaluator:
    """Integer values of the statement's lets, evaluated on demand."""

    def __init__(self, lets, values):
        self.lets, self.values = lets, dict(values)

    def value(self, expr):
        """expr's integer value, or None where it is not plain integer arithmetic."""
        expr = expr.strip()
        if "(uint1)" in expr or '"' in expr or "select" in expr:
            return None
        names = {}
        for name in set(NAME.findall(expr)):
            if name in FUNCTIONS:
                continue
            resolved = self.lookup(name)
            if resolved is None:
                return None
            names[name] = resolved
        code = NAME.sub(lambda m: m.group(0) if m.group(0) in FUNCTIONS
                        else f"V[{m.group(0)!r}]", expr).replace("/", "//")
        try:
            # Halide integer division floors, as // does.
            return int(eval(code, {"__builtins__": {}, "V": names, **FUNCTIONS}))
        except Exception:  # anything beyond integer arithmetic
            return None

    def lookup(self, name):
        if name not in self.values:
            self.values[name] = None  # guards against cycles
            if name in self.lets:
                self.values[name] = self.value(self.lets[name])
        return self.values[name]


def launches(stmt_text, values):
    """One dict per launch site: kernel, blocks, threads, shared bytes, times (per call)."""
    lines = stmt_text.splitlines()
    start = next((i for i, l in enumerate(lines) if "func " in l and "external" in l), 0)
    host = lines[start:]
    lets = {}
    for line in host:
        match = LET.match(line)
        if match:
            lets.setdefault(match.group(1), match.group(2))
    evaluator = Evaluator(lets, values)
    result, loops = [], []
    for line in host:
        indent = len(line) - len(line.lstrip())
        while loops and indent <= loops[-1][0] and line.strip().startswith("}"):
            loops.pop()
        match = LOOP.match(line)
        if match:
            args = split_args(match.group(2) + ")")
            extent = evaluator.value(args[-1]) if len(args) >= 3 else None
            loops.append((indent, extent if extent is not None else 1))
            continue
        match = RUN.search(line)
        if not match:
            continue
        args = split_args(match.group(1))
        grid = [evaluator.value(a) for a in args[2:5]]
        block = [evaluator.value(a) for a in args[5:8]]
        times = 1
        for _, extent in loops:
            times *= extent
        result.append({
            "kernel": args[1].strip('"'),
            "blocks": None if None in grid else grid[0] * grid[1] * grid[2],
            "threads": None if None in block else block[0] * block[1] * block[2],
            "shared_bytes": evaluator.value(args[8]),
            "times": times,
        })
    return result
