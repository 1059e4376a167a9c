#!/usr/bin/env python3
"""Coverage of NCCL's message catalog: classified / extracted WARN formats, per source and per
NCCL code area, as a Markdown table (docs/logs.md keeps the latest).

  python3 scripts/catalog/coverage.py \
      crates/fabrik-parse/data/nccl-messages.tsv crates/fabrik-parse/data/rccl-messages.tsv \
      crates/fabrik-parse/data/nccl-classes.txt

With --classes, prints instead the classes and the WARN formats each one claims. The last
argument is the classes file, the ones before it the message catalogs.

A format is classified when a `match:` prefix of the classes file claims it, as
crates/fabrik-parse/src/catalog does (longest prefix; `src:` limits a claim to one source, and
a `nccl:` claim also covers RCCL's word-for-word copy of the format).
"""

import sys
from collections import Counter

SOURCES = ("nccl", "ofi", "sharp", "tcpx", "fastrak", "rccl", "anp")


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "t": "\t"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def class_blocks(path):
    """(rule, severity, title, [(src, prefix)]) per class, in file order."""
    out = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("rule: "):
            out.append([line[len("rule: ") :], "", "", []])
        elif out and line.startswith("severity: "):
            out[-1][1] = line[len("severity: ") :]
        elif out and line.startswith("title: "):
            out[-1][2] = line[len("title: ") :]
        elif out and line.startswith("match: "):
            c, src = line[len("match: ") :], None
            for s in SOURCES:
                if c.startswith(s + ":"):
                    src, c = s, c[len(s) + 1 :]
            out[-1][3].append((src, c))
    return out


def warn_formats(tsv):
    for line in open(tsv, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        kind, src, area, _file, _first, _last, _n, fmt = line.rstrip("\n").split("\t", 7)
        if kind == "WARN":
            yield src, area, unescape(fmt)


def covers(claim_src, src):
    return claim_src is None or claim_src == src or (claim_src == "nccl" and src == "rccl")


def class_table(tsvs, classes):
    blocks = class_blocks(classes)
    count = Counter()
    for src, _area, fmt in (w for tsv in tsvs for w in warn_formats(tsv)):
        best = None
        for rule, _sev, _title, ms in blocks:
            for s, p in ms:
                if fmt.startswith(p) and covers(s, src):
                    if best is None or len(p) > best[0]:
                        best = (len(p), rule)
        if best:
            count[best[1]] += 1
    print("| rule | severity | class | WARN formats |")
    print("| --- | --- | --- | --- |")
    for rule, sev, title, _ms in sorted(blocks, key=lambda b: (-count[b[0]], b[0])):
        if count[rule]:
            print("| %s | %s | %s | %d |" % (rule, sev, title, count[rule]))


def main():
    if sys.argv[1] == "--classes":
        class_table(sys.argv[2:-1], sys.argv[-1])
        return
    tsvs, classes = sys.argv[1:-1], sys.argv[-1]
    cl = [m for block in class_blocks(classes) for m in block[3]]
    total, done = Counter(), Counter()
    for src, area, fmt in (w for tsv in tsvs for w in warn_formats(tsv)):
        hit = any(fmt.startswith(p) and covers(s, src) for s, p in cl)
        for key in ((src, "all"), (src, area), ("all", "all")):
            total[key] += 1
            done[key] += hit
    print("| source | area | WARN formats | classified | share |")
    print("| --- | --- | --- | --- | --- |")
    for key in sorted(total, key=lambda k: (k[0] == "all", k[0], k[1] != "all", k[1])):
        t, d = total[key], done[key]
        if key[0] not in ("nccl", "rccl") and key[1] not in ("all",) and key[1] == key[0]:
            continue
        print("| %s | %s | %d | %d | %.0f %% |" % (key[0], key[1], t, d, 100.0 * d / t))


if __name__ == "__main__":
    main()
