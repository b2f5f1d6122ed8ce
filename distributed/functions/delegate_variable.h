// How communication stays in the autograd graph (ChainerMN's delegate variables and dummy
// inputs), shared by the point-to-point and collective functions.
//
// A function whose result lives on another rank (send; gather off the root) returns a delegate
// variable: a float32 scalar (zero) on the input's device whose creator is the communication's
// node, so a backward from it (delegate.backward(), or from a loss joined to it by pseudo_connect
// or recv(..., delegate)) runs the communication's backward, which a peer waits for.
//
// A function whose peers wait for its backward must be recorded whenever backprop is enabled,
// even where it has no input (recv; bcast and scatter off the root) or its inputs need no
// gradient on this rank: a placeholder input that requires a gradient makes it so, and the
// graphs of all ranks then have the same shape whatever each rank's inputs need.
#pragma once
#include "autograd/variable.h"

namespace chainermn::functions::detail {

// A fresh leaf that requires a gradient; backward gives it none.
chainer::Variable placeholder();

// The value of a delegate variable: a float32 scalar zero on DEVICE.
chainer::Tensor delegate_value(chainer::Device device);

}  // namespace chainermn::functions::detail
