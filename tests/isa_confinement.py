#!/usr/bin/env python3
"""Checks that a library built for baseline x86-64 (the default, -Dnative=false) can run AVX
and AVX-512 instructions only where the dispatch entered the kernel family of that instruction
set (core/cpu/family.h), that is on a CPU that has them.

Each function of the disassembly gets a level: 3 for AVX512_BF16 (its instructions: vdpbf16ps,
vcvtneps2bf16, vcvtne2ps2bf16), 2 for AVX-512 (a zmm register, an opmask k0-k7, or xmm16-31 /
ymm16-31), 1 for AVX (any VEX- or EVEX-encoded instruction: their mnemonics begin with 'v'), 0
otherwise. A function of the families (chainer::cpu::avx2, ::avx512 or ::avx512_bf16 in its name:
defined there, or a template instantiated with one of their types) may run its family's level.
Any other function at level 1 or 2 is a copy of a header's inline function or template that
only the vector families emitted (the generic family, compiled for baseline x86-64, comes first
in the link and wins wherever it has a copy too; core/meson.build). Such a copy is fine where
every caller runs at its level or above, and fails here otherwise:
- the avx2 family runs no AVX-512 register, and the avx512 family no AVX512_BF16 instruction;
- every direct call (call or jmp to another function, through the PLT or not) goes to a
  function whose level is at most the caller's (its family's, or its own);
- a function outside the families at level 1 or 2 has a direct caller (one reached only
  through a pointer could be called from anywhere).
    tests/isa_confinement.py LIBRARY [OBJDUMP]
"""
import re
import subprocess
import sys

FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")
INSTRUCTION = re.compile(r"^\s*[0-9a-f]+:\s+(?:\{[^}]*\}\s+)?([a-z][a-z0-9.]*)\s*(.*)$")
BRANCH = re.compile(r"^(?:call|jmp)\s+[0-9a-f]+ <(.*)>$")
AVX512_REGISTER = re.compile(r"%zmm\d|%k[0-7]\b|%[xy]mm(1[6-9]|2\d|3[01])\b")
BF16_MNEMONIC = re.compile(r"^(vdpbf16ps|vcvtneps2bf16|vcvtne2ps2bf16)")
LEVEL_NAMES = ["baseline x86-64", "AVX", "AVX-512", "AVX512_BF16"]


def family_level(name):
    """The level a function of a family may run (3: avx512_bf16, 2: avx512, 1: avx2), or None
    outside them."""
    if "chainer::cpu::avx512_bf16::" in name:
        return 3
    if "chainer::cpu::avx512::" in name:
        return 2
    if "chainer::cpu::avx2::" in name:
        return 1
    return None


def callee(target):
    """The function a branch target names, or None for a place inside a function."""
    if re.search(r"\+0x[0-9a-f]+$", target):
        return None
    return target[:-4] if target.endswith("@plt") else target


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    library = sys.argv[1]
    objdump = sys.argv[2] if len(sys.argv) == 3 else "objdump"
    listing = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", library], check=True, capture_output=True,
                             text=True).stdout
    level, first_instruction, calls = {}, {}, {}
    current = None
    for line in listing.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = m.group(1)
            if current.endswith("@plt"):
                current = None  # a PLT stub: its caller is checked against the function itself
                continue
            level.setdefault(current, 0)
            calls.setdefault(current, set())
            continue
        m = INSTRUCTION.match(line) if current else None
        if not m:
            continue
        mnemonic, operands = m.groups()
        found = (3 if BF16_MNEMONIC.match(mnemonic) else 2 if AVX512_REGISTER.search(operands)
                 else 1 if mnemonic.startswith("v") else 0)
        if found > level[current]:
            level[current], first_instruction[current] = found, f"{mnemonic} {operands}".strip()
        b = BRANCH.match(f"{mnemonic} {operands}")
        if b and (target := callee(b.group(1))) and target != current:
            calls[current].add(target)

    callers = {}
    for f, targets in calls.items():
        for g in targets:
            callers.setdefault(g, set()).add(f)
    allowed = {f: family_level(f) if family_level(f) is not None else level[f] for f in level}
    problems = []
    for f in sorted(level):
        fam = family_level(f)
        if fam is not None and level[f] > fam:
            problems.append(f"{f}: {LEVEL_NAMES[level[f]]} in a family of {LEVEL_NAMES[fam]} "
                            f"({first_instruction[f]})")
        if fam is None and level[f] > 0 and not callers.get(f):
            problems.append(f"{f}: {LEVEL_NAMES[level[f]]} ({first_instruction[f]}) outside the families, "
                            "and no direct caller shows who runs it")
        for g in sorted(calls[f]):
            if g in level and level[g] > allowed[f]:
                problems.append(f"{f} ({LEVEL_NAMES[allowed[f]]}) calls {g}, which runs {LEVEL_NAMES[level[g]]} "
                                f"({first_instruction[g]})")
    counts = [sum(1 for f in level if family_level(f) == n) for n in (1, 2, 3)]
    shared = sum(1 for f in level if family_level(f) is None and level[f] > 0)
    print(f"{library}: {len(level)} functions: {counts[0]} of the avx2 family, {counts[1]} of the avx512 family, "
          f"{counts[2]} of the avx512_bf16 family, {shared} outside them with vector instructions, called from the "
          "families only")
    if min(counts) == 0:
        sys.exit("isa_confinement: no function of the avx2, avx512 or avx512_bf16 family found: is this the library?")
    if not any(level[f] == 3 for f in level if family_level(f) == 3):
        sys.exit("isa_confinement: the avx512_bf16 family runs no AVX512_BF16 instruction")
    for p in problems:
        print(p)
    if problems:
        sys.exit(f"isa_confinement: {len(problems)} place(s) where a CPU without the instructions could run them")
    print("every AVX and AVX-512 instruction runs only under the dispatch of its family")


if __name__ == "__main__":
    main()
