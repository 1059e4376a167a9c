#!/usr/bin/env python3
"""Add NCCL releases read from their release binary to the message catalog.

For releases whose source tag is not in the git snapshot at hand, the release's own library is
the source of truth: the `libnccl.so.2` of the PyPI wheel (nvidia-nccl-cu12/cu13) keeps its
symbol table. Every WARN and INFO of NCCL is a call of ncclDebugLogInternal(level, flags, file,
func, line, fmt, ...) (src/include/debug.h: WARN passes __FILE__, INFO passes no file); this
script disassembles the library (objdump), finds each such call, reads the level from %edi, the
file from %rdx and the format from %r9 (following register copies back to the `lea` that loads
them), and reads the strings from .rodata. INFO calls carry no file: they take the file of the
nearest WARN call of the same function, else the nearest before them in the text.

Each format already in the catalog (same kind and text) gets the release as its last; a new one
becomes a row whose first and last release is this one. INFO formats are kept by extract.py's
rule (decisions about the network path). Never touches the network.

  pip download --no-deps nvidia-nccl-cu13==2.32.3 && unzip the wheel
  python3 scripts/catalog/release_binary.py crates/fabrik-parse/data/nccl-messages.tsv \\
      v2.31.2-1=/path/2.31.2/nvidia/nccl/lib/libnccl.so.2 v2.32.3-1=/path/2.32.3/nvidia/nccl/lib/libnccl.so.2
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from extract import INFO_KEEP, area, escape  # noqa: E402

CALL = re.compile(r"^\s*([0-9a-f]+):\s+call\s+([0-9a-f]+) <(_Z20ncclDebugLogInternal[^>]*)>")
FUNC = re.compile(r"^([0-9a-f]+) <(.*)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
LEA = re.compile(r"lea\s+-?0x[0-9a-f]+\(%rip\),%(\w+)\s+# ([0-9a-f]+)")
MOVI = re.compile(r"mov\s+\$0x([0-9a-f]+),%(\w+)")
MOVR = re.compile(r"mov\s+%(\w+),%(\w+)$")
REG64 = {
    "edi": "rdi", "rdi": "rdi", "edx": "rdx", "rdx": "rdx", "r9d": "r9", "r9": "r9",
    "eax": "rax", "rax": "rax", "ebx": "rbx", "rbx": "rbx", "ecx": "rcx", "rcx": "rcx",
    "esi": "rsi", "rsi": "rsi", "r8d": "r8", "r8": "r8", "r10d": "r10", "r10": "r10",
    "r11d": "r11", "r11": "r11", "r12d": "r12", "r12": "r12", "r13d": "r13", "r13": "r13",
    "r14d": "r14", "r14": "r14", "r15d": "r15", "r15": "r15", "ebp": "rbp", "rbp": "rbp",
}


def rodata(lib):
    out = subprocess.run(["readelf", "-SW", lib], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.replace("[", " [").split()
        if ".rodata" in f:
            i = f.index(".rodata")
            addr, off, size = int(f[i + 2], 16), int(f[i + 3], 16), int(f[i + 4], 16)
            with open(lib, "rb") as fh:
                fh.seek(off)
                return addr, fh.read(size)
    sys.exit("%s: no .rodata" % lib)


def string_at(ro, addr):
    base, data = ro
    i = addr - base
    if i < 0 or i >= len(data):
        return None
    j = data.find(b"\0", i)
    try:
        return data[i:j].decode("utf-8")
    except UnicodeDecodeError:
        return None


def resolve(window, reg, depth=0):
    """The last value written to `reg` in the instructions before the call: ('addr', n) for a
    rip-relative lea, ('imm', n) for a constant, None when unknown."""
    for k in range(len(window) - 1, -1, -1):
        text = window[k]
        m = LEA.search(text)
        if m and REG64.get(m.group(1)) == reg:
            return ("addr", int(m.group(2), 16))
        m = MOVI.search(text)
        if m and REG64.get(m.group(2)) == reg:
            return ("imm", int(m.group(1), 16))
        m = MOVR.search(text)
        if m and REG64.get(m.group(2)) == reg:
            src = REG64.get(m.group(1))
            if src is None or depth > 3:
                return None
            return resolve(window[:k], src, depth + 1)
        if re.search(r"xor\s+%(\w+),%\1", text) and REG64.get(re.search(r"%(\w+)", text).group(1)) == reg:
            return ("imm", 0)
    return None


def calls(lib):
    ro = rodata(lib)
    dis = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "-j", ".text", lib], capture_output=True, text=True, check=True
    ).stdout
    func, window, found = None, [], []
    for line in dis.splitlines():
        m = FUNC.match(line)
        if m:
            func, window = m.group(2), []
            continue
        m = CALL.match(line)
        if m:
            level = resolve(window, "rdi")
            fmt = resolve(window, "r9")
            path = resolve(window, "rdx")
            if level and level[0] == "imm" and level[1] in (2, 3) and fmt and fmt[0] == "addr":
                text = string_at(ro, fmt[1])
                fname = string_at(ro, path[1]) if path and path[0] == "addr" else None
                if text is not None:
                    found.append((func, "WARN" if level[1] == 2 else "INFO", fname, text))
            window = []
            continue
        m = INSN.match(line)
        if m:
            if m.group(2).startswith(("call", "ret", "jmp")):
                window = []
            else:
                window.append(m.group(2) + " " + m.group(3))
                window = window[-40:]
    return found


def rel_file(path):
    if not path:
        return None
    p = path.replace("\\", "/")
    i = p.rfind("/src/")
    return ("src/" + p[i + 5 :]) if i >= 0 else ("src/" + p.lstrip("./"))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tsv = sys.argv[1]
    releases = [a.split("=", 1) for a in sys.argv[2:]]
    head, rows = [], []
    for line in open(tsv, encoding="utf-8"):
        if line.startswith("#"):
            head.append(line)
        else:
            rows.append(line.rstrip("\n").split("\t"))
    index = {(r[0], r[1], r[7]): r for r in rows}
    # A source format whose macro tokens extract.py kept as %s (`Call to %s failed`, from
    # SYSCHECK's #call) is the same message as the binary's resolved text.
    wild = [
        (re.compile("^" + ".*".join(re.escape(p) for p in r[7].split("%s")) + "$", re.S), r)
        for r in rows
        if r[1] == "nccl" and "%s" in r[7]
    ]
    for tag, lib in releases:
        found = calls(lib)
        by_func = {}
        for func, kind, fname, _ in found:
            if kind == "WARN" and fname:
                by_func.setdefault(func, rel_file(fname))
        last_file = None
        seen = set()
        for func, kind, fname, text in found:
            f = rel_file(fname) if fname else by_func.get(func) or last_file
            if kind == "WARN" and f:
                last_file = f
            fmt = escape(text.rstrip("\n").rstrip())
            if not fmt.replace("%s", "").strip():
                continue
            if kind == "INFO" and not INFO_KEEP.search(text):
                continue
            key = (kind, "nccl", fmt)
            if key in seen:
                continue
            seen.add(key)
            r = index.get(key)
            if r is None:
                r = next((w for rx, w in wild if w[0] == kind and rx.match(fmt)), None)
            if r is None:
                f = f or "src/unknown"
                r = [kind, "nccl", area("nccl", f), f, tag, tag, "0", fmt]
                index[key] = r
                rows.append(r)
            r[5] = tag
            r[6] = str(int(r[6]) + 1)
        print("%s: %d calls, %d catalog formats" % (tag, len(found), len(seen)), file=sys.stderr)
    summary = [h for h in head if h.startswith("#   nccl:")]
    for i, h in enumerate(head):
        if h.startswith("#   nccl:") and summary:
            head[i] = h.rstrip("\n") + "; release binaries %s (PyPI nvidia-nccl-cu13 libnccl.so.2, scripts/catalog/release_binary.py)\n" % ", ".join(t for t, _ in releases)
    order = {"WARN": 0, "INFO": 1}
    rows.sort(key=lambda r: (r[1], order.get(r[0], 2), r[2], r[3], r[7]))
    with open(tsv, "w", encoding="utf-8") as out:
        out.writelines(head)
        for r in rows:
            out.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main()
