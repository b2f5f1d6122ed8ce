/// @file
/// Datasets that travel as their description instead of their examples. A dataset of files
/// describes some of its examples as its kind's name followed by its fields (paths, labels,
/// settings; Dataset::describe), and another process builds a dataset of those examples from the
/// description with the builder registered for that kind, then reads the files itself. This is
/// how chainermn::scatter_dataset sends a share of image files: the paths are scattered and each
/// process decodes its own images, as in ChainerMN's ImageNet example, so the files must be
/// readable at the same paths on every host.
///
/// Built-in kinds: ImageDataset, LabeledImageDataset and PreprocessedImageDataset (whose
/// description holds its base's). A SubDataset describes the examples of its base it views.
#pragma once
#include <functional>
#include <string>

#include "core/io/byte_stream.h"
#include "datasets/dataset.h"

namespace chainer::datasets {

/// Makes a dataset from a description's fields (what follows its kind's name).
using DatasetBuilder = std::function<DatasetPtr(ByteReader& fields)>;

/// Makes build_dataset call BUILDER for descriptions of kind KIND (the name the dataset's describe
/// writes first, through start_description). Every process that builds such descriptions must
/// register the kind first. Throws chainer::Error when KIND is empty or already registered.
void register_dataset_kind(const std::string& kind, DatasetBuilder builder);

/// A writer holding the start of a description of kind KIND, for describe() to append its fields to.
ByteWriter start_description(const std::string& kind);

/// The dataset DESCRIPTION describes, made by its kind's builder. Throws chainer::Error naming the
/// kind when no builder is registered for it or when its fields do not match what the builder reads.
DatasetPtr build_dataset(const std::string& description);

}  // namespace chainer::datasets
