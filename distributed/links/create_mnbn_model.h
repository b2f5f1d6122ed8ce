/// @file
/// create_mnbn_model, as chainermn.links.create_mnbn_model: makes every BatchNormalization of a
/// model (the link itself, or any descendant: children of chains, links of a Sequential, at any
/// depth) a multi-node one, whose statistics are those of the batch spread over the ranks of a
/// communicator, as MultiNodeBatchNormalization's. The parameters (gamma, beta), the running
/// averages, N and the options (decay, eps, axis, dtype, use_gamma, use_beta) are the link's own.
///
/// Unlike Chainer's, which returns a deep copy with the links replaced, the conversion is in
/// place and returns LINK itself: a C++ link cannot be copied whatever its type, and a Chain's
/// forward() calls the children it holds in its own members, which a replaced child would not
/// reach. Write `model = create_mnbn_model(model, comm)` as in Chainer; keep a copy of the
/// single-process model by building it again. Links already summing over processes (a
/// MultiNodeBatchNormalization) are left as they are, as Chainer leaves them.
///
/// Each converted link's forward in training is then collective, as MultiNodeBatchNormalization's.
#pragma once
#include <memory>

#include "distributed/communicators/communicator.h"
#include "nn/link.h"

namespace chainermn::links {

/// Makes every BatchNormalization in LINK (and LINK itself) sum its statistics over COMM's ranks;
/// returns how many it converted. COMM must not be null.
int convert_batch_normalizations(chainer::Link& link, const std::shared_ptr<Communicator>& comm);

/// LINK with every BatchNormalization in it made multi-node over COMM (convert_batch_normalizations),
/// as Chainer's `create_mnbn_model(link, comm)`: LINK itself, converted in place.
template <class L>
std::shared_ptr<L> create_mnbn_model(std::shared_ptr<L> link, const std::shared_ptr<Communicator>& comm) {
  if (!link) throw chainer::Error("create_mnbn_model: the link is null");
  convert_batch_normalizations(*link, comm);
  return link;
}

}  // namespace chainermn::links
