"""Fails when a layer of core/ (or, with --shim, of shim/) includes a layer it may not, or when
files of one of them include each other in a circle.

core/ keeps one folder per layer (core/README.md). common/ includes nothing of the others; mem/ and
plan/ include common/ only; engine/ may include all. Every `#include "..."` of a core file is
resolved as the compiler resolves it (next to the file, then by name in any layer folder: header
names are unique across core/) and mapped to its folder.

For circles a file and its header count as one unit (x.c with x.h): a circle between units means
each of them uses the other, which is what the layering of the engine's files must avoid. A
quoted include that is no file of core/ is reported too: core/ has no other quoted includes.

shim/ (shim/README.md): interpose/ (the doors, the hook list, start-up) includes only itself and
core/; bridge/ (the shim's state, the engine bridge) adds interpose/; hooks/ adds bridge/ and has
no headers, so no hook file can use another. shim/ includes name a file beside them, a path from
shim/ ("bridge/engine_glue.h"), or a core header by name."""
import argparse
import os
import re
import sys
from pathlib import Path

ALLOWED = {
    "common": {"common"},
    "mem": {"common", "mem"},
    "plan": {"common", "plan"},
    "engine": {"common", "mem", "plan", "engine"},
}
SHIM_ALLOWED = {
    "interpose": {"interpose", "core"},
    "bridge": {"bridge", "interpose", "core"},
    "hooks": {"bridge", "interpose", "core"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SUFFIXES = (".c", ".h", ".def")


def unit(rel: Path) -> str:
    """x.c and x.h of one folder are one unit; a .def table is its own."""
    return str(rel.with_suffix("")) if rel.suffix in (".c", ".h") else str(rel)


def circles(edges):
    """Strongly connected components of more than one unit (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def check_tree(root: Path, allowed, resolve, name):
    """(files, includes, violations) of one tree whose folders are the layers of `allowed`.
    `resolve(rel, include)` gives the included file relative to `root`, "core" for a core/ header
    seen from shim/, or None when the include names no known file."""
    files = sorted(p.relative_to(root) for p in root.rglob("*") if p.suffix in SUFFIXES)
    bad, edges, includes = [], {}, 0
    for rel in files:
        if len(rel.parts) != 2 or rel.parts[0] not in allowed:
            bad.append(f"{rel}: not in a layer folder ({', '.join(sorted(allowed))})")
            continue
        layer = rel.parts[0]
        edges.setdefault(unit(rel), set())
        for number, line in enumerate((root / rel).read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            includes += 1
            target = resolve(rel, m.group(1))
            if target is None:
                bad.append(f"{rel}:{number}: includes \"{m.group(1)}\", no file of {name}")
                continue
            where = target if target == "core" else target.parts[0]
            if where not in allowed[layer]:
                bad.append(f"{rel}:{number}: {layer}/ includes {target} ({layer}/ may include "
                           f"{', '.join(sorted(allowed[layer]))})")
            if target != "core" and unit(target) != unit(rel):
                edges[unit(rel)].add(unit(target))
    for component in circles(edges):
        bad.append("include circle between " + ", ".join(component))
    return files, includes, bad


def check_core(core: Path):
    """core/: headers are included by name, so names must be unique across its folders."""
    by_name, bad = {}, []
    for p in sorted(core.rglob("*")):
        rel = p.relative_to(core)
        if p.suffix in (".h", ".def") and len(rel.parts) == 2 and rel.parts[0] in ALLOWED:
            if rel.name in by_name:
                bad.append(f"{rel}: same name as {by_name[rel.name]} (headers are included by name)")
            by_name.setdefault(rel.name, rel)

    def resolve(rel, name):
        beside = rel.parent / name
        target = beside if (core / beside).is_file() else by_name.get(os.path.basename(name))
        return None if target is None else Path(os.path.normpath(target))

    files, includes, more = check_tree(core, ALLOWED, resolve, "core/")
    return files, includes, bad + more


def check_shim(shim: Path, core: Path):
    """shim/: a file beside, a path from shim/, or a core/ header by name; no header in hooks/."""
    core_names = {p.name for p in core.rglob("*") if p.suffix in (".h", ".def")}

    def resolve(rel, name):
        beside, rooted = rel.parent / name, Path(name)
        if (shim / beside).is_file():
            return Path(os.path.normpath(beside))
        if len(rooted.parts) == 2 and (shim / rooted).is_file():
            return rooted
        return "core" if os.path.basename(name) in core_names else None

    files, includes, bad = check_tree(shim, SHIM_ALLOWED, resolve, "shim/ or core/")
    bad += [f"{rel}: a header in hooks/ (no hook file may use another)" for rel in files
            if rel.parts[0] == "hooks" and rel.suffix == ".h"]
    return files, includes, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--core", required=True)
    ap.add_argument("--shim", help="check shim/ (its layers over core/) instead of core/")
    args = ap.parse_args()
    core = Path(args.core).resolve()
    if args.shim:
        name = "shim/"
        files, includes, bad = check_shim(Path(args.shim).resolve(), core)
    else:
        name = "core/"
        files, includes, bad = check_core(core)
    print(f"{len(files)} files of {name}, {includes} includes, {len(bad)} violations")
    for line in bad:
        print("  " + line)
    return 1 if bad or not files else 0


if __name__ == "__main__":
    sys.exit(main())
