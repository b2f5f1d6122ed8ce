#include "distributed/links/parallel_convolution_2d.h"

#include "distributed/functions/collective_communication.h"
#include "nn/functions/array.h"

namespace chainermn::links {

namespace {

// This rank's slice, checked before the base link is built with its size.
ChannelSlice checked_slice(const std::shared_ptr<Communicator>& comm, int64_t out_channels) {
  if (!comm) throw chainer::Error("ParallelConvolution2D: the communicator is null");
  if (out_channels < comm->size())
    throw chainer::Error(chainer::str("ParallelConvolution2D: out_channels ", out_channels, " is less than the ",
                                      comm->size(), " processes it is split over; each needs at least one channel "
                                      "(use Convolution2D for so few channels)"));
  return channel_slice(out_channels, comm->size(), comm->rank());
}

}  // namespace

ChannelSlice channel_slice(int64_t channels, int size, int rank) {
  if (size <= 0 || rank < 0 || rank >= size)
    throw chainer::Error(chainer::str("channel_slice: rank ", rank, " is not one of ", size, " ranks"));
  if (channels < 0) throw chainer::Error(chainer::str("channel_slice: channels must be at least 0, got ", channels));
  const int64_t base = channels / size, extra = channels % size;
  return {rank * base + std::min<int64_t>(rank, extra), base + (rank < extra ? 1 : 0)};
}

ParallelConvolution2D::ParallelConvolution2D(std::shared_ptr<Communicator> comm, std::optional<int64_t> in_channels,
                                             int64_t out_channels, chainer::functions::Pair ksize,
                                             chainer::functions::Pair stride, chainer::functions::Pair pad,
                                             bool nobias, chainer::initializers::Initializer initialW,
                                             chainer::initializers::Initializer initial_bias)
    : Convolution2D(in_channels, checked_slice(comm, out_channels).count, ksize, stride, pad, nobias,
                    std::move(initialW), std::move(initial_bias)),
      comm_(std::move(comm)), total_out_channels_(out_channels), slice_(channel_slice(out_channels, comm_->size(),
                                                                                       comm_->rank())) {}

chainer::Variable ParallelConvolution2D::forward(const chainer::Variable& x) {
  const chainer::Variable y = Convolution2D::forward(x);
  if (comm_->size() == 1) return y;
  return chainer::functions::concat(functions::allgather(comm_, y), 1);
}

}  // namespace chainermn::links
