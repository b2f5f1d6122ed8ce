#!/usr/bin/env bash
# The installed library as an outside program sees it, installed and built exactly as
# docs/installation.md says: its staged-install block (the one after "<!-- install_consumer runs
# this block -->") runs as printed in a directory holding prog.cpp (a communicator in a 1-process
# job) and the build directory as `build`; only `meson install` gets --no-rebuild (meson test
# built everything first) and g++ is the build's compiler command (ccache). Then the program
# must have loaded the installed libchainer; a framework-only program built with chainer-cpp's
# flags must run too; and the guides' programs (docs/*/*.cpp), each copied alone into an empty
# directory, must preprocess with nothing but pkg-config's flags: the code the guides quote
# needs no header that is not installed (the main build compiles them in full). Last, the
# installed headers compile without a warning under -Wall -Wextra -Wshadow -Wpedantic, and they
# are exactly the headers chainer.h and chainermn.h reach.
#   tests/install_consumer.sh MESON BUILD_DIR PKG_CONFIG SOURCE_ROOT CXX...
set -u
usage="usage: install_consumer.sh MESON BUILD_DIR PKG_CONFIG SOURCE_ROOT CXX..."
meson_prog=${1:?$usage}
build=$(cd "${2:?$usage}" && pwd)
pkg_config=${3:?$usage}
source_root=$(cd "${4:?$usage}" && pwd)
shift 4
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
cxx=("$@")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/chainer_install_consumer.XXXXXX") || { echo "FAIL: mktemp" >&2; exit 1; }
trap 'rm -rf "$tmp"' EXIT

# fail STEP LOG: the step that failed, with the end of its output, and exit 1.
fail() {
  echo "FAIL: $1" >&2
  if [ -n "${2:-}" ] && [ -s "$2" ]; then
    echo "--- last lines of its output:" >&2
    tail -n 40 "$2" >&2
  fi
  exit 1
}

# 1. The documented block, as printed.
block=$(python3 - "$source_root/docs/installation.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"<!-- install_consumer runs this block -->\n```sh\n(.*?)```", text, re.S)
if not m:
    sys.exit("no ```sh block after '<!-- install_consumer runs this block -->'")
print(m.group(1))
PY
) || fail "docs/installation.md: no staged-install block to run"
mkdir -p "$tmp/work" && ln -s "$build" "$tmp/work/build" || fail "cannot prepare $tmp/work"
cat >"$tmp/work/prog.cpp" <<'CPP'
#include <chainermn.h>

#include <cstdio>

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int, char**) {
    auto comm = chainermn::create_communicator("naive");
    const chainer::Tensor sum = comm->allreduce(chainer::Tensor::full({3}, 2.0));
    const std::vector<float> v = sum.to_vector<float>();
    std::printf("rank=%d size=%d sum=%g\n", comm->rank(), comm->size(), double(v[0] + v[1] + v[2]));
    return 0;
  });
}
CPP
(
  cd "$tmp/work" || exit 1
  meson() { if [ "$1" = install ]; then "$meson_prog" "$@" --no-rebuild; else "$meson_prog" "$@"; fi; }
  g++() { "${cxx[@]}" "$@"; }
  set -e
  eval "$block"
  echo "root=$root"
  echo "libdir=$libdir"
) >"$tmp/block.log" 2>&1 || fail "the staged-install block of docs/installation.md failed" "$tmp/block.log"
got=$(grep -v '^root=\|^libdir=' "$tmp/block.log" | tail -n 1)
[ "$got" = "rank=0 size=1 sum=6" ] || fail "prog printed '$got', expected 'rank=0 size=1 sum=6'" "$tmp/block.log"
root=$(sed -n 's/^root=//p' "$tmp/block.log")
libdir=$(sed -n 's/^libdir=//p' "$tmp/block.log")
pcdir=$libdir/pkgconfig
echo "ok: the staged install of docs/installation.md: prog printed $got"
LD_LIBRARY_PATH=$libdir ldd "$tmp/work/prog" >"$tmp/prog.ldd" 2>&1
grep -q "libchainer\.so.* => $libdir/" "$tmp/prog.ldd" || fail "prog does not load libchainer from $libdir" "$tmp/prog.ldd"

# flags PACKAGE [--libs]: PACKAGE's flags, pointing into the destdir as the block's.
flags() {
  PKG_CONFIG_PATH=$pcdir "$pkg_config" --define-variable=prefix="$root" --cflags "${@:2}" "$1" 2>"$tmp/pkg-config.log" ||
    fail "$pkg_config --cflags $* (PKG_CONFIG_PATH=$pcdir)" "$tmp/pkg-config.log"
}

# 2. chainer-cpp alone: a Linear link, forward and backward. W = 0.5, b = 0.25, x = [[1, 2], [3, 4]]:
# y = [[1.75] * 3, [3.75] * 3], sum(y) = 16.5; d sum / dW = [4, 6] per row (sum 30), d/db = 2 each (sum 6).
cat >"$tmp/chainer_consumer.cpp" <<'CPP'
#include <chainer.h>

#include <cstdio>
#include <numeric>

namespace F = chainer::functions;
namespace L = chainer::links;

int main() {
  auto linear = std::make_shared<L::Linear>(2, 3);
  linear->W().data().fill_(0.5);
  linear->b()->data().fill_(0.25);
  chainer::Variable x(chainer::Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}));
  chainer::Variable loss = F::sum((*linear)(x));
  linear->cleargrads();
  loss.backward();
  auto total = [](const chainer::Tensor& t) {
    const std::vector<float> v = t.to_vector<float>();
    return std::accumulate(v.begin(), v.end(), 0.0);
  };
  std::printf("loss=%g gW=%g gb=%g\n", loss.item(), total(linear->W().grad()), total(linear->b()->grad()));
  return 0;
}
CPP
f=$(flags chainer-cpp --libs) || exit 1
case " $f " in
  *" -I$root/"*) ;;
  *) fail "chainer-cpp: pkg-config's flags do not point into the destdir ($root): $f" ;;
esac
# shellcheck disable=SC2086  # the flags are words
"${cxx[@]}" -o "$tmp/chainer_consumer" "$tmp/chainer_consumer.cpp" $f >"$tmp/chainer_consumer.log" 2>&1 ||
  fail "chainer_consumer: compiling and linking against the installed chainer-cpp failed" "$tmp/chainer_consumer.log"
got=$(LD_LIBRARY_PATH=$libdir timeout 30 "$tmp/chainer_consumer" 2>&1)
[ "$got" = "loss=16.5 gW=30 gb=6" ] || fail "chainer_consumer: output '$got', expected 'loss=16.5 gW=30 gb=6'"
echo "ok: chainer_consumer (chainer-cpp): $got"

# 3. The guides' programs need nothing but the installed headers.
f=$(flags chainermn-cpp) || exit 1
found=0
for program in "$source_root"/docs/*/*.cpp; do
  [ -f "$program" ] || continue
  found=$((found + 1))
  name=${program#"$source_root/"}
  rm -rf "$tmp/alone" && mkdir "$tmp/alone" && cp "$program" "$tmp/alone/"
  # shellcheck disable=SC2086
  "${cxx[@]}" -E -o /dev/null "$tmp/alone/$(basename "$program")" $f >"$tmp/alone.log" 2>&1 ||
    fail "$name needs a header that is not installed (preprocessed alone with pkg-config's flags)" "$tmp/alone.log"
  echo "ok: $name needs only the installed headers"
done
[ "$found" -gt 0 ] || fail "no guide programs under $source_root/docs/*/"

# 4. The installed headers compile without warnings under the flags careful projects build
# with (their -Werror would otherwise break on our headers, which pkg-config gives as -I).
printf '#include <chainer.h>\n#include <chainermn.h>\nint main() { return 0; }\n' >"$tmp/strict.cpp"
# shellcheck disable=SC2086
"${cxx[@]}" -fsyntax-only -Wall -Wextra -Wshadow -Wpedantic -Werror "$tmp/strict.cpp" $f >"$tmp/strict.log" 2>&1 ||
  fail "the installed headers warn under -Wall -Wextra -Wshadow -Wpedantic" "$tmp/strict.log"
echo "ok: the installed headers compile cleanly under -Wall -Wextra -Wshadow -Wpedantic -Werror"

# 5. The install holds the public API and nothing else: every installed header is reached from
# chainer.h or chainermn.h (a private header installed by mistake, or a public one the umbrellas
# forgot, fails here), and every header they reach is installed.
umbrella=$(find "$root" -name chainermn.h -print -quit)
[ -n "$umbrella" ] || fail "no chainermn.h under $root"
python3 - "$(dirname "$umbrella")" >"$tmp/public.log" 2>&1 <<'PY' || fail "the installed headers are not the public API" "$tmp/public.log"
import os, re, sys
base = sys.argv[1]
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
reached, stack, missing = set(), ["chainer.h", "chainermn.h"], []
while stack:
    name = stack.pop()
    if name in reached:
        continue
    path = os.path.join(base, name)
    if not os.path.exists(path):
        missing.append(name)
        continue
    reached.add(name)
    for line in open(path):
        m = include.match(line)
        if m:
            stack.append(m.group(1))
installed = {os.path.relpath(os.path.join(d, f), base) for d, _, fs in os.walk(base) for f in fs}
extra = sorted(installed - reached)
for name in missing:
    print("reached from the umbrellas but not installed:", name)
for name in extra:
    print("installed but not reached from chainer.h or chainermn.h:", name)
sys.exit(1 if missing or extra else 0)
PY
echo "ok: the $(find "$(dirname "$umbrella")" -type f | wc -l) installed headers are exactly those chainer.h and chainermn.h reach"
exit 0
