#!/usr/bin/env bash
# The installed library as an outside program sees it: `meson install --destdir` of the build
# directory into a temporary directory, then small programs compiled and linked only with what
# `pkg-config --cflags --libs` says (chainer-cpp; chainermn-cpp too), run with LD_LIBRARY_PATH
# pointing into the destdir, and their output checked. Installs what is already built
# (--no-rebuild): meson test builds it first. The programs of the guides listed in
# $GUIDE_SOURCES (paths, space-separated) are built and run the same way; they check themselves.
#   [GUIDE_SOURCES=...] tests/install_consumer.sh MESON BUILD_DIR PKG_CONFIG CXX...
set -u
usage="usage: install_consumer.sh MESON BUILD_DIR PKG_CONFIG CXX..."
meson=${1:?$usage}
build=${2:?$usage}
pkg_config=${3:?$usage}
shift 3
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
cxx=("$@")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/chainer_install_consumer.XXXXXX") || { echo "FAIL: mktemp" >&2; exit 1; }
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest

# fail STEP LOG: the step that failed, with the end of its output, and exit 1.
fail() {
  echo "FAIL: $1" >&2
  if [ -n "${2:-}" ] && [ -s "$2" ]; then
    echo "--- last lines of its output:" >&2
    tail -n 40 "$2" >&2
  fi
  exit 1
}

# 1. Install.
"$meson" install -C "$build" --no-rebuild --destdir "$dest" >"$tmp/install.log" 2>&1 ||
  fail "meson install -C $build --no-rebuild --destdir $dest (is the build complete?)" "$tmp/install.log"

# 2. Where the .pc files went; their prefix, moved into the destdir.
pc=$(find "$dest" -name chainer-cpp.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || fail "no pkgconfig/chainer-cpp.pc installed under $dest"
pcdir=$(dirname "$pc")
prefix=$(sed -n 's/^prefix=//p' "$pc")
[ -n "$prefix" ] || fail "no prefix= line in $pc"
root=$dest$prefix
[ -d "$root" ] || fail "the prefix of $pc ($prefix) is not under the destdir: $root does not exist"
libdir=$(PKG_CONFIG_PATH=$pcdir "$pkg_config" --define-variable=prefix="$root" --variable=libdir chainer-cpp) ||
  fail "$pkg_config --variable=libdir chainer-cpp"
[ -d "$libdir" ] || fail "libdir $libdir (from $pc) does not exist in the destdir"

# flags PACKAGE: the compile and link flags of PACKAGE, pointing into the destdir.
flags() {
  PKG_CONFIG_PATH=$pcdir "$pkg_config" --define-variable=prefix="$root" --cflags --libs "$1" 2>"$tmp/pkg-config.log" ||
    fail "$pkg_config --cflags --libs $1 (PKG_CONFIG_PATH=$pcdir)" "$tmp/pkg-config.log"
}

# build_and_run NAME PACKAGE EXPECTED: compile $tmp/NAME.cpp with PACKAGE's flags, run it, and
# compare its output with EXPECTED ('*': any output; the program checks itself and exits 0).
build_and_run() {
  local name=$1 package=$2 expected=$3 f
  f=$(flags "$package") || exit 1
  case " $f " in
    *" -I$root/"*) ;;
    *) fail "$package: pkg-config's flags do not point into the destdir ($root): $f" ;;
  esac
  # shellcheck disable=SC2086  # the flags are words
  # Nothing but pkg-config's flags (they carry -std=c++20 too).
  "${cxx[@]}" -o "$tmp/$name" "$tmp/$name.cpp" $f >"$tmp/$name.build.log" 2>&1 ||
    fail "$name: compiling and linking against the installed $package failed: ${cxx[*]} $tmp/$name.cpp $f" \
      "$tmp/$name.build.log"
  # Only the installed library: no build-directory rpath can be in a program built here.
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 30 "$tmp/$name" >"$tmp/$name.out" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || fail "$name: the program built against the installed $package exited with $rc" "$tmp/$name.out"
  local got
  got=$(cat "$tmp/$name.out")
  [ "$expected" = "*" ] || [ "$got" = "$expected" ] || fail "$name: output '$got', expected '$expected'" "$tmp/$name.out"
  # And the library it loaded is the installed one.
  LD_LIBRARY_PATH=$libdir ldd "$tmp/$name" >"$tmp/$name.ldd" 2>&1
  grep -q "libchainer\.so.* => $libdir/" "$tmp/$name.ldd" ||
    fail "$name: does not load libchainer from $libdir" "$tmp/$name.ldd"
  echo "ok: $name ($package): $got"
}

# 3. chainer-cpp: a Linear link, forward and backward. W = 0.5, b = 0.25, x = [[1, 2], [3, 4]]:
# y = [[1.75] * 3, [3.75] * 3], sum(y) = 16.5; d sum / dW = [4, 6] per row (sum 30), d/db = 2 each (sum 6).
cat >"$tmp/chainer_consumer.cpp" <<'EOF'
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
EOF
build_and_run chainer_consumer chainer-cpp "loss=16.5 gW=30 gb=6"

# 4. The guides' programs: <chainer.h> and the standard library only.
for source in ${GUIDE_SOURCES:-}; do
  name=$(basename "$source" .cpp)
  cp "$source" "$tmp/$name.cpp" || fail "cannot copy the guide program $source"
  build_and_run "$name" chainer-cpp "*"
done

# 5. chainermn-cpp, when installed: a communicator in a 1-process job (MPICH's singleton init).
if [ -f "$pcdir/chainermn-cpp.pc" ]; then
  cat >"$tmp/chainermn_consumer.cpp" <<'EOF'
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
EOF
  build_and_run chainermn_consumer chainermn-cpp "rank=0 size=1 sum=6"
else
  echo "note: no chainermn-cpp.pc installed; only chainer-cpp checked"
fi
exit 0
