#!/usr/bin/env python3
"""scripts/check-layers.py - the include rules of docs/architecture.md, checked (`make check-layers`).

Reads every tracked .c/.h under src/ and the unit and fuzz tests, and fails (exit 1, one line per
violation, file:line first) when:

  layer    a file under src/<layer>/ includes "<other>/x.h" of a layer that is not below its own:
           base <- core <- store, driver <- engine <- sched, controller, api, agent <- sim, fleet
           <- cmd <- src/main.c. Layers on one rung are peers and include none of each other
           (store and driver; sched, controller, api and agent; sim and fleet);
  private  a "*_int.h" is included from outside its own folder (a unit test may include one of a
           layer it names on its first line: tests are white-box);
  tested   a unit or fuzz test includes a header of a layer that its first line
           /* layers: ... */ does not name (the Makefile links only the layers named there);
  cycle    headers include each other in a circle, or .c files of one folder call each other's
           functions declared in that folder's *_int.h in a circle (a.c calls a function defined
           in b.c and b.c one defined in a.c: the files were cut by moving lines, not along a
           dependency).

Known violations that are being removed are listed in scripts/layers-known.txt, one per line as
this script prints it (without the file:line prefix for cycles), each with a comment naming who
removes it; a listed violation that no longer occurs is reported too, so the list only shrinks.
Usage: scripts/check-layers.py [--known FILE]. Needs python3 and git; nothing else.
"""
import os
import re
import subprocess
import sys

RANK = {
    "base": 0, "core": 1, "store": 2, "driver": 2, "engine": 3,
    "sched": 4, "boot": 4, "controller": 4, "api": 4, "agent": 4, "sim": 5, "fleet": 5, "cmd": 6, "": 7,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LAYERS_LINE = re.compile(r"^/\* layers: (.*) \*/")


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "--", "src", "tests/unit", "tests/fuzz"],
                         check=True, capture_output=True, text=True).stdout
    return [f for f in out.splitlines() if f.endswith((".c", ".h"))]


def includes(root, path):
    """[(line number, included path)] of the file's quoted includes."""
    res = []
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            m = INCLUDE.match(line)
            if m:
                res.append((n, m.group(1)))
    return res


def layer_of_src(path):
    """The layer of a file under src/ ("" for src/main.c), or None outside src/."""
    parts = path.split("/")
    if parts[0] != "src":
        return None
    return parts[1] if len(parts) > 2 else ""


def find_cycles(graph):
    """Every elementary circle of a small directed graph, each once, as a tuple starting at its
    smallest node."""
    cycles = set()

    def walk(start, node, path, seen):
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                cycles.add(tuple(path))
            elif nxt not in seen and nxt > start:
                seen.add(nxt)
                walk(start, nxt, path + [nxt], seen)
                seen.discard(nxt)

    for start in sorted(graph):
        walk(start, start, [start], {start})
    return sorted(cycles)


def strip_c(text):
    """The text with comments and string and character literals blanked."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'', '""', text)


def private_call_cycles(root, files):
    """Circles of .c files of one folder that call each other's *_int.h functions."""
    found = []
    for h in [f for f in files if f.startswith("src/") and f.endswith("_int.h")]:
        folder = os.path.dirname(h)
        with open(os.path.join(root, h), encoding="utf-8") as fh:
            decl = strip_c(fh.read())
        names = set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*\([^;{]*\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?;",
                               decl))
        names -= {"sizeof", "if", "while", "for", "return", "switch"}
        srcs = [f for f in files if os.path.dirname(f) == folder and f.endswith(".c")
                and any(inc == h[len("src/"):] for _, inc in includes(root, f))]
        text = {}
        for c in srcs:
            with open(os.path.join(root, c), encoding="utf-8") as fh:
                text[c] = strip_c(fh.read())
        defined = {}
        for c in srcs:
            for name in names:
                # a definition: the name at the start of a declarator followed by ( ... ) {
                if re.search(r"^[a-z_][^;\n]*\b%s\s*\([^;]*?\)\s*\{" % re.escape(name), text[c],
                             flags=re.M | re.S):
                    defined.setdefault(name, c)
        graph = {c: set() for c in srcs}
        for c in srcs:
            for name, owner in defined.items():
                if owner != c and re.search(r"\b%s\s*\(" % re.escape(name), text[c]):
                    graph[c].add(owner)
        for cyc in find_cycles(graph):
            found.append("cycle: calls through %s: %s" % (h[len("src/"):], " -> ".join(cyc + (cyc[0],))))
    return found


def main():
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                          capture_output=True, text=True).stdout.strip()
    known_path = os.path.join(root, "scripts", "layers-known.txt")
    if len(sys.argv) == 3 and sys.argv[1] == "--known":
        known_path = sys.argv[2]
    elif len(sys.argv) != 1:
        print("usage: scripts/check-layers.py [--known FILE]", file=sys.stderr)
        return 2
    files = tracked(root)
    present = set(files)
    found = []  # (key for the known list, message)
    hgraph = {}

    for f in files:
        own = layer_of_src(f)
        tested = None
        if own is None:
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                m = LAYERS_LINE.match(fh.readline())
            if f.endswith(".c") and os.path.basename(f).startswith(("test_", "fuzz_")):
                if not m:
                    found.append(("%s: no /* layers: ... */ first line" % f,
                                  "%s:1: tested: no /* layers: ... */ first line" % f))
                    continue
                tested = set(m.group(1).split())
                bad = tested - set(RANK)
                for b in sorted(bad):
                    found.append(("%s: unknown layer %s" % (f, b),
                                  "%s:1: tested: unknown layer %s" % (f, b)))
        for n, inc in includes(root, f):
            if "/" not in inc:
                continue  # a header next to the file (tests/unit/check.h)
            lay = inc.split("/")[0]
            if lay not in RANK or "src/" + inc not in present:
                continue
            if f.endswith(".h") and own is not None:
                hgraph.setdefault(f, set()).add("src/" + inc)
            private = os.path.basename(inc).endswith("_int.h")
            if own is not None:
                if lay != own and RANK[lay] >= RANK[own]:
                    what = "peer" if RANK[lay] == RANK[own] else "higher"
                    key = "%s: layer %s" % (f, inc)
                    found.append((key, "%s:%d: layer: %s (%s) includes %s, a %s layer" %
                                  (f, n, own or "main", f, inc, what)))
                if private and os.path.dirname("src/" + inc) != os.path.dirname(f):
                    key = "%s: private %s" % (f, inc)
                    found.append((key, "%s:%d: private: %s is private to src/%s/" %
                                  (f, n, inc, lay)))
            elif tested is not None:
                if lay not in tested:
                    key = "%s: tested %s" % (f, inc)
                    found.append((key, "%s:%d: tested: includes %s but its layers line does not "
                                  "name %s" % (f, n, inc, lay)))
            elif private:
                key = "%s: private %s" % (f, inc)
                found.append((key, "%s:%d: private: %s is private to src/%s/" % (f, n, inc, lay)))

    for cyc in find_cycles(hgraph):
        line = "cycle: headers: " + " -> ".join(cyc + (cyc[0],))
        found.append((line, line))
    for line in private_call_cycles(root, files):
        found.append((line, line))

    known = {}
    if os.path.exists(known_path):
        with open(known_path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                entry = line.split("#", 1)[0].strip()
                if entry:
                    known[entry] = n
    rc = 0
    waived = 0
    for key, msg in found:
        if key in known:
            known[key] = None
            waived += 1
            continue
        print(msg)
        rc = 1
    rel = os.path.relpath(known_path, root)
    for entry, n in known.items():
        if n is not None:
            print("%s:%d: known violation no longer occurs (delete the line): %s" % (rel, n, entry))
            rc = 1
    print("check-layers: %d files, %d new violation(s), %d known (%s)" %
          (len(files), sum(1 for k, _ in found if k not in known), waived, rel))
    return rc


if __name__ == "__main__":
    sys.exit(main())
