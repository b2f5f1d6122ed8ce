"""Checks that every C++ snippet of the README and of the guides in docs/ is a copy of a marked
region of a program that is compiled: each ```cpp block must follow a line
`<!-- snippet: FILE REGION -->`, and the region of FILE lies between `// [REGION]` and
`// [end]`. FILE is a path from the repository root (docs/tutorial/tutorial.cpp); the guides'
programs under docs/ include only installed headers (tests/install_consumer.sh checks that),
and the bundled apps are quoted as excerpts. Indentation is ignored. A ```cpp block without a
marker is an error (it would be code that nothing compiles), and there must be some snippets.
  doc_snippets.py REPOSITORY_ROOT"""
import pathlib
import re
import sys
import textwrap

root = pathlib.Path(sys.argv[1])
marked = re.compile(r"<!-- snippet: (\S+) (\S+) -->\n```cpp\n(.*?)```", re.S)
found = failures = 0
for guide in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
    text = guide.read_text()
    name = guide.relative_to(root)
    blocks = text.count("```cpp\n")
    snippets = marked.findall(text)
    if len(snippets) != blocks:
        print(f"{name}: {blocks - len(snippets)} ```cpp block(s) without a '<!-- snippet: FILE REGION -->' line before them")
        failures += blocks - len(snippets)
    for file, region, snippet in snippets:
        found += 1
        path = root / file
        source = path.read_text() if path.is_file() else ""
        match = re.search(r"// \[" + re.escape(region) + r"\]\n(.*?)\s*// \[end\]", source, re.S)
        if not match:
            print(f"{name}: {file} has no region [{region}]")
            failures += 1
        elif textwrap.dedent(match.group(1)).strip() != textwrap.dedent(snippet).strip():
            print(f"{name}: the snippet of {file} [{region}] differs from the source")
            failures += 1
print(f"{found} snippets checked, {failures} problems")
sys.exit(1 if failures or found == 0 else 0)
