#include "distributed/reducer/bucket_transport.h"

#include <algorithm>

namespace chainermn {

using chainer::Tensor;

namespace {

class CommunicatorTransport final : public BucketTransport {
 public:
  CommunicatorTransport(std::shared_ptr<Communicator> comm, std::vector<BucketLayout> buckets)
      : comm_(std::move(comm)),
        layout_(std::move(buckets)),
        pools_(layout_.size()),
        chosen_(layout_.size(), -1),
        last_(layout_.size(), 0) {}

  Tensor buffer(size_t b) override {
    std::vector<Tensor>& pool = pools_[b];
    if (chosen_[b] < 0) {
      // The previous steps' gradients are views of their buffers (see GradientReducer::finalize),
      // and a step left in flight holds its own; this step packs into one nobody else holds.
      for (size_t i = 0; i < pool.size() && chosen_[b] < 0; ++i)
        if (pool[i].storage().use_count() == 1) chosen_[b] = int(i);
      if (chosen_[b] < 0) {
        const BucketLayout& l = layout_[b];
        Tensor fresh = Tensor::empty({l.numel}, l.dtype, l.device);
        if (pool.size() < kPool) {
          pool.push_back(std::move(fresh));
          chosen_[b] = int(pool.size()) - 1;
        } else {
          // Every buffer is still held elsewhere: replace one (its holders keep its storage alive).
          chosen_[b] = int((last_[b] + 1) % kPool);
          pool[size_t(chosen_[b])] = std::move(fresh);
        }
      }
      last_[b] = size_t(chosen_[b]);
    }
    return pool[size_t(chosen_[b])];
  }
  std::unique_ptr<PendingSum> start(size_t b) override { return comm_->start_sum(pools_[b][size_t(chosen_[b])]); }
  Finished finish_step(bool) override { return {}; }
  Tensor means(size_t b) override { return pools_[b][last_[b]]; }
  void end_step() override { std::fill(chosen_.begin(), chosen_.end(), -1); }

 private:
  static constexpr size_t kPool = 3;  // in flight, viewed by the last step's gradients, one spare
  std::shared_ptr<Communicator> comm_;
  std::vector<BucketLayout> layout_;
  std::vector<std::vector<Tensor>> pools_;
  std::vector<int> chosen_;  // this step's buffer per bucket, -1 before the step chooses
  std::vector<size_t> last_;  // the last chosen per bucket, for means()
};

}  // namespace

std::unique_ptr<BucketTransport> communicator_transport(std::shared_ptr<Communicator> comm,
                                                        std::vector<BucketLayout> buckets) {
  return std::make_unique<CommunicatorTransport>(std::move(comm), std::move(buckets));
}

}  // namespace chainermn
