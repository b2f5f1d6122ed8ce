#!/usr/bin/env bash
# The GPU plugins find the CUDA libraries they link through their own RUNPATH, in the build tree
# as once installed: every library a plugin needs that lies in the CUDA library folder must lie
# in a folder of the plugin's RUNPATH ($ORIGIN expanded), whatever ld.so's cache or
# LD_LIBRARY_PATH hold. The plugins are read with readelf -d; nothing is loaded.
# Exits 77 (skipped) in a build without CUDA.
#   tests/plugin_runpath.sh CUDA_LIBDIR PLUGIN...      (no PLUGIN: the build has no CUDA)
set -u
[[ $# -ge 1 ]] || { echo "usage: plugin_runpath.sh CUDA_LIBDIR PLUGIN..."; exit 2; }
cuda_libdir=$1
shift
if [[ $# -eq 0 ]]; then
  echo "skipped: this build has no CUDA plugin"
  exit 77
fi
command -v readelf >/dev/null || { echo "FAIL: readelf (binutils) is not installed"; exit 1; }
failures=0
for plugin in "$@"; do
  dynamic=$(readelf -d "$plugin") || { echo "FAIL: readelf -d $plugin"; failures=$((failures + 1)); continue; }
  runpath=$(sed -n 's/.*(RUNPATH) *Library runpath: \[\(.*\)\]/\1/p' <<<"$dynamic")
  origin=$(cd "$(dirname "$plugin")" && pwd)
  echo "$(basename "$plugin"): RUNPATH [$runpath]"
  checked=0
  while read -r lib; do
    [[ -e $cuda_libdir/$lib ]] || continue  # not a CUDA library (libc, libchainer, ...)
    checked=$((checked + 1))
    found=""
    IFS=: read -ra dirs <<<"$runpath"
    for dir in "${dirs[@]}"; do
      dir=${dir//\$ORIGIN/$origin}
      [[ -n $dir && -e $dir/$lib ]] && found=$dir && break
    done
    if [[ -n $found ]]; then
      echo "  $lib: in $found"
    else
      echo "FAIL: $(basename "$plugin") needs $lib (in $cuda_libdir), which no folder of its RUNPATH holds"
      failures=$((failures + 1))
    fi
  done < <(sed -n 's/.*(NEEDED) *Shared library: \[\(.*\)\]/\1/p' <<<"$dynamic")
  if [[ $checked -eq 0 ]]; then
    echo "FAIL: $(basename "$plugin") needs no library of $cuda_libdir (is CUDA_LIBDIR right?)"
    failures=$((failures + 1))
  fi
done
[[ $failures -eq 0 ]] && echo "OK: $# plugin(s)" || echo "$failures failure(s)"
[[ $failures -eq 0 ]]
