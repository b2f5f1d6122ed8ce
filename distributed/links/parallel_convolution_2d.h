/// @file
/// ParallelConvolution2D, the channel-parallel convolution of ChainerMN's parallel_convolution
/// example: one convolution of OUT_CHANNELS filters split over the ranks of a communicator by
/// output channel. Each rank holds the filters (and bias) of its slice, computes its slice of
/// the output from the whole input, and the slices are gathered (chainermn::functions::allgather)
/// and concatenated along the channels, so every rank gets the whole output, the same as one
/// Convolution2D with the filters of all slices stacked in rank order.
///
/// Slices are sized as ChainerMN's: rank r of n holds `out_channels / n` channels, plus one for
/// the first `out_channels % n` ranks (channel_slice), so a count not divisible by n works; every
/// rank needs at least one channel (out_channels >= n).
///
/// Backward goes through the allgather's adjoint: the gradient of rank r's slice is the sum over
/// ranks of each rank's gradient for it, so the ranks' losses add up (ChainerMN's convention):
/// W's gradient on rank r is that of one Convolution2D's W rows for the sum of the ranks' losses.
/// The input's gradient on each rank is its own slice's part; the sum over the ranks is the whole
/// gradient (a preceding ParallelConvolution2D's allgather adds them up).
///
/// Unlike ChainerMN's example, whose layer also convolves only a strided subset of the input
/// channels (so each output channel sees a third of the input at 3 ranks, and the result changes
/// with the process count), this layer reads all input channels: it is a Convolution2D spread
/// over processes, whatever their number.
///
/// forward and backward are collective: every rank of the communicator calls them in the same order.
#pragma once
#include <memory>
#include <optional>

#include "distributed/communicators/communicator.h"
#include "nn/links/convolution_2d.h"

namespace chainermn::links {

/// The output channels of one rank: [offset, offset + count) of the whole convolution's.
struct ChannelSlice {
  int64_t offset = 0;  ///< The first output channel this rank computes.
  int64_t count = 0;   ///< How many: channels / size, plus one for ranks below channels % size.
};

/// Rank RANK's slice of CHANNELS output channels split over SIZE ranks, as ChainerMN's example
/// sizes them.
ChannelSlice channel_slice(int64_t channels, int size, int rank);

/// A 2-D convolution whose output channels are split over the ranks of a communicator.
class ParallelConvolution2D : public chainer::links::Convolution2D {
 public:
  /// Convolution2D(in_channels, out_channels, ...) spread over COMM: this rank's link holds
  /// channel_slice(out_channels, comm->size(), comm->rank()).count filters. They are its rows of
  /// the whole convolution's filters, drawn on each rank from INITIALW (default LeCun normal, as
  /// Convolution2D) with the shape (out_channels, in_channels, kh, kw); an array given is the
  /// whole convolution's. So ranks with the same random state hold together the filters one
  /// Convolution2D would draw from it. The same for the bias. Throws when out_channels is less
  /// than the number of ranks.
  ParallelConvolution2D(std::shared_ptr<Communicator> comm, std::optional<int64_t> in_channels, int64_t out_channels,
                        chainer::functions::Pair ksize, chainer::functions::Pair stride = 1,
                        chainer::functions::Pair pad = 0, bool nobias = false,
                        chainer::initializers::Initializer initialW = {},
                        chainer::initializers::Initializer initial_bias = {});

  /// Every rank's slice of the convolution of X (N, in_channels, H, W), concatenated along the
  /// channels: (N, out_channels, H', W') on every rank. Collective.
  chainer::Variable forward(const chainer::Variable& x) override;

  int64_t total_out_channels() const { return total_out_channels_; }  ///< All ranks' output channels.
  const ChannelSlice& slice() const { return slice_; }  ///< This rank's output channels.
  const std::shared_ptr<Communicator>& comm() const { return comm_; }  ///< The communicator of the slices.

 private:
  std::shared_ptr<Communicator> comm_;
  int64_t total_out_channels_;
  ChannelSlice slice_;
};

}  // namespace chainermn::links
