// Where a tensor's memory lives: the CPU or one CUDA device. Model code never tests it: ops
// dispatch on it in one place (core/kernels.h), and it appears in error messages.
#pragma once
#include <string>

namespace chainer {

struct Device {
  enum class Type { CPU, CUDA };
  Type type = Type::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index) { return {Type::CUDA, index}; }
  bool is_cpu() const { return type == Type::CPU; }
  bool is_cuda() const { return type == Type::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string str() const;  // "cpu", "cuda:0"
};

}  // namespace chainer
