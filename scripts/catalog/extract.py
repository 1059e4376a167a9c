#!/usr/bin/env python3
"""Extract NCCL's message catalog from the sources of NCCL and its network plugins.

Reads local git directories (bare or not) or plain checkouts; never the network. For every
release tag of each source it reads the C/C++ sources, finds each WARN(...) call (and each
INFO(...) that records a transport, GPUDirect RDMA, plugin or fallback decision), takes the
printf format string (string literals concatenated, PRIu64-style macros resolved, any other
token of the format kept as a %s wildcard), and writes one row per distinct format string with
the releases it first and last appears in.

Usage (CI does not run this; the output is committed):

  python3 scripts/catalog/extract.py \
      --source nccl=/path/to/NVIDIA/nccl.git \
      --source ofi=/path/to/aws/aws-ofi-nccl.git \
      --source sharp=/path/to/Mellanox/nccl-rdma-sharp-plugins.git \
      --source tcpx=/path/to/google/nccl-plugin-gpudirecttcpx.git \
      -o crates/fabrik-parse/data/nccl-messages.tsv

RCCL and its AINIC network plugin make the second catalog:

  python3 scripts/catalog/extract.py \
      --source rccl=/path/to/ROCm/rccl.git \
      --source anp=/path/to/ROCm/amd-anp.git \
      -o crates/fabrik-parse/data/rccl-messages.tsv

A source that is a git directory is read at each of its release tags and at HEAD when HEAD is
not a release (labelled `HEAD@<commit>`); a plain directory is read as one version named
`checkout`.

Output (TSV, `#` comments): kind, source, area, file, first, last, releases, format. In the
format a backslash is written `\\\\`, a newline `\\n`, a tab `\\t`.
"""

import argparse
import os
import re
import subprocess
import sys

# Per source: the logging macros (name -> index of the format argument), the prefix the macro
# adds to every message, the directories read, and which tags are releases.
SOURCES = {
    "nccl": {
        "macros": {"WARN": 0, "INFO": 1},
        "prefix": "",
        "dirs": ("src/",),
        "tags": re.compile(r"^v2\.(\d+)\.(\d+)-(\d+)$"),
        "min": (4,),
        "url": "https://github.com/NVIDIA/nccl",
    },
    "ofi": {
        # include/nccl_ofi_log.h: (*ofi_log_function)(NCCL_LOG_WARN, ..., "NET/OFI " fmt, ...)
        "macros": {"NCCL_OFI_WARN": 0, "NCCL_OFI_INFO": 1},
        "prefix": "NET/OFI ",
        "dirs": ("src/", "include/"),
        "tags": re.compile(r"^v(\d+)\.(\d+)\.(\d+)(-aws)?$"),
        "min": (),
        "url": "https://github.com/aws/aws-ofi-nccl",
    },
    "sharp": {
        "macros": {"WARN": 0, "INFO": 1},
        "prefix": "",
        "dirs": ("src/", "include/"),
        "tags": re.compile(r"^v(\d+)\.(\d+)\.?(\d*)$"),
        "min": (),
        "url": "https://github.com/Mellanox/nccl-rdma-sharp-plugins",
    },
    "fastrak": {
        # tcpdirect_plugin/fastrak_offload/init.cc: an absl LogSink forwards LOG(WARNING) and
        # LOG(ERROR) to NCCL's logger as WARN, LOG(INFO) as INFO, each prefixed
        # "NET/FasTrak <timestamp>: ".
        "stream": True,
        "macros": {},
        "prefix": "NET/FasTrak %s: ",
        "dirs": ("tcpdirect_plugin/", "dxs/", "buffer_mgmt_daemon/client/", "nccl_cuda/", "cuda_helpers/", "net_util/"),
        "tags": re.compile(r"^v(\d+)\.(\d+)\.(\d+)(?:-(\d+))?$"),
        "min": (),
        "url": "https://github.com/google/nccl-plugin-gpudirect-tcpxo",
    },
    "rccl": {
        # ROCm/rccl: NCCL's code hipified, with RCCL's own messages (iommu, HSA, XGMI, MSCCL,
        # rocm-smi); the same WARN/INFO macros. Release tags are rocm-X.Y.Z.
        "macros": {"WARN": 0, "INFO": 1},
        "prefix": "",
        "dirs": ("src/",),
        "tags": re.compile(r"^rocm-(\d+)\.(\d+)\.(\d+)$"),
        "min": (4,),
        "url": "https://github.com/ROCm/rccl",
    },
    "anp": {
        # ROCm/amd-anp: AMD's AINIC network plugin (librccl-anp.so), a fork of NCCL's net_ib.
        "macros": {"WARN": 0, "INFO": 1},
        "prefix": "",
        "dirs": ("src/", "include/"),
        "tags": re.compile(r"^v(\d+)\.(\d+)\.(\d+)(?:-(\d+))?$"),
        "min": (),
        "url": "https://github.com/ROCm/amd-anp",
    },
    "tcpx": {
        "macros": {"WARN": 0, "INFO": 1},
        "prefix": "",
        "dirs": ("src/",),
        "tags": re.compile(r"^v(\d+)\.(\d+)\.?(\d*)"),
        "min": (),
        "url": "https://github.com/google/nccl-plugin-gpudirecttcpx",
    },
}

EXTS = (".c", ".cc", ".cpp", ".cu", ".h", ".hpp", ".cuh")

# An INFO is kept when it records a decision about the network path.
INFO_KEEP = re.compile(
    r"Using network|GPU Direct RDMA|GDR|GDRDMA|GPUDirect|DMA-?BUF|dmabuf|peermem|nv_peer_mem"
    r"|[Pp]lugin|[Ff]all(ing)? ?back|No device found|No plugin|Selected [Pp]rovider"
    r"|transport|Transport|NET/[A-Za-z]+ ?: ?Using|via NET|disabled|Disabled|not supported"
    r"|Could not|Failed|failed|unable|Unable"
)

# <inttypes.h> macros as glibc defines them on LP64.
PRI = re.compile(r"^PRI([diouxX])(8|16|32|64|PTR|MAX|LEAST\d+|FAST\d+)$")


def version_key(source, tag):
    m = SOURCES[source]["tags"].match(tag)
    nums = tuple(int(g) for g in m.groups() if g and g.isdigit())
    return nums + ((1,) if tag.endswith("-aws") else (0,))


def git(gitdir, *args, data=None):
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], input=data, capture_output=True, check=True
    ).stdout


def git_dir(path):
    for cand in (path, os.path.join(path, ".git")):
        if os.path.isfile(os.path.join(cand, "HEAD")) and os.path.isdir(os.path.join(cand, "objects")):
            return cand
    return None


def releases(source, gitdir):
    spec = SOURCES[source]
    tags = [t for t in git(gitdir, "tag").decode().split() if spec["tags"].match(t)]
    tags = [t for t in tags if version_key(source, t)[: len(spec["min"])] >= spec["min"]]
    tags.sort(key=lambda t: version_key(source, t))
    revs = [(t, t) for t in tags]
    # The default branch, when it is ahead of every release (nccl-rdma-sharp-plugins ships from
    # it through HPC-X long after its last tag).
    head = git(gitdir, "rev-parse", "HEAD").decode().strip()
    tagged = {git(gitdir, "rev-parse", t + "^{commit}").decode().strip() for t in tags}
    if head not in tagged:
        revs.append(("HEAD@" + head[:12], "HEAD"))
    return revs


def files_at(gitdir, rev, dirs):
    out = git(gitdir, "ls-tree", "-r", rev, "--", *dirs).decode()
    for row in out.splitlines():
        meta, path = row.split("\t", 1)
        _, typ, sha = meta.split()
        if typ == "blob" and path.endswith(EXTS) and "/test" not in path and not path.startswith("test"):
            yield path, sha


def read_blobs(gitdir, shas):
    data = "".join(s + "\n" for s in shas).encode()
    out = git(gitdir, "cat-file", "--batch", data=data)
    blobs, pos = {}, 0
    while pos < len(out):
        nl = out.index(b"\n", pos)
        sha, _, size = out[pos:nl].decode().split()
        size = int(size)
        blobs[sha] = out[nl + 1 : nl + 1 + size].decode("utf-8", "replace")
        pos = nl + 1 + size + 1
    return blobs


def strip_comments(text):
    """Blanks comments (keeping line breaks) so that commented-out calls are not read."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_args(text, start):
    """The macro arguments as raw text, from just after the opening parenthesis."""
    args, depth, i, n, cur = [], 0, start, len(text), start
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[cur:i])
                return args
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[cur:i])
            cur = i + 1
        i += 1
    return None


ESC = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "", "0": ""}
TOKEN = re.compile(r'\s+|"((?:[^"\\]|\\.)*)"|#\s*\w+|\w+|.', re.S)


def format_of(arg):
    """The format string of a macro argument, or None when it has no string literal."""
    parts, literal = [], False
    for m in TOKEN.finditer(arg):
        tok = m.group(0)
        if tok.isspace():
            continue
        if m.group(1) is not None:
            literal = True
            s, body = [], m.group(1)
            k = 0
            while k < len(body):
                if body[k] == "\\" and k + 1 < len(body):
                    s.append(ESC.get(body[k + 1], body[k + 1]))
                    k += 2
                else:
                    s.append(body[k])
                    k += 1
            parts.append("".join(s))
            continue
        pri = PRI.match(tok)
        if pri:
            conv = pri.group(1)
            parts.append(("l" + conv) if pri.group(2) in ("64", "PTR", "MAX") else conv)
        else:
            # A stringified macro argument (#call) or a constant: any text at run time.
            parts.append("%s")
    if not literal:
        return None
    fmt = "".join(parts)
    return fmt.rstrip("\n").rstrip()


def area(source, path):
    # RCCL keeps NCCL's source layout, so it has NCCL's code areas.
    if source not in ("nccl", "rccl"):
        return source
    p = path.lower()
    if "nvls" in p:
        return "nvls"
    if p.startswith("src/ras/"):
        return "ras"
    if (
        p.startswith("src/transport/net")
        or "ibvwrap" in p
        or "ibvsymbols" in p
        or "socket" in p
        or p.startswith("src/plugin/net")
        or p.startswith("src/net")
        or p.endswith("/net.cc")
        or "gdrwrap" in p
        or "mlx5dv" in p
    ):
        return "net"
    if p.startswith("src/transport/"):
        return "transport"
    if "proxy" in p:
        return "proxy"
    if "bootstrap" in p:
        return "bootstrap"
    if p.startswith("src/init") or p.endswith("/init.cc"):
        return "init"
    if p.startswith("src/graph/"):
        return "graph"
    if p.startswith("src/plugin/"):
        return "plugin"
    return "other"


STREAM = re.compile(r"(?<![\w.>])LOG\s*\(\s*(WARNING|ERROR|INFO)\s*\)")


def stream_statement(text, start):
    """The text of a `LOG(X) << a << b;` statement after the macro, up to its `;`."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ";" and depth <= 0:
            return text[start:i]
        i += 1
    return None


def split_shift(stmt):
    """Operands of a `<<` chain at depth 0."""
    parts, depth, i, n, cur = [], 0, 0, len(stmt), 0
    while i < n:
        c = stmt[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and stmt[j] != c:
                j += 2 if stmt[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and stmt.startswith("<<", i):
            parts.append(stmt[cur:i])
            cur = i + 2
            i += 2
            continue
        i += 1
    parts.append(stmt[cur:])
    return [p.strip() for p in parts]


def stream_calls(source, text):
    spec = SOURCES[source]
    text = strip_comments(text)
    for m in STREAM.finditer(text):
        stmt = stream_statement(text, m.end())
        if stmt is None:
            continue
        ops = split_shift(stmt)[1:]
        if not ops:
            continue
        parts = []
        for op in ops:
            sf = re.match(r"^(?:absl::)?StrFormat\s*\(", op)
            if sf:
                args = split_args(op, sf.end())
                fmt = format_of(args[0]) if args else None
                parts.append(fmt if fmt is not None else "%s")
            elif op.startswith('"'):
                fmt = format_of(op)
                parts.append(fmt.replace("%", "%%") if fmt is not None else "%s")
            else:
                parts.append("%s")
        fmt = "".join(parts).rstrip("\n").rstrip()
        if not fmt.replace("%s", "").strip():
            continue
        kind = "INFO" if m.group(1) == "INFO" else "WARN"
        fmt = spec["prefix"] + fmt
        if kind == "INFO" and not INFO_KEEP.search(fmt):
            continue
        yield kind, fmt


def calls(source, text):
    spec = SOURCES[source]
    if spec.get("stream"):
        yield from stream_calls(source, text)
        return
    names = "|".join(sorted(spec["macros"], key=len, reverse=True))
    pat = re.compile(r"(?<![\w.>])(" + names + r")\s*\(")
    text = strip_comments(text)
    for m in pat.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start : m.start()].lstrip().startswith("#"):
            continue  # the macro's own #define
        args = split_args(text, m.end())
        idx = spec["macros"][m.group(1)]
        if not args or len(args) <= idx:
            continue
        fmt = format_of(args[idx])
        if fmt is None or not fmt.strip() or fmt.strip() == "%s":
            continue
        kind = "WARN" if "WARN" in m.group(1) else "INFO"
        fmt = spec["prefix"] + fmt
        if kind == "INFO" and not INFO_KEEP.search(fmt):
            continue
        yield kind, fmt


def escape(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", action="append", required=True, help="NAME=DIR (%s)" % ", ".join(SOURCES))
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()

    entries = {}  # (kind, source, format) -> dict
    order = []
    summary = []
    for spec_arg in a.source:
        name, _, path = spec_arg.partition("=")
        if name not in SOURCES:
            sys.exit("unknown source %r (one of %s)" % (name, ", ".join(SOURCES)))
        spec = SOURCES[name]
        gd = git_dir(path)
        if gd:
            revs = releases(name, gd)
        else:
            revs = [("checkout", None)]
        parsed = {}  # blob sha -> [(kind, fmt)]
        for label, rev in revs:
            if rev is None:
                files = []
                for root, _, fnames in os.walk(path):
                    for f in fnames:
                        full = os.path.join(root, f)
                        rel = os.path.relpath(full, path)
                        if rel.startswith(spec["dirs"]) and rel.endswith(EXTS) and "/test" not in rel:
                            with open(full, encoding="utf-8", errors="replace") as fh:
                                files.append((rel, fh.read()))
                found = [(rel, list(calls(name, t))) for rel, t in files]
            else:
                listing = list(files_at(gd, rev, spec["dirs"]))
                missing = sorted({sha for _, sha in listing if sha not in parsed})
                for sha, text in read_blobs(gd, missing).items():
                    parsed[sha] = list(calls(name, text))
                found = [(rel, parsed[sha]) for rel, sha in listing]
            for rel, msgs in found:
                for kind, fmt in msgs:
                    key = (kind, name, fmt)
                    e = entries.get(key)
                    if e is None:
                        e = {"first": label, "releases": []}
                        entries[key] = e
                        order.append(key)
                    e["file"] = rel
                    e["last"] = label
                    if not e["releases"] or e["releases"][-1] != label:
                        e["releases"].append(label)
        summary.append("%s: %s, %d releases %s .. %s" % (name, spec["url"], len(revs), revs[0][0], revs[-1][0]))

    with open(a.output, "w", encoding="utf-8") as out:
        what = "RCCL and AMD plugin" if all(k[1] in ("rccl", "anp") for k in order) else "NCCL and plugin"
        out.write("# %s log messages, extracted from their sources by scripts/catalog/extract.py.\n" % what)
        out.write("# Do not edit; regenerate (see docs/logs.md). Sources read:\n")
        for s in summary:
            out.write("#   %s\n" % s)
        out.write("# kind\tsource\tarea\tfile\tfirst\tlast\treleases\tformat\n")
        for key in sorted(order, key=lambda k: (k[1], k[0] != "WARN", area(k[1], entries[k]["file"]), entries[k]["file"], k[2])):
            kind, name, fmt = key
            e = entries[key]
            out.write(
                "\t".join(
                    [kind, name, area(name, e["file"]), e["file"], e["first"], e["last"], str(len(e["releases"])), escape(fmt)]
                )
                + "\n"
            )
    warns = sum(1 for k in order if k[0] == "WARN")
    print("%d entries (%d WARN, %d INFO) -> %s" % (len(order), warns, len(order) - warns, a.output), file=sys.stderr)


if __name__ == "__main__":
    main()
