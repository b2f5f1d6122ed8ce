// The device-error record: a kernel that finds a bad input it cannot report at once writes it
// here (device memory, core/cuda/common.cuh: report_device_error), and the runtime reads it back
// at the next host wait and throws the CPU's message (core/cuda/device_runtime.cpp).
#pragma once

namespace chainer::cuda {

enum DeviceErrorCode : int {
  kNoDeviceError = 0,
  kLabelOutOfRange = 1,  // a: the row, b: the label, c: the number of classes, d: ignore_label
  kTakeIndexOutOfRange = 2,        // a: the position in the indices, b: the index, c: the extent, d: the axis
  kScatterAddIndexOutOfRange = 3,  // as kTakeIndexOutOfRange
};
struct DeviceErrorRecord {
  int code;
  long long a, b, c, d;
};

}  // namespace chainer::cuda
