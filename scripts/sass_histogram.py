"""Instruction-class histograms of an nvdisasm SASS listing, split by loop depth.

A loop is the address range from a backward branch's target to the branch
itself; an instruction's depth is the number of such ranges holding it.
Trip counts are unknown offline, so in-loop counts are a proxy for the
per-iteration cost of the hot loop.
"""

import re

# Opcode (before the first dot) -> class; anything else counts as "other".
CLASSES = {
    "FFMA": "ffma", "FMUL": "fmul_fadd", "FADD": "fmul_fadd",
    "HFMA2": "ffma", "HMUL2": "fmul_fadd", "HADD2": "fmul_fadd",
    "HMMA": "hmma",
    "LDG": "ldg", "LD": "ldg", "STG": "stg", "ST": "stg",
    "LDS": "lds", "STS": "sts",
    "LDL": "local", "STL": "local",
    "BAR": "bar",
    "SHFL": "shfl",
    "MUFU": "mufu",
    "BRA": "branch", "BRX": "branch", "JMP": "branch", "JMX": "branch",
}
CLASS_NAMES = sorted(set(CLASSES.values())) + ["other"]

FUNCTION = re.compile(r"^\.text\.(\S+):$")
LABEL = re.compile(r"^(\.L_x_\d+):$")
INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\S*)\s*(.*?)\s*;")
TARGET = re.compile(r"`\((\.L_x_\d+)\)")


def parse(listing):
    """kernel name -> list of (address, opcode, operands), in listing order, and its labels."""
    kernels, labels, current = {}, {}, None
    pending = []
    for line in listing.splitlines():
        match = FUNCTION.match(line.strip())
        if match:
            current = match.group(1)
            kernels[current] = []
            labels[current] = {}
            pending = []
            continue
        if current is None:
            continue
        match = LABEL.match(line.strip())
        if match:
            pending.append(match.group(1))
            continue
        match = INSTRUCTION.match(line)
        if match:
            address = int(match.group(1), 16)
            for label in pending:
                labels[current][label] = address
            pending = []
            if match.group(3) != "NOP":  # alignment padding, never executed
                kernels[current].append((address, match.group(3), match.group(5)))
    return kernels, labels


def loops(instructions, labels):
    """(start, end) address ranges of backward branches; a branch to itself
    is the trap nvdisasm prints after the last EXIT, not a loop."""
    ranges = []
    for address, opcode, operands in instructions:
        if CLASSES.get(opcode) != "branch":
            continue
        match = TARGET.search(operands)
        if match and match.group(1) in labels and labels[match.group(1)] < address:
            ranges.append((labels[match.group(1)], address))
    return ranges


def histogram(instructions, labels):
    """Counts per class outside loops, inside any loop, and in the deepest loops."""
    ranges = loops(instructions, labels)
    depths = [sum(start <= a <= end for start, end in ranges) for a, _, _ in instructions]
    deepest = max(depths, default=0)
    result = {"loops": len(ranges), "max_depth": deepest, "instructions": len(instructions)}
    for where in ("outside", "loop", "inner"):
        for name in CLASS_NAMES:
            result[f"{where}_{name}"] = 0
    for (_, opcode, _), depth in zip(instructions, depths):
        name = CLASSES.get(opcode, "other")
        result[f"{'loop' if depth else 'outside'}_{name}"] += 1
        if depth and depth == deepest:
            result[f"inner_{name}"] += 1
    return result


def histograms(listing):
    """kernel name -> histogram, for every function in an nvdisasm listing."""
    kernels, labels = parse(listing)
    return {name: histogram(code, labels[name]) for name, code in kernels.items()}
