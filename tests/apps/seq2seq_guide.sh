#!/usr/bin/env bash
# Runs every command of docs/seq2seq.md from "Running the examples" on (its ```sh blocks) as printed,
# in a scratch directory with build/ linked to the build tree, each with a small subset's flags
# appended (the apps read their flags in order, so these override the guide's): each must exit 0
# and log an epoch. The Bible's commands are skipped without the SWORD Bibles, all of them
# without CMUdict.
#   tests/apps/seq2seq_guide.sh SOURCE_ROOT BUILD_ROOT MPIEXEC
set -u
root=${1:?usage: seq2seq_guide.sh SOURCE_ROOT BUILD_ROOT MPIEXEC}
build=${2:?}
mpiexec_path=${3:?}
source "$(dirname "$0")/../lib.sh"
root=$(cd "$root" && pwd)
build=$(cd "$build" && pwd)
if [ ! -f /usr/share/festival/dicts/cmu/cmudict-0.4.out ]; then
  echo "skipped: no CMUdict (apt-get install festlex-cmu)"
  exit 77
fi
scratch seq2seq_guide
ln -s "$build" build
# mpiexec as the guide writes it: the build's MPICH launcher, first on PATH (a script, not a
# link: hydra finds its proxy beside the path it was started by).
mkdir -p bin && printf '#!/bin/sh\nexec "%s" "$@"\n' "$mpiexec_path" >bin/mpiexec && chmod +x bin/mpiexec &&
  export PATH=$PWD/bin:$PATH
export MPIEXEC_TIMEOUT=120
have_bible=0
if [ -x build/apps/sword_parallel_text ] && build/apps/sword_parallel_text --out bible.tsv >/dev/null 2>&1; then
  have_bible=1
fi
small=(--limit 200 --test-size 20 -u 16 -l 1 -e 1 --max-vocab 500 --max-length 10 --translations 1 --no-plot)
mapfile -t commands < <(python3 - "$root/docs/seq2seq.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text.split("## Running the examples", 1)[1]  # and the Results after it
for block in re.findall(r"```sh\n(.*?)```", section, re.S):
    for line in block.splitlines():
        if line.strip() and not line.startswith("#"):
            print(line)
PY
)
[ "${#commands[@]}" -ge 8 ] || fail "docs/seq2seq.md: only ${#commands[@]} commands found in 'Running the examples'"
i=0
for command in "${commands[@]}"; do
  i=$((i + 1))
  if [[ $command == *"--data bible"* ]] && [ "$have_bible" = 0 ]; then
    echo "note: not run (no SWORD Bibles): $command"
    continue
  fi
  out=run$i
  if timeout -k 5 120 bash -c "$command \"\$@\" -o $out" _ "${small[@]}" >"$tmp/out" 2>&1 && [ -f "$out/log" ]; then
    echo "ok: $command"
  else
    fail "$command: exited with $? or wrote no $out/log: $(tail -c 400 "$tmp/out")"
  fi
done
finish
