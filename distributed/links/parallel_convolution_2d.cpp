#include "distributed/links/parallel_convolution_2d.h"

#include "distributed/functions/collective_communication.h"
#include "nn/functions/array.h"
#include "nn/initializers.h"

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

// INIT (or, empty, the default: LeCun normal for W, zeros for b) drawn for the whole
// convolution's OUT_CHANNELS, of which this rank keeps its rows: with the same random state on
// every rank, the slices together are the filters one Convolution2D would draw, whatever the
// number of ranks; an array given as initialW is the whole convolution's.
chainer::initializers::Initializer rows_of_whole(chainer::initializers::Initializer init, int64_t out_channels,
                                                 ChannelSlice slice, const char* who, bool weight) {
  if (!init && !weight) return {};  // zeros, of any shape
  return chainer::initializers::Initializer([init, out_channels, slice, who](const chainer::Shape& shape) {
    chainer::Shape whole = shape;
    whole[0] = out_channels;
    const chainer::Tensor t = init ? init(whole, who) : chainer::initializers::lecun_normal(whole);
    return t.narrow(0, slice.offset, slice.count).contiguous();
  });
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
                    rows_of_whole(std::move(initialW), out_channels, checked_slice(comm, out_channels),
                                  "ParallelConvolution2D: initialW", true),
                    rows_of_whole(std::move(initial_bias), out_channels, checked_slice(comm, out_channels),
                                  "ParallelConvolution2D: initial_bias", false)),
      comm_(std::move(comm)), total_out_channels_(out_channels), slice_(channel_slice(out_channels, comm_->size(),
                                                                                       comm_->rank())) {}

chainer::Variable ParallelConvolution2D::forward(const chainer::Variable& x) {
  const chainer::Variable y = Convolution2D::forward(x);
  if (comm_->size() == 1) return y;
  return chainer::functions::concat(functions::allgather(comm_, y), 1);
}

}  // namespace chainermn::links
