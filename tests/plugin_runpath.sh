#!/usr/bin/env bash
# The GPU plugins find the CUDA libraries they link through their own RUNPATH, in the build tree
# as once installed: every library a plugin needs that lies in the CUDA library folder must lie
# in a folder of the plugin's RUNPATH ($ORIGIN expanded), whatever ld.so's cache or
# LD_LIBRARY_PATH hold. The plugins are read with readelf -d; nothing is loaded.
# Besides, what a plugin must or must not link, by file name:
#   --needs NAME:PREFIX       plugin NAME needs a library whose name starts with PREFIX, and a
#                             folder of its RUNPATH holds it (libchainer_cudnn.so: libcudnn.so.,
#                             and libchainer_cuda.so, whose copy already loaded it resolves to);
#   --not-needed NAME:PREFIX  plugin NAME needs no such library (libchainer_cuda.so must not need
#                             libcudnn: a machine without cuDNN loads it, and only the convolutions
#                             fail, naming the library; core/cuda/cudnn_plugin.h).
# Exits 77 (skipped) in a build without CUDA.
#   tests/plugin_runpath.sh CUDA_LIBDIR [--needs NAME:PREFIX]... [--not-needed NAME:PREFIX]... PLUGIN...
#   (no PLUGIN: the build has no CUDA)
set -u
usage="usage: plugin_runpath.sh CUDA_LIBDIR [--needs NAME:PREFIX]... [--not-needed NAME:PREFIX]... PLUGIN..."
[[ $# -ge 1 ]] || { echo "$usage"; exit 2; }
cuda_libdir=$1
shift
needs=()
not_needed=()
while [[ $# -gt 0 && $1 == --* ]]; do
  [[ $# -ge 2 && $2 == *:* ]] || { echo "$usage"; exit 2; }
  case $1 in
    --needs) needs+=("$2") ;;
    --not-needed) not_needed+=("$2") ;;
    *) echo "$usage"; exit 2 ;;
  esac
  shift 2
done
if [[ $# -eq 0 ]]; then
  echo "skipped: this build has no CUDA plugin"
  exit 77
fi
command -v readelf >/dev/null || { echo "FAIL: readelf (binutils) is not installed"; exit 1; }
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# in_runpath LIB: the folder of $runpath ($ORIGIN expanded to $origin) that holds LIB, or nothing.
in_runpath() {
  local dir dirs
  IFS=: read -ra dirs <<<"$runpath"
  for dir in "${dirs[@]}"; do
    dir=${dir//\$ORIGIN/$origin}
    [[ -n $dir && -e $dir/$1 ]] && echo "$dir" && return
  done
}

checked_rules=0
for plugin in "$@"; do
  name=$(basename "$plugin")
  dynamic=$(readelf -d "$plugin") || { fail "readelf -d $plugin"; continue; }
  runpath=$(sed -n 's/.*(RUNPATH) *Library runpath: \[\(.*\)\]/\1/p' <<<"$dynamic")
  origin=$(cd "$(dirname "$plugin")" && pwd)
  mapfile -t needed < <(sed -n 's/.*(NEEDED) *Shared library: \[\(.*\)\]/\1/p' <<<"$dynamic")
  echo "$name: RUNPATH [$runpath]"
  checked=0
  for lib in "${needed[@]}"; do
    [[ -e $cuda_libdir/$lib ]] || continue  # not a CUDA library (libc, libchainer, ...)
    checked=$((checked + 1))
    found=$(in_runpath "$lib")
    if [[ -n $found ]]; then
      echo "  $lib: in $found"
    else
      fail "$name needs $lib (in $cuda_libdir), which no folder of its RUNPATH holds"
    fi
  done
  [[ $checked -gt 0 ]] || fail "$name needs no library of $cuda_libdir (is CUDA_LIBDIR right?)"
  for rule in "${needs[@]}"; do
    [[ ${rule%%:*} == "$name" ]] || continue
    checked_rules=$((checked_rules + 1))
    prefix=${rule#*:}
    matched=0
    for lib in "${needed[@]}"; do
      [[ $lib == "$prefix"* ]] || continue
      matched=1
      found=$(in_runpath "$lib")
      if [[ -n $found ]]; then
        echo "  needs $lib: in $found"
      else
        fail "$name needs $lib, which no folder of its RUNPATH [$runpath] holds"
      fi
    done
    [[ $matched -eq 1 ]] || fail "$name needs no library named $prefix* (NEEDED: ${needed[*]})"
  done
  for rule in "${not_needed[@]}"; do
    [[ ${rule%%:*} == "$name" ]] || continue
    checked_rules=$((checked_rules + 1))
    prefix=${rule#*:}
    bad=""
    for lib in "${needed[@]}"; do [[ $lib == "$prefix"* ]] && bad+=" $lib"; done
    if [[ -n $bad ]]; then
      fail "$name needs$bad: it must not (a machine without that library could not load $name)"
    else
      echo "  needs no $prefix*"
    fi
  done
done
# A rule naming a plugin that was not given checks nothing: a renamed plugin must not pass quietly.
[[ $checked_rules -eq $((${#needs[@]} + ${#not_needed[@]})) ]] ||
  fail "$((${#needs[@]} + ${#not_needed[@]} - checked_rules)) --needs/--not-needed rule(s) name no plugin given"
[[ $failures -eq 0 ]] && echo "OK: $# plugin(s)" || echo "$failures failure(s)"
[[ $failures -eq 0 ]]
