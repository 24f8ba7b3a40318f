#!/usr/bin/env python3
"""The floors of fusegrad's headers, bottom to top, and the check that each header includes only
headers of its own floor or the floors below it (docs/design.md, "Floors").

Usage: floors.py INCLUDE_DIR   (the directory that holds fusegrad/)
Prints each include that goes up a floor and exits 1 when there is one."""
import pathlib
import re
import sys

# The one table of the floor order: a folder of include/fusegrad and its floor.
FLOORS = {
    "core": 1,
    "expr": 2,
    "ops": 3,
    "eval": 4,
    "autodiff": 5,
    "eager": 6,
    "nn": 7, "data": 7, "io": 7, "train": 7, "distribute": 7,
}
TOP = 8  # fusegrad.hpp, the umbrella header, sits above every floor

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def floor_of(path, root):
    rel = path.relative_to(root)
    if len(rel.parts) == 1:
        return TOP, "fusegrad.hpp"
    folder = rel.parts[0]
    if folder not in FLOORS:
        return None, folder
    return FLOORS[folder], folder


def main():
    root = pathlib.Path(sys.argv[1]).resolve() / "fusegrad"
    bad = []
    unknown = set()
    headers = sorted(root.rglob("*.hpp"))
    for h in headers:
        f, name = floor_of(h, root)
        if f is None:
            unknown.add(name)
            continue
        for inc in INCLUDE.findall(h.read_text()):
            target = (h.parent / inc).resolve()
            if root not in target.parents:
                continue  # not a fusegrad header
            if not target.exists():
                bad.append(f"missing include: {h.relative_to(root)} includes {inc}, which does not exist")
                continue
            g, gname = floor_of(target, root)
            if g is None:
                unknown.add(gname)
            elif g > f:
                bad.append(f"upward include: {h.relative_to(root)} (floor {f}, {name}) includes {target.relative_to(root)} "
                           f"(floor {g}, {gname})")
    for u in sorted(unknown):
        print(f"floors: folder '{u}' has no floor; add it to FLOORS in tests/structure/floors.py")
    for b in bad:
        print(f"floors: {b}")
    print(f"floors: {len(headers)} headers checked, {len(bad)} upward includes")
    return 1 if bad or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
