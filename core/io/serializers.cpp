#include "core/io/serializers.h"

namespace chainer::serializers {

Serializer npz_deserializer(const std::string& file, const std::string& path, bool strict) {
  return Serializer::reader(chainer::load_npz(file), path, strict);
}

}  // namespace chainer::serializers
