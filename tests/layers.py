#!/usr/bin/env python3
"""The layers' direction, checked: every #include "folder/..." of a layer's sources names a layer
it may depend on. core <- autograd <- nn <- training <- distributed, and datasets on core only
(training and distributed may use it). chainer.h is the API of the first five, chainermn.h adds
distributed. A wrong-way include fails with the file, the line and the rule it breaks.

  layers.py SOURCE_ROOT        # check the tree
  layers.py --self-test        # the check fails on a planted wrong-way include
"""
import os
import re
import sys
import tempfile

ALLOWED = {
    "core": {"core"},
    "datasets": {"core", "datasets"},
    "autograd": {"core", "autograd"},
    "nn": {"core", "autograd", "nn"},
    "training": {"core", "autograd", "nn", "datasets", "training"},
    "distributed": {"core", "autograd", "nn", "datasets", "training", "distributed"},
}
TOP_LEVEL = {
    "chainer.h": {"core", "autograd", "nn", "datasets", "training"},
    "chainermn.h": set(ALLOWED),
}
SOURCES = (".h", ".hpp", ".cpp", ".cu", ".cuh", ".inc", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def check_file(path, rel, allowed, in_layer=True):
    problems = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if "/" not in target:
                # A top-level header from inside a layer would bring every layer in.
                if in_layer and target in TOP_LEVEL:
                    problems.append(f"{rel}:{number}: includes {target}, the whole API; include what it uses")
                continue
            layer = target.split("/", 1)[0]
            if layer in ALLOWED and layer not in allowed:
                problems.append(f"{rel}:{number}: includes {target}: {rel.split('/')[0] if '/' in rel else rel}"
                                f" may include only {', '.join(sorted(allowed))}")
    return problems


def check(root):
    problems, files = [], 0
    for layer, allowed in ALLOWED.items():
        for folder, _, names in os.walk(os.path.join(root, layer)):
            for name in sorted(names):
                if name.endswith(SOURCES):
                    path = os.path.join(folder, name)
                    files += 1
                    problems += check_file(path, os.path.relpath(path, root), allowed)
    for name, allowed in TOP_LEVEL.items():
        path = os.path.join(root, name)
        if os.path.exists(path):
            files += 1
            problems += check_file(path, name, allowed, in_layer=False)
    return problems, files


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        write("core/tensor/tensor.h", '#include "core/tensor/dtype.h"\n')
        write("nn/links/linear.cpp", '#include "autograd/variable.h"\n#include "core/ops/ops.h"\n')
        problems, _ = check(root)
        assert not problems, problems
        write("core/ops/ops.cpp", '#include "core/ops/ops.h"\n#include "nn/functions.h"\n')  # upwards
        write("datasets/mnist.cpp", '#include "autograd/variable.h"\n')  # sideways
        write("training/trainer.cpp", '#include "chainer.h"\n')  # the whole API
        problems, _ = check(root)
        want = ["core/ops/ops.cpp:2: includes nn/functions.h", "datasets/mnist.cpp:1: includes autograd/variable.h",
                "training/trainer.cpp:1: includes chainer.h"]
        for w in want:
            assert any(p.startswith(w) for p in problems), (w, problems)
        assert len(problems) == 3, problems
    print("self-test: planted wrong-way includes are found")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    self_test()
    problems, files = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) against the layers' direction")
        return 1
    print(f"{files} files: every include points down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
