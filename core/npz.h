// NPZ files (numpy.savez format: an uncompressed ZIP of .npy arrays), so parameters and
// snapshots written here open with numpy.load, and numpy-written files load here.
#pragma once
#include <string>

#include "core/serializer.h"

namespace chainer {

void save_npz(const std::string& path, const TensorMap& entries);
TensorMap load_npz(const std::string& path);  // throws chainer::Error naming the file and the problem

}  // namespace chainer
