/// @file
/// chainer::serializers, as Chainer's `chainer.serializers`: save_npz(file, obj) and
/// load_npz(file, obj, path, strict) for any object with `serialize(Serializer&)` (a link, an
/// optimizer, a trainer, an updater, an extension), under the keys Chainer writes ("l1/W",
/// "updater/model:main/l1/W"), so files go both ways between Chainer and this library.
///
///     chainer::serializers::save_npz("model.npz", *model);
///     chainer::serializers::load_npz("snapshot_iter_600", *model, "updater/model:main/");
#pragma once
#include <string>

#include "core/io/npz.h"
#include "core/io/serializer.h"

namespace chainer::serializers {

/// What save_npz and load_npz accept: an object with Chainer's serialization protocol.
template <class T>
concept Serializable = requires(T& obj, Serializer& s) { obj.serialize(s); };

/// A reader over the NPZ file FILE, starting at PATH, strict or not (Chainer's
/// `NpzDeserializer(numpy.load(file), path, strict)`). Throws chainer::Error naming the file
/// when it cannot be read.
Serializer npz_deserializer(const std::string& file, const std::string& path = "", bool strict = true);

/// Saves OBJ to FILE as NPZ (Chainer's `serializers.save_npz(file, obj)`; the file is not
/// compressed). The file is written whole or not at all.
template <Serializable T>
void save_npz(const std::string& file, T& obj) {
  Serializer s = Serializer::writer();
  obj.serialize(s);
  chainer::save_npz(file, s.entries());
}

/// Loads OBJ from FILE, written by save_npz here or in Chainer (Chainer's
/// `serializers.load_npz(file, obj, path='', strict=True)`). PATH is where OBJ's entries lie in
/// the file: "updater/model:main/" loads a model out of a trainer snapshot. STRICT: a key OBJ
/// expects but FILE lacks is an error naming the key and the file, also for a parameter not yet
/// initialized (Link::serialize); otherwise it is skipped and that value left as it is. What was loaded before an error stays loaded, as in Chainer
/// (training::load_snapshot is the all-or-nothing resume of a trainer).
template <Serializable T>
void load_npz(const std::string& file, T& obj, const std::string& path = "", bool strict = true) {
  Serializer s = npz_deserializer(file, path, strict);
  try {
    obj.serialize(s);
  } catch (const Error& e) {
    throw Error(str("load_npz: cannot load '", file, "': ", e.what()));
  }
}

}  // namespace chainer::serializers
