/// @file
/// chainermn-cpp: one include for the whole single-process framework.
///
///     #include <chainer.h>
///     namespace F = chainer::functions; namespace L = chainer::links;
#pragma once

#include "autograd/computational_graph.h"
#include "autograd/function_hook.h"
#include "autograd/function_hooks/timer_hook.h"
#include "autograd/function_node.h"
#include "autograd/gradient_check.h"
#include "autograd/variable.h"
#include "core/memory/allocator.h"
#include "core/util/config.h"
#include "core/cpu/isa.h"
#include "core/device/cuda.h"
#include "core/io/npz.h"
#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "core/util/parse.h"
#include "core/util/random.h"
#include "core/io/serializer.h"
#include "core/io/serializers.h"
#include "core/tensor/tensor.h"
#include "core/ops/update_ops.h"
#include "datasets/datasets.h"
#include "nn/autocast.h"
#include "nn/functions.h"
#include "nn/initializers.h"
#include "nn/link.h"
#include "nn/links/batch_normalization.h"
#include "nn/links/classifier.h"
#include "nn/links/convolution_2d.h"
#include "nn/links/deconvolution_2d.h"
#include "nn/links/embed_id.h"
#include "nn/links/depthwise_convolution_2d.h"
#include "nn/links/identity.h"
#include "nn/links/inception.h"
#include "nn/links/inceptionbn.h"
#include "nn/links/linear.h"
#include "nn/links/lstm.h"
#include "nn/links/mlp_convolution_2d.h"
#include "nn/links/n_step_rnn.h"
#include "nn/optimizer.h"
#include "nn/optimizer_hooks.h"
#include "nn/optimizers/ada_delta.h"
#include "nn/optimizers/ada_grad.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/momentum_sgd.h"
#include "nn/optimizers/nesterov_ag.h"
#include "nn/optimizers/rmsprop.h"
#include "nn/optimizers/rmsprop_graves.h"
#include "nn/optimizers/sgd.h"
#include "nn/optimizers/smorms3.h"
#include "nn/reporter.h"
#include "nn/sequential.h"
#include "training/training.h"

/// @namespace chainer
/// The single-process framework, with Chainer's names: tensors, variables and define-by-run
/// autograd, functions, links, optimizers, datasets, iterators and the trainer.
/// @namespace chainer::config
/// Thread-local configuration, as `chainer.config`.
/// @namespace chainer::cuda
/// The CUDA backend's availability and devices; loaded on first use from a plugin.
/// @namespace chainer::dataset
/// Batching examples into arrays, and where data sets are cached and downloaded from, as
/// `chainer.dataset` (concat_examples, get_dataset_root, download_file).
/// @namespace chainer::datasets
/// Datasets, as `chainer.datasets`: MNIST, Fashion-MNIST, tuples, sub-datasets, splits.
/// @namespace chainer::functions
/// Differentiable functions on variables, as `chainer.functions` (conventionally `F`).
/// @namespace chainer::initializers
/// Parameter initializers, as `chainer.initializers`.
/// @namespace chainer::iterators
/// Dataset iterators, as `chainer.iterators`.
/// @namespace chainer::links
/// Links (layers holding parameters), as `chainer.links` (conventionally `L`).
/// @namespace chainer::ops
/// Tensor operations without autograd, dispatched to the CPU or CUDA kernels.
/// @namespace chainer::optimizer_hooks
/// Hooks run by an optimizer before its update, as `chainer.optimizer_hooks`.
/// @namespace chainer::optimizers
/// Optimizers, as `chainer.optimizers`.
/// @namespace chainer::serializers
/// Saving and loading objects as NPZ, as `chainer.serializers` (save_npz, load_npz).
/// @namespace chainer::training
/// The training loop, as `chainer.training`: Trainer, updaters, triggers.
/// @namespace chainer::training::extensions
/// Trainer extensions, as `chainer.training.extensions`.
