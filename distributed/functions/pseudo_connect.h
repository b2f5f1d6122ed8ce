/// @file
/// pseudo_connect, as ChainerMN's chainermn.functions.pseudo_connect: ties a delegate variable
/// (what send, or gather off the root, returned) to the variables a rank goes on computing with,
/// so that one backward from its loss runs both its own graph and the communication's backward
/// that a peer waits for.
///
/// ```
///   Variable phi = send(x, comm, 1);             // x goes to rank 1
///   Variable y = pseudo_connect(phi, local(x));  // y has local(x)'s values
///   loss(y).backward();                          // backward through local(x), and phi's backward
///                                                // receives dL/dx from rank 1
/// ```
#pragma once
#include <vector>

#include "autograd/variable.h"

namespace chainermn::functions {

using chainer::Variable;

/// ACTUAL's values, as a variable whose backward passes the gradient on to ACTUAL and gives
/// DELEGATE a gradient of zeros of its shape (so the delegate's creator runs). An undefined
/// DELEGATE returns ACTUAL itself (nothing to connect).
Variable pseudo_connect(const Variable& delegate, const Variable& actual);
/// The same for several variables at once (one node, so the delegate's backward runs once).
std::vector<Variable> pseudo_connect(const Variable& delegate, const std::vector<Variable>& actual);

}  // namespace chainermn::functions
