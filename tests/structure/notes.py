#!/usr/bin/env python3
"""Checks the notes of fusegrad's headers: every `Note [name]` cited is defined exactly once, as
`Note [name]:` at its definition (docs/design.md, "Notes").

Usage: notes.py INCLUDE_DIR...
(the headers' roots: include/ and cuda/include/, which cite each other's notes). Prints each note cited but never defined, or defined more than once, and exits 1 when there is one."""
import collections
import pathlib
import re
import sys

NOTE = re.compile(r"Note \[([^\]]+)\](:?)")


def main():
    defined = collections.defaultdict(list)
    cited = collections.defaultdict(list)
    for arg in sys.argv[1:]:
        root = pathlib.Path(arg).resolve() / "fusegrad"
        for h in sorted(root.rglob("*.hpp")):
            for i, line in enumerate(h.read_text().split("\n"), 1):
                for name, colon in NOTE.findall(line):
                    where = f"{h.relative_to(root)}:{i}"
                    (defined if colon else cited)[name].append(where)
    bad = 0
    for name, places in sorted(cited.items()):
        if name not in defined:
            print(f"notes: Note [{name}] is cited ({', '.join(places)}) but defined nowhere (write `Note [{name}]:`)")
            bad += 1
    for name, places in sorted(defined.items()):
        if len(places) > 1:
            print(f"notes: Note [{name}] is defined {len(places)} times: {', '.join(places)}")
            bad += 1
    print(f"notes: {len(defined)} notes defined, {sum(len(p) for p in cited.values())} citations, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
