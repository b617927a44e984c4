"""Benchmark: the peak memory of ``reconciler validate`` on hostile manifests inside the byte caps.
Each case runs in a child process; its peak resident set size is printed.

Run as ``python -m benchmarks.hostile_inputs``. The cases: 700,000 empty mappings in 2 MB of YAML
(refused by the node budget), the largest tree of empty mappings under the budget, and 1,900,000
scalars in one list (refused too). Figures are recorded in docs/security.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

HEAD = "kind: Dataset\nspace: research\nname: d\n"
CASES = {
    "700k empty mappings (2 MB)": HEAD + "examples: [" + ",".join(["{}"] * 700_000) + "]\n",
    "490k empty mappings (under the budget)": HEAD + "examples: [" + ",".join(["{}"] * 490_000) + "]\n",
    "1.9M scalars in one list (3.8 MB)": HEAD + 'examples: [{"a": [' + ",".join(["1"] * 1_900_000) + "]}]\n",
}


_CHILD = """
import resource, sys
from reconciler.errors import ManifestError
from reconciler.manifests import load_manifests
try:
    load_manifests([sys.argv[1]])
    code = 0
except ManifestError:
    code = 1
print(code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def measure(text: str) -> tuple[int, float, int]:
    """(1 refused or 0 loaded, seconds, peak RSS in MB) of loading ``text`` as ``validate`` does,
    in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.yaml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _CHILD, path], capture_output=True, text=True, check=True).stdout
        seconds = time.perf_counter() - started
    code, peak = out.split()
    return int(code), seconds, int(peak)


def main() -> None:
    for name, text in CASES.items():
        code, seconds, peak = measure(text)
        print(f"{name}: {'refused' if code else 'loaded'}, {seconds:.1f} s, peak RSS {peak} MB")


if __name__ == "__main__":
    main()
