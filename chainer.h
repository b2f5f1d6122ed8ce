// chainermn-cpp: one include for the whole single-process framework.
//   #include <chainer.h>
//   namespace F = chainer::functions; namespace L = chainer::links;
#pragma once

#include "autograd/computational_graph.h"
#include "autograd/function_node.h"
#include "autograd/gradient_check.h"
#include "autograd/variable.h"
#include "core/config.h"
#include "core/npz.h"
#include "core/ops.h"
#include "core/parallel.h"
#include "core/random.h"
#include "core/serializer.h"
#include "core/tensor.h"
#include "datasets/datasets.h"
#include "nn/functions.h"
#include "nn/initializers.h"
#include "nn/link.h"
#include "nn/links/classifier.h"
#include "nn/links/linear.h"
#include "nn/optimizer.h"
#include "nn/optimizer_hooks.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/momentum_sgd.h"
#include "nn/optimizers/sgd.h"
#include "nn/reporter.h"
#include "training/training.h"
