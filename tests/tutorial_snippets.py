"""Checks that every snippet of the guides in docs/ (tutorial.md, model_parallel.md, ...) is a copy
of the marked region of its source: a snippet follows a line `<!-- snippet: FILE REGION -->`, and
the region of FILE lies between `// [REGION]` and `// [end]`. FILE is a path from the repository
root (apps/mnist_ensemble.cpp), or a bare name in docs/tutorial/. Indentation is ignored. Every
guide with snippets is checked, and there must be some."""
import pathlib
import re
import sys
import textwrap

docs = pathlib.Path(sys.argv[1])
root = docs.parent
pattern = re.compile(r"<!-- snippet: (\S+) (\S+) -->\n```cpp\n(.*?)```", re.S)
found = failures = 0
for guide in sorted(docs.glob("*.md")):
    for file, region, snippet in pattern.findall(guide.read_text()):
        found += 1
        path = root / file if "/" in file else docs / "tutorial" / file
        source = path.read_text() if path.is_file() else ""
        match = re.search(r"// \[" + re.escape(region) + r"\]\n(.*?)\s*// \[end\]", source, re.S)
        if not match:
            print(f"docs/{guide.name}: {file} has no region [{region}]")
            failures += 1
        elif textwrap.dedent(match.group(1)).strip() != textwrap.dedent(snippet).strip():
            print(f"docs/{guide.name}: the snippet of {file} [{region}] differs from the source")
            failures += 1
print(f"{found} snippets checked, {failures} differ")
sys.exit(1 if failures or found == 0 else 0)
