#!/usr/bin/env python3
"""The floors of fusegrad's headers, bottom to top, and the checks that each header includes only
headers of its own floor or the floors below it, and that its code names only the internal
namespaces of those floors (docs/design.md, "Floors").

Usage: floors.py INCLUDE_DIR   (the directory that holds fusegrad/)
Prints each include or name that goes up a floor and exits 1 when there is one."""
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
    "io": 7,
    "data": 8,
    "nn": 9,
    "train": 10,
    "distribute": 11,
}
TOP = 12  # the umbrella headers (fusegrad.hpp, nn.hpp, data.hpp, train.hpp) sit above every floor

# Each floor's internal namespaces (in fusegrad::), so that a call says which floor it goes to.
# There is no fusegrad::detail: internal names live in the namespace of the floor that declares them.
NAMESPACES = {
    "core": {"core"},
    "expr": {"expr"},
    "ops": {"ops"},
    "eval": {"dispatch", "host", "device_eval"},
    "autodiff": {"autodiff"},
    "eager": {"eager"},
}
FLOOR_OF_NAMESPACE = {ns: FLOORS[folder] for folder, names in NAMESPACES.items() for ns in names}
# core/fwd.hpp forward-declares what core's declarations name (the expression tag and the
# backward marker op), so it alone may open the namespaces of those higher floors.
FORWARD_DECLARATIONS = {("core/fwd.hpp", "expr"), ("core/fwd.hpp", "ops")}

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"", re.S)
QUALIFIED = re.compile(r"(?<![\w:])((?:::)?(?:fusegrad|fg)::)?(" + "|".join(["detail", *FLOOR_OF_NAMESPACE]) + r")::")
OPENED = re.compile(r"(?<![\w:])namespace\s+([\w:]+(?:\s*::\s*inline\s+\w+)?)\s*\{", re.M)

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def floor_of(path, root):
    rel = path.relative_to(root)
    if len(rel.parts) == 1:
        return TOP, "fusegrad.hpp"
    folder = rel.parts[0]
    if folder not in FLOORS:
        return None, folder
    return FLOORS[folder], folder


def namespace_problems(h, root, f):
    """Names of a higher floor's namespace in h's code, and fusegrad::detail anywhere."""
    code = COMMENT.sub(lambda m: '""' if m.group(0).startswith('"') else "\n" * m.group(0).count("\n"), h.read_text())
    rel = h.relative_to(root)
    out = []
    for m in QUALIFIED.finditer(code):
        ns = m.group(2)
        line = code.count("\n", 0, m.start()) + 1
        if ns == "detail":  # detail:: alone is a floor namespace's own nested detail (host::detail, ...)
            if m.group(1):
                out.append(f"detail namespace: {rel}:{line} names fusegrad::detail; internal names live in their "
                           f"floor's namespace")
        elif FLOOR_OF_NAMESPACE[ns] > f and (str(rel), ns) not in FORWARD_DECLARATIONS:
            out.append(f"upward name: {rel}:{line} (floor {f}) names {ns}:: (floor {FLOOR_OF_NAMESPACE[ns]})")
    for m in OPENED.finditer(code):
        parts = [p.strip() for p in m.group(1).replace("inline", "").split("::") if p.strip()]
        line = code.count("\n", 0, m.start()) + 1
        if parts[:2] == ["fusegrad", "detail"] or parts == ["detail"] and re.search(
                r"namespace\s+fusegrad\s*\{[^{}]*$", code[:m.start()]):
            out.append(f"detail namespace: {rel}:{line} opens fusegrad::detail")
        for p in parts:
            if p in FLOOR_OF_NAMESPACE and FLOOR_OF_NAMESPACE[p] > f and (str(rel), p) not in FORWARD_DECLARATIONS:
                out.append(f"upward namespace: {rel}:{line} (floor {f}) opens {p} (floor {FLOOR_OF_NAMESPACE[p]})")
    return out


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
        bad += namespace_problems(h, root, f)
    for u in sorted(unknown):
        print(f"floors: folder '{u}' has no floor; add it to FLOORS in tests/structure/floors.py")
    for b in bad:
        print(f"floors: {b}")
    print(f"floors: {len(headers)} headers checked, {len(bad)} upward includes or names")
    return 1 if bad or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
