#include "datasets/dataset_description.h"

#include <map>
#include <mutex>

#include "datasets/image_dataset.h"
#include "datasets/preprocessed_image_dataset.h"

namespace chainer::datasets {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, DatasetBuilder> builders{
      {"ImageDataset", &ImageDataset::from_description},
      {"LabeledImageDataset", &LabeledImageDataset::from_description},
      {"PreprocessedImageDataset", &PreprocessedImageDataset::from_description},
  };
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_dataset_kind(const std::string& kind, DatasetBuilder builder) {
  if (kind.empty()) throw Error("register_dataset_kind: the kind's name is empty");
  if (!builder) throw Error(str("register_dataset_kind: the builder of kind '", kind, "' is empty"));
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (!r.builders.emplace(kind, std::move(builder)).second)
    throw Error(str("register_dataset_kind: kind '", kind, "' is already registered"));
}

ByteWriter start_description(const std::string& kind) {
  ByteWriter w;
  w.write_string(kind);
  return w;
}

DatasetPtr build_dataset(const std::string& description) {
  ByteReader r(description);
  const std::string kind = r.read_string();
  DatasetBuilder builder;
  {
    Registry& reg = registry();
    std::lock_guard lock(reg.mutex);
    const auto it = reg.builders.find(kind);
    if (it == reg.builders.end())
      throw Error(str("build_dataset: no builder is registered for datasets of kind '", kind,
                      "' (register_dataset_kind, on every process)"));
    builder = it->second;
  }
  DatasetPtr dataset;
  try {
    dataset = builder(r);
  } catch (const Error& e) {
    throw Error(str("build_dataset: a description of kind '", kind, "': ", e.what()));
  }
  if (r.remaining() != 0)
    throw Error(str("build_dataset: a description of kind '", kind, "' has ", r.remaining(),
                    " bytes its builder did not read"));
  if (!dataset) throw Error(str("build_dataset: the builder of kind '", kind, "' returned no dataset"));
  return dataset;
}

}  // namespace chainer::datasets
