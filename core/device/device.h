/// @file
/// Where a tensor's memory lives: the CPU or one CUDA device. Model code never tests it: ops
/// dispatch on it in one place (core/ops/kernels.h), and it appears in error messages.
#pragma once
#include <string>

namespace chainer {

/// A device: the CPU, or CUDA device `index`.
struct Device {
  /// The kinds of device.
  enum class Type { CPU, CUDA };
  Type type = Type::CPU;  ///< the kind of device
  int index = 0;  ///< the CUDA device number (0 on the CPU)

  static Device cpu() { return {}; }  ///< the CPU
  static Device cuda(int index) { return {Type::CUDA, index}; }  ///< CUDA device INDEX
  bool is_cpu() const { return type == Type::CPU; }  ///< whether this is the CPU
  bool is_cuda() const { return type == Type::CUDA; }  ///< whether this is a CUDA device
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }  ///< same type and index
  std::string str() const;  ///< its name: "cpu", "cuda:0"
};

}  // namespace chainer
