/// @file
/// NPZ files (numpy.savez format: an uncompressed ZIP of .npy arrays), so parameters and
/// snapshots written here open with numpy.load, and numpy-written files load here; single
/// arrays as NPY files (numpy.save) the same way.
#pragma once
#include <string>

#include "core/serializer.h"

namespace chainer {

/// Writes ENTRIES to PATH as an NPZ file, one array per key (numpy.savez). The file is written as
/// `PATH.tmp.<pid>.<n>` and renamed to PATH, so PATH only ever holds a whole file; a save killed
/// mid-way leaves that temporary file. DURABLE also syncs the file before the rename and the
/// directory after it, so the new file survives a crash of the machine (checkpoints).
void save_npz(const std::string& path, const TensorMap& entries, bool durable = false);
/// Reads the NPZ file at PATH (numpy.load). Throws chainer::Error naming the file and the problem.
TensorMap load_npz(const std::string& path);

/// Writes ARRAY to PATH as one NPY file (numpy.save), e.g. the mean image of compute_mean.
void save_npy(const std::string& path, const Tensor& array);
/// Reads the NPY file at PATH (numpy.load of a .npy). Throws chainer::Error naming the file and the problem.
Tensor load_npy(const std::string& path);

}  // namespace chainer
