#!/usr/bin/env python3
"""Before/after comparison of a benchmark binary (issue 33: "within 10 % of before, measured in
the same run with the before and after binaries alternated").

    scripts/bench-ab.py BEFORE_BINARY AFTER_BINARY [ROUNDS]

Runs BEFORE, AFTER, BEFORE, AFTER, ... (ROUNDS each, default 3) with `--bench`, reads the first
`median N` of every line that has one (the bench's own per-operation medians), takes each
figure's median over the rounds per side, and prints them side by side with after/before. A
figure is within the bound when after <= 1.10 x before; the summary line gives how many are and
the geometric mean of the ratios. Exit status 0 either way: the figures are the result."""
import math
import re
import statistics
import subprocess
import sys

MEDIAN = re.compile(r"median\s+(\d+)")


def figures(text):
    out = {}
    section = ""
    for line in text.splitlines():
        if re.match(r"^\s*\d+ CPUs frame", line) and "median" not in line:
            section = " ".join(line.split())
            continue
        m = MEDIAN.search(line)
        if not m:
            continue
        # the label: the line up to its first median, digits of the figures left out
        label = line[: m.start()]
        label = re.sub(r"\b(mean|p99\.?9?|median)\s+\d+", r"\1", label)
        key = (section + " | " if section else "") + " ".join(label.split())
        n = 2
        k = key
        while k in out:
            k = f"{key} #{n}"
            n += 1
        out[k] = int(m.group(1))
    return out


def run(binary):
    r = subprocess.run([binary, "--bench"], capture_output=True, text=True, check=True)
    return figures(r.stdout)


def main():
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    runs = {"before": [], "after": []}
    for i in range(rounds):
        for side, b in (("before", before), ("after", after)):
            runs[side].append(run(b))
            print(f"round {i + 1}/{rounds}: {side} done", file=sys.stderr, flush=True)
    keys = [k for k in runs["before"][0] if all(k in r for r in runs["before"] + runs["after"])]
    print(f"{'figure (median ns, median of ' + str(rounds) + ' rounds per side)':<90} {'before':>9} {'after':>9} {'after/before':>12}")
    ratios = []
    over = []
    for k in keys:
        b = statistics.median(r[k] for r in runs["before"])
        a = statistics.median(r[k] for r in runs["after"])
        ratio = a / b if b else float("nan")
        ratios.append(ratio)
        flag = "" if ratio <= 1.10 else "  > 1.10"
        if flag:
            over.append(k)
        print(f"{k[:90]:<90} {b:>9.0f} {a:>9.0f} {ratio:>12.3f}{flag}")
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    print(f"{len(keys) - len(over)}/{len(keys)} figures within 10 % of before; geometric mean of after/before {gm:.3f}")


if __name__ == "__main__":
    main()
