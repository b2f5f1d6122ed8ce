#!/usr/bin/env python3
"""Builds the API reference (HTML) with Doxygen from the public headers: chainer.h, chainermn.h and
every project header they include, directly or not. Warnings (an undocumented public name, a bad
doc command) go to OUTPUT/warnings.txt and are counted; with --check any warning is a failure.
    docs/api/reference.py SOURCE_ROOT OUTPUT [--check]
"""
import os
import re
import shutil
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def public_headers(root):
    """The project headers reachable from the two umbrella headers, as paths relative to ROOT."""
    seen, stack = set(), ["chainer.h", "chainermn.h"]
    while stack:
        header = stack.pop()
        if header in seen or not os.path.isfile(os.path.join(root, header)):
            continue
        seen.add(header)
        with open(os.path.join(root, header), encoding="utf-8") as f:
            stack.extend(INCLUDE.findall(f.read()))
    return sorted(seen)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    if len(args) != 2:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    root, output = (os.path.abspath(a) for a in args)
    doxygen = shutil.which("doxygen")
    if not doxygen:
        sys.exit("reference.py: doxygen is not installed (apt-get install doxygen; scripts/setup.sh does)")
    here = os.path.dirname(os.path.abspath(__file__))
    os.makedirs(output, exist_ok=True)
    warnings = os.path.join(output, "warnings.txt")
    headers = public_headers(root)
    with open(os.path.join(here, "Doxyfile"), encoding="utf-8") as f:
        config = f.read()
    config += "\n".join([
        "",
        f'INPUT = {" ".join(headers)} "{os.path.join(here, "main.md")}"',
        f'OUTPUT_DIRECTORY = "{output}"',
        f'STRIP_FROM_PATH = "{root}"',
        f'STRIP_FROM_INC_PATH = "{root}"',
        f'WARN_LOGFILE = "{warnings}"',
        "",
    ])
    done = subprocess.run([doxygen, "-"], input=config, text=True, cwd=root)
    if done.returncode != 0:
        sys.exit(f"reference.py: doxygen exited with {done.returncode}")
    with open(warnings, encoding="utf-8") as f:
        lines = [line.rstrip("\n").replace(root + os.sep, "") for line in f if line.strip()]
    print(f"API reference: {os.path.join(output, 'html', 'index.html')} ({len(headers)} public headers)")
    print(f"{len(lines)} doxygen warning(s){':' if lines else ''}")
    for line in lines[:200]:
        print(line)
    if len(lines) > 200:
        print(f"... and {len(lines) - 200} more in {warnings}")
    if "--check" in sys.argv[1:] and lines:
        sys.exit(1)


if __name__ == "__main__":
    main()
