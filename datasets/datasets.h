/// @file
/// The datasets module in one include: datasets, MNIST and Fashion-MNIST, their download,
/// image files and their preprocessing, lists of examples of any shapes, the seq2seq examples'
/// text data, batching, converters and iterators.
#pragma once
#include "datasets/cifar.h"
#include "datasets/cmudict.h"
#include "datasets/concat_examples.h"
#include "datasets/converter.h"
#include "datasets/dataset.h"
#include "datasets/dataset_description.h"
#include "datasets/download.h"
#include "datasets/fashion_mnist.h"
#include "datasets/idx.h"
#include "datasets/image_dataset.h"
#include "datasets/image_io.h"
#include "datasets/iterators/iterator.h"
#include "datasets/list_dataset.h"
#include "datasets/mnist.h"
#include "datasets/parallel_text.h"
#include "datasets/iterators/multiprocess_iterator.h"
#include "datasets/preprocessed_image_dataset.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/sequence_pairs.h"
#include "datasets/split_sentence.h"
#include "datasets/sub_dataset.h"
#include "datasets/transform_dataset.h"
#include "datasets/tuple_dataset.h"
#include "datasets/vocabulary.h"
