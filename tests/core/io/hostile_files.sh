#!/bin/bash
# Runs the hostile-file table (test_hostile_files) under a limit on its address space, 512 MiB:
# the forged files declare from 3.6 GB to 1 TB, so a reader that allocates on a header's word
# fails at once with std::bad_alloc instead of swapping the machine, while the readers' real
# work (a few small files) needs a small fraction of it. The limit is virtual memory, so it also
# holds on machines without swap and counts memory that is reserved but not yet touched.
# Usage: hostile_files.sh TEST_BINARY [catch2 arguments...]
set -u
binary=$1
shift
ulimit -v $((512 * 1024)) || { echo "hostile_files.sh: cannot set ulimit -v" >&2; exit 1; }
exec "$binary" "$@"
