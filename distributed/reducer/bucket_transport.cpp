#include "distributed/reducer/bucket_transport.h"

namespace chainermn {

using chainer::Tensor;

namespace {

class CommunicatorTransport final : public BucketTransport {
 public:
  CommunicatorTransport(std::shared_ptr<Communicator> comm, std::vector<BucketLayout> buckets)
      : comm_(std::move(comm)), layout_(std::move(buckets)), buffers_(layout_.size()), chosen_(layout_.size()) {}

  Tensor buffer(size_t b) override {
    Tensor& buf = buffers_[b];
    if (!chosen_[b]) {
      // The previous step's gradients are views of the buffer (see GradientReducer::finalize); if
      // somebody still holds one, this step gets a fresh buffer instead of overwriting theirs.
      const BucketLayout& l = layout_[b];
      if (!buf.defined() || buf.storage().use_count() > 1) buf = Tensor::empty({l.numel}, l.dtype, l.device);
      chosen_[b] = true;
    }
    return buf;
  }
  std::unique_ptr<PendingSum> start(size_t b) override { return comm_->start_sum(buffers_[b]); }
  Finished finish_step(bool) override { return {}; }
  Tensor means(size_t b) override { return buffers_[b]; }
  void end_step() override { std::fill(chosen_.begin(), chosen_.end(), false); }

 private:
  std::shared_ptr<Communicator> comm_;
  std::vector<BucketLayout> layout_;
  std::vector<Tensor> buffers_;
  std::vector<bool> chosen_;
};

}  // namespace

std::unique_ptr<BucketTransport> communicator_transport(std::shared_ptr<Communicator> comm,
                                                        std::vector<BucketLayout> buckets) {
  return std::make_unique<CommunicatorTransport>(std::move(comm), std::move(buckets));
}

}  // namespace chainermn
