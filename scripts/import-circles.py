#!/usr/bin/env python3
"""Import circles between sibling modules, per crate: every `crate::`/`super::`/`self::` path in
a module's file (tests included) is resolved to the module it names; a reference from module M
to module T counts as an edge between the two children of their lowest common ancestor that
contain M and T. Strongly connected components of more than one module are circles.

Usage: scripts/import-circles.py [CRATES_DIR]   (default: crates/ of this repository)
Exit status 1 when a circle is found; each is printed with up to three references per edge."""
import os, re, sys

def strip_code(src):
    """Blank out comments and string/char literals, keep newlines and lengths."""
    out = []; i = 0; n = len(src)
    def isid(c): return c.isalnum() or c == '_'
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j; continue
        if src.startswith('/*', i):
            d = 1; j = i + 2
            while j < n and d:
                if src.startswith('/*', j): d += 1; j += 2
                elif src.startswith('*/', j): d -= 1; j += 2
                else: j += 1
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j; continue
        m = re.match(r'b?r(#*)"', src[i:i+300]) if (c in 'rb' and (i == 0 or not isid(src[i-1]))) else None
        if m:
            end = '"' + m.group(1)
            j = src.find(end, i + m.end()); j = n if j < 0 else j + len(end)
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j; continue
        if c == '"' or (c == 'b' and src.startswith('b"', i) and (i == 0 or not isid(src[i-1]))):
            j = i + (2 if c == 'b' else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == '\\' else 1
            j += 1
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j; continue
        if c == "'":
            if src.startswith("'\\", i):
                j = src.find("'", i + 2) + 1
                out.append(' ' * (j - i)); i = j; continue
            if i + 2 < n and src[i+2] == "'":
                out.append('   '); i += 3; continue
        out.append(c); i += 1
    return ''.join(out)

def modules(crate_src):
    """file -> module path (tuple)."""
    res = {}
    for root, _, files in os.walk(crate_src):
        for f in files:
            if not f.endswith('.rs'): continue
            p = os.path.relpath(os.path.join(root, f), crate_src)
            parts = p[:-3].split('/')
            if parts[0] == 'bin': continue
            if parts == ['lib'] or parts == ['main']: parts = []
            elif parts[-1] == 'mod': parts = parts[:-1]
            res[os.path.join(crate_src, p)] = tuple(parts)
    return res

def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r'\s+', '', tree)
    def split_top(s):
        out, depth, cur = [], 0, ''
        for ch in s:
            if ch == '{': depth += 1
            if ch == '}': depth -= 1
            if ch == ',' and depth == 0:
                out.append(cur); cur = ''
            else: cur += ch
        if cur: out.append(cur)
        return out
    def go(prefix, s):
        i = s.find('{')
        if i < 0: return [prefix + s]
        head = s[:i]; inner = s[i+1:s.rfind('}')]
        r = []
        for part in split_top(inner):
            r += go(prefix + head, part)
        return r
    return go('', tree)

def refs(path, modpath):
    src = strip_code(open(path).read())
    # inline modules: spans and names
    spans = []
    for m in re.finditer(r'\bmod\s+(\w+)\s*\{', src):
        depth = 0; j = m.end() - 1
        while j < len(src):
            if src[j] == '{': depth += 1
            elif src[j] == '}':
                depth -= 1
                if depth == 0: break
            j += 1
        spans.append((m.start(), j, m.group(1)))
    def scope_at(pos):
        inner = [s for s in spans if s[0] <= pos <= s[1]]
        inner.sort()
        return modpath + tuple(s[2] for s in inner)
    out = []
    for m in re.finditer(r'\buse\s+((?:crate|super|self)\b[^;]*);', src):
        for p in expand_use(m.group(1)):
            out.append((scope_at(m.start()), p))
    for m in re.finditer(r'(?<![\w:])((?:crate|super|self)(?:::\w+)+)\s*([(!]?)', src):
        p = m.group(1)
        # `crate::open(...)`: a function (or macro) of the module before the last segment,
        # even where a module of the same name exists.
        if m.group(2):
            p = p.rsplit('::', 1)[0]
        out.append((scope_at(m.start()), p))
    return out

def resolve(scope, p, known):
    parts = p.split('::')
    if parts[0] == 'crate': base = (); parts = parts[1:]
    else:
        base = scope
        while parts and parts[0] in ('super', 'self'):
            if parts[0] == 'super': base = base[:-1]
            parts = parts[1:]
    best = base
    for k in range(1, len(parts) + 1):
        cand = base + tuple(parts[:k])
        if cand in known: best = cand
        else: break
    return best

def main(crates_dir):
    found = False
    for crate in sorted(os.listdir(crates_dir)):
        src = os.path.join(crates_dir, crate, 'src')
        if not os.path.isdir(src): continue
        mods = modules(src)
        known = set(mods.values())
        # inline modules are part of their file's module for the purpose of sibling edges
        edges = {}
        for f, mp in mods.items():
            for scope, p in refs(f, mp):
                t = resolve(scope, p, known)
                m = mp
                k = 0
                while k < len(m) and k < len(t) and m[k] == t[k]: k += 1
                if k == len(m) or k == len(t): continue  # ancestor/descendant or same
                a, b = m[:k+1], t[:k+1]
                edges.setdefault(a, {}).setdefault(b, set()).add((f, p))
        # SCCs (Tarjan)
        index = {}; low = {}; stack = []; on = set(); sccs = []; c = [0]
        nodes = set(edges) | {b for a in edges for b in edges[a]}
        sys.setrecursionlimit(10000)
        def sc(v):
            index[v] = low[v] = c[0]; c[0] += 1; stack.append(v); on.add(v)
            for w in edges.get(v, {}):
                if w not in index: sc(w); low[v] = min(low[v], low[w])
                elif w in on: low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v: break
                if len(comp) > 1: sccs.append(comp)
        for v in sorted(nodes):
            if v not in index: sc(v)
        for comp in sccs:
            found = True
            print(f'{crate}: circle among', sorted('::'.join(x) for x in comp))
            for a in comp:
                for b in comp:
                    if b in edges.get(a, {}):
                        ex = sorted(edges[a][b])[:3]
                        print(f'   {"::".join(a)} -> {"::".join(b)}:', [(os.path.relpath(f, crates_dir), p) for f, p in ex])
        print(f'{crate}: {len(mods)} modules, {sum(len(v) for v in edges.values())} sibling edges')
    return found

if __name__ == '__main__':
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'crates')
    sys.exit(1 if main(sys.argv[1] if len(sys.argv) > 1 else default) else 0)
