/// @file
/// NPZ files (numpy.savez format: an uncompressed ZIP of .npy arrays), so parameters and
/// snapshots written here open with numpy.load, and numpy-written files load here.
#pragma once
#include <string>

#include "core/serializer.h"

namespace chainer {

/// Writes ENTRIES to PATH as an NPZ file, one array per key (numpy.savez).
void save_npz(const std::string& path, const TensorMap& entries);
/// Reads the NPZ file at PATH (numpy.load). Throws chainer::Error naming the file and the problem.
TensorMap load_npz(const std::string& path);

}  // namespace chainer
