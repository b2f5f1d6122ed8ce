// Where a tensor's memory lives. Only the CPU exists today; CUDA joins in a later issue and all
// dispatch on the device happens in core/ops.cpp, so kernels never test the device themselves.
#pragma once
#include <string>

namespace chainer {

struct Device {
  enum class Type { CPU, CUDA };
  Type type = Type::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  bool is_cpu() const { return type == Type::CPU; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string str() const;  // "cpu", "cuda:0"
};

}  // namespace chainer
