"""Prints the names of the built examples, in the order meson lists its 'examples' test suite."""
import json
import subprocess
import sys

build = sys.argv[1]
tests = json.loads(subprocess.check_output(["meson", "introspect", "--tests", build]))
for t in tests:
    if "examples" in t.get("suite", []) or any(s.endswith(":examples") for s in t.get("suite", [])):
        print(t["name"])
