#include "training/extension.h"

#include "core/util/error.h"

namespace chainer::training {

namespace {
// The extension make_extension returns: the function and the options, nothing else.
class FunctionExtension : public Extension {
 public:
  FunctionExtension(std::function<void(Trainer&)> function, MakeExtensionOptions options)
      : function_(std::move(function)), options_(std::move(options)) {}
  void operator()(Trainer& trainer) override { function_(trainer); }
  std::string default_name() const override {
    return options_.default_name.empty() ? "<lambda>" : options_.default_name;
  }
  Trigger default_trigger() const override { return options_.trigger; }
  int priority() const override { return options_.priority; }
  void initialize(Trainer& trainer) override {
    if (options_.initializer) options_.initializer(trainer);
  }
  void finalize() override {
    if (options_.finalizer) options_.finalizer();
  }

 private:
  std::function<void(Trainer&)> function_;
  MakeExtensionOptions options_;
};
}  // namespace

std::shared_ptr<Extension> make_extension(std::function<void(Trainer&)> function, MakeExtensionOptions options) {
  if (!function) throw Error("make_extension: the function is empty");
  return std::make_shared<FunctionExtension>(std::move(function), std::move(options));
}

}  // namespace chainer::training
