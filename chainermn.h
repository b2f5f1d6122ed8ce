/// @file
/// chainermn-cpp's distributed layer in one include: the MPI job (init_mpi, run_main,
/// abort_job), the MPI library's facts, communicators (create_communicator: every kind), the
/// multi-node optimizer and evaluators, the trainer extensions (AllreducePersistent,
/// ObservationAggregator, MultiNodeEarlyStoppingTrigger), the multi-node checkpointer and
/// snapshot, scatter_dataset, the multi-node and synchronized iterators, communication as
/// differentiable functions (chainermn::functions), the multi-node links, and object
/// serialization. Includes chainer.h.
#pragma once
#include "chainer.h"
#include "distributed/communicators/communicator.h"
#include "distributed/communicators/dummy_communicator.h"
#include "distributed/communicators/flat_communicator.h"
#include "distributed/functions/collective_communication.h"
#include "distributed/functions/point_to_point.h"
#include "distributed/functions/pseudo_connect.h"
#include "distributed/extensions/allreduce_persistent.h"
#include "distributed/extensions/checkpoint.h"
#include "distributed/extensions/generic_multi_node_evaluator.h"
#include "distributed/extensions/multi_node_early_stopping_trigger.h"
#include "distributed/extensions/multi_node_snapshot.h"
#include "distributed/extensions/observation_aggregator.h"
#include "distributed/iterators/multi_node_iterator.h"
#include "distributed/iterators/synchronized_iterator.h"
#include "distributed/links/create_mnbn_model.h"
#include "distributed/links/multi_node_batch_normalization.h"
#include "distributed/links/multi_node_chain_list.h"
#include "distributed/links/multi_node_n_step_rnn.h"
#include "distributed/links/parallel_convolution_2d.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_library.h"
#include "distributed/runtime/mpi_runtime.h"
#include "distributed/runtime/mpi_wait.h"
#include "distributed/extensions/multi_node_evaluator.h"
#include "distributed/optimizers/multi_node_optimizer.h"
#include "distributed/communicators/naive_communicator.h"
#include "distributed/runtime/object_reduction.h"
#include "distributed/runtime/object_serialization.h"
#include "distributed/datasets/scatter_dataset.h"
#include "distributed/runtime/topology.h"

/// @namespace chainermn
/// The distributed layer over MPI, with ChainerMN's names: communicators, the multi-node
/// optimizer and evaluators, scatter_dataset and the MPI job's life cycle.
/// @namespace chainermn::extensions
/// Trainer extensions of ChainerMN that live in `chainermn.extensions` by name, as multi_node_snapshot.
/// @namespace chainermn::functions
/// Communication between processes as differentiable functions, as `chainermn.functions`.
/// @namespace chainermn::extensions
/// Trainer extensions and triggers for multi-node training, as `chainermn.extensions`.
/// @namespace chainermn::links
/// Links spanning processes, as `chainermn.links`.
