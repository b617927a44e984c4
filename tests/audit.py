"""``make audit``: the installed dependency set (the pins of pyproject.toml, the dev extra and what
they pull in) checked against the Python Packaging Advisory Database through PyPI's vulnerability
service, with pip-audit.

Exit 1 when a package has a known vulnerability (each listed with its advisory ids and the versions
that fix it); 0 otherwise. When the service cannot be reached, or knows none of the versions (a
private mirror), nothing could be checked: that is said plainly, with the count, and the exit is 0
so an offline CI is not red for it. Run it where PyPI is reachable to get a real answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def main() -> int:
    tool = Path(sys.executable).with_name("pip-audit")
    try:
        run = subprocess.run([str(tool), "--skip-editable", "--progress-spinner", "off", "--format", "json"],
                             capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"audit: skipped: pip-audit did not run ({type(exc).__name__}: {exc})")
        return 0
    try:
        report = json.loads(run.stdout)
    except ValueError:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"audit: skipped: the vulnerability service could not be reached ({last[:200]})")
        return 0
    deps = report.get("dependencies", [])
    skipped = [d for d in deps if d.get("skip_reason")]
    audited = [d for d in deps if not d.get("skip_reason")]
    vulnerable = [d for d in audited if d.get("vulns")]
    for d in vulnerable:
        for v in d["vulns"]:
            fixed = ", ".join(v.get("fix_versions") or []) or "no fixed version yet"
            print(f"audit: {d['name']} {d['version']}: {v['id']} ({', '.join(v.get('aliases') or [])}); fixed in {fixed}")
    if not audited:
        print(f"audit: nothing checked: the vulnerability service knows none of the {len(skipped)} installed "
              "versions (a mirror without advisories?); run make audit where PyPI is reachable")
        return 0
    print(f"audit: {len(audited)} packages checked, {len(vulnerable)} with known vulnerabilities"
          + (f", {len(skipped)} not checked ({', '.join(sorted(d['name'] for d in skipped))})" if skipped else ""))
    return 1 if vulnerable else 0


if __name__ == "__main__":
    sys.exit(main())
