"""Checks that every snippet of docs/tutorial.md is a copy of the marked region of its source:
a snippet follows a line `<!-- snippet: FILE REGION -->`, and the region of docs/tutorial/FILE
lies between `// [REGION]` and `// [end]`. Indentation is ignored."""
import pathlib
import re
import sys
import textwrap

docs = pathlib.Path(sys.argv[1])
text = (docs / "tutorial.md").read_text()
pattern = re.compile(r"<!-- snippet: (\S+) (\S+) -->\n```cpp\n(.*?)```", re.S)
found = failures = 0
for file, region, snippet in pattern.findall(text):
    found += 1
    source = (docs / "tutorial" / file).read_text()
    match = re.search(r"// \[" + re.escape(region) + r"\]\n(.*?)\s*// \[end\]", source, re.S)
    if not match:
        print(f"{file}: no region [{region}]")
        failures += 1
    elif textwrap.dedent(match.group(1)).strip() != textwrap.dedent(snippet).strip():
        print(f"docs/tutorial.md: the snippet of {file} [{region}] differs from the source")
        failures += 1
print(f"{found} snippets checked, {failures} differ")
sys.exit(1 if failures or found == 0 else 0)
