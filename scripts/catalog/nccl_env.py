#!/usr/bin/env python3
"""Extract the environment variables NCCL, its network plugins and nccl-tests read, from
their sources.

Reads local git directories (bare or not) or plain checkouts; never the network. For every
release tag of each source (the tags scripts/catalog/extract.py reads) it finds each variable
name the code hands to the environment:

- direct reads: getenv("X"), secure_getenv("X"), ncclGetEnv("X");
- readers derived from the code itself: a function or macro whose parameter reaches a read,
  possibly behind a string prefix, is a reader too. NCCL_PARAM(name, "IB_HCA", ...) is read as
  "NCCL_IB_HCA" because its body passes `"NCCL_" env` to ncclLoadParam, whose parameter reaches
  ncclGetEnv; aws-ofi-nccl's OFI_NCCL_PARAM* prefix "OFI_NCCL_" and the GPUDirect-TCPX
  plugin's TCPX_PARAM / TCPX_GET_ENV "NCCL_" / "NCCL_GPUDIRECTTCPX_" the same way;
- a macro that pastes an upper-case prefix before a parameter (`"OFI_NCCL_" env`) names a
  variable: aws-ofi-nccl >= 1.16 hands that name to a parameter object that reads it later;
- registrations whose read the code does at run time from a stored key, declared below by the
  macro's parameter with the file that does the read (DEFINE_NCCL_PARAM, the TCPXO plugin's
  NCCL_CONST_PARAM).

Each variable is written with the releases it is read in, as ranges over the source's releases
in order, so that a reader can say "read from 2.19 on" or "no longer read since 2.12".

Usage (CI does not run this; the output is committed):

  python3 scripts/catalog/nccl_env.py \\
      --source nccl=/path/to/NVIDIA/nccl.git \\
      --source ofi=/path/to/aws/aws-ofi-nccl.git \\
      --source sharp=/path/to/Mellanox/nccl-rdma-sharp-plugins.git \\
      --source tcpx=/path/to/google/nccl-plugin-gpudirecttcpx.git \\
      --source fastrak=/path/to/google/nccl-plugin-gpudirect-tcpxo.git \\
      --source nccl-tests=/path/to/NVIDIA/nccl-tests.git \\
      -o crates/fabrik-nccl/data/nccl-env.tsv

Output (TSV, `#` comments): name, source, first, last, count, releases, file.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract  # noqa: E402  (the git and C-text helpers of the message extractor)

# Per source: the directories read (besides tests), directories left out, and registrations
# whose name reaches the environment only at run time: macro -> (its parameter that carries
# the name, prefix, stringified), each with the file where the read happens.
SOURCES = {
    "nccl": {
        "dirs": ("src/", "plugins/", "ext-net/", "ext-tuner/", "ext-profiler/"),
        "exclude": (),
        "registered": {
            # src/include/param/param.h: `extern constexpr char name##Key[] = #key;`, read by
            # src/param/param.cc with std::getenv(key) (NCCL >= 2.29).
            "DEFINE_NCCL_PARAM": ("key", "", True),
        },
    },
    "ofi": {
        "dirs": ("src/", "include/"),
        "exclude": (),
        "registered": {},
    },
    "sharp": {
        "dirs": ("src/", "include/"),
        "exclude": (),
        "registered": {},
    },
    "tcpx": {
        # The plugin builds against one adapter: src/adapter/nccl (NCCL's logger and its
        # "NCCL_" names); src/adapter/native is the standalone build's.
        "dirs": ("src/",),
        "exclude": ("src/adapter/native/",),
        "registered": {},
    },
    "nccl-tests": {
        # Its own NCCL_TESTS_* settings (NCCL_TESTS_MIN_BW, NCCL_TESTS_SPLIT_MASK...), which env
        # files of benchmark jobs carry beside NCCL's.
        "dirs": ("src/",),
        "exclude": (),
        "registered": {},
        "tags": re.compile(r"^v(\d+)\.(\d+)\.(\d+)$"),
        "min": (),
        "url": "https://github.com/NVIDIA/nccl-tests",
    },
    "fastrak": {
        "dirs": extract.SOURCES["fastrak"]["dirs"],
        "exclude": (),
        "registered": {
            # tcpdirect_plugin/fastrak_offload/params.cc, InitParam: env_var = "NCCL_" + name,
            # then getenv(env_var.c_str()).
            "NCCL_CONST_PARAM": ("env_var_name", "NCCL_", False),
        },
    },
}

# NCCL >= 2.23 reads through ncclGetEnv, which asks the environment plugin (its default
# reads getenv): no parameter of it reaches getenv in the code, so it is a read of its own.
BASE_READERS = {"getenv": [(0, "", False)], "secure_getenv": [(0, "", False)], "ncclGetEnv": [(0, "", False)]}
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "catch", "defined", "decltype"}
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\(([^)]*)\))?[ \t]*(.*)$", re.M)
FUNC = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^;{}()]*)\)\s*(?:const\s*)?(?:noexcept\s*)?(?:->\s*[\w:<>*& ]+)?\{")
DIGIT_SEPARATOR = re.compile(r"(?<=[0-9])'(?=[0-9])")
TOKEN = re.compile(r'\s+|"((?:[^"\\]|\\.)*)"|##|#\s*(\w+)|(\w+)|(.)', re.S)


def join_continuations(text):
    return text.replace("\\\r\n", " ").replace("\\\n", " ")


def param_names(params):
    """The parameter names of `int a, const char* b = NULL, ...`."""
    out = []
    for p in params.split(","):
        p = p.split("=")[0].strip()
        m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", p)
        out.append(m.group(1) if m else "")
    return out


def body_from(text, brace):
    """The text from an opening brace to its match (strings skipped)."""
    depth, i, n = 0, brace, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[brace : i + 1]
        i += 1
    return text[brace:]


def parse_blob(text):
    """Definitions of one file: string macros, function-like macros and functions."""
    # C++14 digit separators (`15 * 60'000` in the TCPXO plugin) are no character literals.
    text = DIGIT_SEPARATOR.sub("", text)
    text = join_continuations(extract.strip_comments(text))
    strings, macros, funcs = {}, [], []
    for m in DEFINE.finditer(text):
        name, has_params, params, body = m.group(1), m.group(2), m.group(3), m.group(4).strip()
        if has_params is not None and m.group(0).find(name + "(") >= 0:
            macros.append((name, [p.strip() for p in params.split(",")], body))
        elif body:
            strings.setdefault(name, body)
    # Function bodies are looked for only where a parameter can reach a read.
    for m in FUNC.finditer(text):
        name = m.group(1)
        if name in KEYWORDS:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start : m.start()].lstrip().startswith("#"):
            continue
        body = body_from(text, m.end() - 1)
        funcs.append((name, param_names(m.group(2)), body))
    return {"text": text, "strings": strings, "macros": macros, "funcs": funcs}


def string_value(tokens, strings, depth=0):
    """The text of a string expression (literals and macros that expand to literals)."""
    out = []
    for kind, val in tokens:
        if kind == "lit":
            out.append(val)
        elif kind == "id" and val in strings and depth < 8:
            value = string_value(tokenize(strings[val]), strings, depth + 1)
            if value is None:
                return None
            out.append(value)
        else:
            return None
    return "".join(out)


def tokenize(expr):
    out = []
    for m in TOKEN.finditer(expr):
        if m.group(0).isspace():
            continue
        if m.group(1) is not None:
            out.append(("lit", m.group(1)))
        elif m.group(2) is not None:
            out.append(("str", m.group(2)))
        elif m.group(3) is not None:
            out.append(("id", m.group(3)))
        else:
            out.append(("op", m.group(0)))
    return out


def calls(text, names):
    """(callee, [argument texts]) for every call of one of `names`."""
    if not names:
        return
    pat = re.compile(r"(?<![\w.])(?:std::)?(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\s*\(")
    for m in pat.finditer(text):
        args = extract.split_args(text, m.end())
        if args is not None:
            yield m.group(1), args


PREFIX = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*_$")


def derive_readers(defs, strings, registered):
    """Functions and macros whose parameter reaches a read, to a fixed point."""
    readers = {k: list(v) for k, v in BASE_READERS.items()}
    for name, params, body, is_macro in defs:
        if not is_macro:
            continue
        if name in registered:
            param, prefix, stringified = registered[name]
            if param in params:
                spec = (params.index(param), prefix, stringified)
                if spec not in readers.setdefault(name, []):
                    readers[name].append(spec)
        toks = tokenize(body)
        for (k1, v1), (k2, v2) in zip(toks, toks[1:]):
            if k1 == "lit" and PREFIX.match(v1) and k2 == "id" and v2 in params:
                spec = (params.index(v2), v1, False)
                if spec not in readers.setdefault(name, []):
                    readers[name].append(spec)
    changed = True
    while changed:
        changed = False
        for name, params, body, is_macro in defs:
            for callee, args in calls(body, readers):
                for idx, prefix, stringified in list(readers[callee]):
                    if idx >= len(args):
                        continue
                    toks = tokenize(args[idx])
                    if not toks:
                        continue
                    last_kind, last = toks[-1]
                    head = string_value(toks[:-1], strings)
                    if head is None:
                        continue
                    if last_kind == "id" and last in params and not stringified:
                        spec = (params.index(last), prefix + head, False)
                    elif is_macro and last_kind == "str" and last in params and not stringified and not head:
                        spec = (params.index(last), prefix, True)
                    else:
                        continue
                    if spec not in readers.setdefault(name, []):
                        readers[name].append(spec)
                        changed = True
    return readers


def variables(text, readers, strings):
    for callee, args in calls(text, readers):
        for idx, prefix, stringified in readers[callee]:
            if idx >= len(args):
                continue
            if stringified:
                word = args[idx].strip()
                value = word if re.fullmatch(r"\w+", word) else None
            else:
                value = string_value(tokenize(args[idx]), strings)
            if value is None:
                continue
            name = prefix + value
            if ENV_NAME.match(name) and len(value) > 0:
                yield name


def ranges(labels, order):
    """`a..c,e` for the releases `labels` given the source's release order."""
    pos = {l: i for i, l in enumerate(order)}
    idx = sorted(pos[l] for l in labels)
    out, start = [], idx[0]
    for a, b in zip(idx, idx[1:] + [None]):
        if b is None or b != a + 1:
            out.append(order[start] if start == a else "%s..%s" % (order[start], order[a]))
            if b is not None:
                start = b
    return ",".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", action="append", required=True, help="NAME=DIR (%s)" % ", ".join(SOURCES))
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()

    rows, summary = [], []
    for spec_arg in a.source:
        name, _, path = spec_arg.partition("=")
        if name not in SOURCES:
            sys.exit("unknown source %r (one of %s)" % (name, ", ".join(SOURCES)))
        spec = SOURCES[name]
        if "tags" in spec:
            # A source the message extractor does not read: its release tags, for extract.releases.
            extract.SOURCES.setdefault(name, {k: spec[k] for k in ("tags", "min", "url")})
        gd = extract.git_dir(path)
        if not gd:
            sys.exit("%s: not a git directory" % path)
        revs = extract.releases(name, gd)
        parsed = {}
        seen = {}  # variable -> {"releases": [...], "file": path}
        for label, rev in revs:
            listing = [
                (p, sha)
                for p, sha in extract.files_at(gd, rev, spec["dirs"])
                if not p.startswith(spec["exclude"]) and "/test" not in p and "/tests/" not in p
            ]
            missing = sorted({sha for _, sha in listing if sha not in parsed})
            for sha, text in extract.read_blobs(gd, missing).items():
                parsed[sha] = parse_blob(text)
            blobs = [(p, parsed[sha]) for p, sha in listing]
            strings = {}
            defs = []
            for _, b in blobs:
                for k, v in b["strings"].items():
                    strings.setdefault(k, v)
                defs.extend((n, ps, body, True) for n, ps, body in b["macros"])
                defs.extend((n, ps, body, False) for n, ps, body in b["funcs"])
            readers = derive_readers(defs, strings, spec["registered"])
            for p, b in blobs:
                for var in variables(b["text"], readers, strings):
                    e = seen.setdefault(var, {"releases": [], "file": p})
                    if not e["releases"] or e["releases"][-1] != label:
                        e["releases"].append(label)
                    e["file"] = p
        order = [l for l, _ in revs]
        for var, e in seen.items():
            rows.append((var, name, e["releases"][0], e["releases"][-1], len(e["releases"]), ranges(e["releases"], order), e["file"]))
        summary.append("%s: %s, %d releases %s .. %s, %d variables" % (name, extract.SOURCES[name]["url"], len(revs), revs[0][0], revs[-1][0], len(seen)))

    rows.sort(key=lambda r: (r[0], r[1]))
    with open(a.output, "w", encoding="utf-8") as out:
        out.write("# Environment variables NCCL, its network plugins and nccl-tests read, extracted from their\n")
        out.write("# sources by scripts/catalog/nccl_env.py. Do not edit; regenerate it. Sources read:\n")
        for s in summary:
            out.write("#   %s\n" % s)
        out.write("# name\tsource\tfirst\tlast\tcount\treleases\tfile\n")
        for r in rows:
            out.write("\t".join(str(x) for x in r) + "\n")
    print("%d rows -> %s" % (len(rows), a.output), file=sys.stderr)
    for s in summary:
        print(s, file=sys.stderr)


if __name__ == "__main__":
    main()
