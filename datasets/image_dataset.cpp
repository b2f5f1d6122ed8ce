#include "datasets/image_dataset.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "core/io/npz.h"
#include "datasets/dataset_description.h"
#include "datasets/image_io.h"

namespace chainer::datasets {

namespace {

// The lines of the list file, as Python iterates a text file (the last may lack its newline).
// Only a regular file is read: a FIFO or /dev/zero named as the list would never end.
std::vector<std::string> read_lines(const std::string& what, const std::string& list_path) {
  const std::string text = InputFile(what, list_path, "the list file ").read_all();
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// Why PATH joined to a root names a file outside that root, or null when it stays inside: it is
// absolute, or its ".." components climb above the root. Judged on the text alone.
const char* leaves_root(std::string_view path) {
  if (!path.empty() && path[0] == '/') return "is absolute";
  int64_t depth = 0;
  for (size_t at = 0; at <= path.size();) {
    const size_t end = std::min(path.find('/', at), path.size());
    const std::string_view part = path.substr(at, end - at);
    if (part == "..") {
      if (--depth < 0) return "climbs above the root with '..'";
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
    at = end + 1;
  }
  return nullptr;
}

// The error for PATH, which leaves ROOT for reason WHY; WHERE starts the message and names the
// path's origin ("LabeledImageDataset: 'train.txt' line 3: ").
Error outside_root(const std::string& where, const std::string& path, const char* why, const std::string& root) {
  return Error(str(where, "the path '", path, "' ", why, ", so it names a file outside the root '", root,
                   "'; paths must stay under the root unless allow_outside_root is set (train_imagenet: ",
                   "--allow-outside-root)"));
}

// The integers DTYPE holds exactly: its range, or for a floating-point type the integers its
// significand spans.
std::pair<int64_t, int64_t> exact_integers(DType dtype) {
  switch (dtype) {
    case DType::UInt8: return {0, 255};
    case DType::Int32: return {INT32_MIN, INT32_MAX};
    case DType::Int64: return {INT64_MIN, INT64_MAX};
    case DType::Float16: return {-(int64_t(1) << 11), int64_t(1) << 11};
    case DType::BFloat16: return {-(int64_t(1) << 8), int64_t(1) << 8};
    case DType::Float32: return {-(int64_t(1) << 24), int64_t(1) << 24};
    case DType::Float64: return {-(int64_t(1) << 53), int64_t(1) << 53};
  }
  return {0, -1};
}

bool label_fits(int64_t label, DType dtype) {
  const auto [low, high] = exact_integers(dtype);
  return label >= low && label <= high;
}

// The error for a label, written as TEXT, that DTYPE does not hold; WHERE starts the message.
Error label_misfit(const std::string& where, const std::string& text, DType dtype) {
  const auto [low, high] = exact_integers(dtype);
  const bool integer = dtype == DType::Int32 || dtype == DType::Int64 || dtype == DType::UInt8;
  return Error(str(where, "the label ", text, " does not fit the labels' dtype ", dtype_name(dtype), " (", low, " to ",
                   high, integer ? ")" : ", as exact integers)"));
}

// Python's str.split(): runs of whitespace separate, leading and trailing ones give no field.
std::vector<std::string> split_whitespace(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream words(line);
  for (std::string word; words >> word;) fields.push_back(word);
  return fields;
}

// Python's str.strip().
std::string strip(const std::string& s) {
  const char* space = " \t\n\r\f\v";
  const size_t first = s.find_first_not_of(space);
  return first == std::string::npos ? std::string() : s.substr(first, s.find_last_not_of(space) - first + 1);
}

// os.path.join(root, path): an absolute path stands alone.
std::string join(const std::string& root, const std::string& path) {
  return (std::filesystem::path(root) / path).string();
}

void write_dtype(ByteWriter& w, DType dtype) {
  const uint8_t code = uint8_t(dtype);
  w.write_raw(&code, 1);
}

void write_flag(ByteWriter& w, bool flag) {
  const uint8_t code = flag ? 1 : 0;
  w.write_raw(&code, 1);
}

bool read_flag(ByteReader& r) {
  uint8_t code = 0;
  r.read_raw(&code, 1);
  if (code > 1) throw Error(str("a flag of ", int(code), "; expected 0 or 1"));
  return code == 1;
}

DType read_dtype(ByteReader& r) {
  uint8_t code = 0;
  r.read_raw(&code, 1);
  if (code >= kDTypeCount) throw Error(str("unknown dtype code ", int(code)));
  return DType(code);
}

}  // namespace

ImageDataset::ImageDataset(std::vector<std::string> paths, std::string root, DType dtype, bool allow_outside_root)
    : paths_(std::move(paths)), root_(std::move(root)), dtype_(dtype), allow_outside_root_(allow_outside_root) {
  if (allow_outside_root_) return;
  for (size_t i = 0; i < paths_.size(); ++i)
    if (const char* why = leaves_root(paths_[i]))
      throw outside_root(str("ImageDataset: path ", i, ": "), paths_[i], why, root_);
}

ImageDataset::ImageDataset(const std::string& list_path, std::string root, DType dtype, bool allow_outside_root)
    : root_(std::move(root)), dtype_(dtype), allow_outside_root_(allow_outside_root) {
  const std::vector<std::string> lines = read_lines("ImageDataset", list_path);
  for (size_t n = 0; n < lines.size(); ++n) {
    paths_.push_back(strip(lines[n]));
    if (const char* why = allow_outside_root_ ? nullptr : leaves_root(paths_.back()))
      throw outside_root(str("ImageDataset: '", list_path, "' line ", n + 1, ": "), paths_.back(), why, root_);
  }
}

Example ImageDataset::get_example(size_t i) const {
  check_index(i);
  return {read_image(join(root_, paths_[i]), dtype_)};
}

std::optional<std::string> ImageDataset::describe(const std::vector<size_t>& indices) const {
  ByteWriter w = start_description("ImageDataset");
  w.write_string(root_);
  write_dtype(w, dtype_);
  write_flag(w, allow_outside_root_);
  w.write_size(indices.size());
  for (size_t i : indices) {
    check_index(i);
    w.write_string(paths_[i]);
  }
  return w.take();
}

DatasetPtr ImageDataset::from_description(ByteReader& r) {
  std::string root = r.read_string();
  const DType dtype = read_dtype(r);
  const bool allow_outside_root = read_flag(r);
  std::vector<std::string> paths(size_t(r.read_size(sizeof(uint64_t))));
  for (std::string& p : paths) p = r.read_string();
  return std::make_shared<ImageDataset>(std::move(paths), std::move(root), dtype, allow_outside_root);
}

LabeledImageDataset::LabeledImageDataset(std::vector<Pair> pairs, std::string root, DType dtype, DType label_dtype,
                                         bool allow_outside_root)
    : pairs_(std::move(pairs)), root_(std::move(root)), dtype_(dtype), label_dtype_(label_dtype),
      allow_outside_root_(allow_outside_root) {
  for (size_t i = 0; i < pairs_.size(); ++i) {
    const auto& [path, label] = pairs_[i];
    auto where = [&] { return str("LabeledImageDataset: pair ", i, " ('", path, "'): "); };
    if (!label_fits(label, label_dtype_)) throw label_misfit(where(), std::to_string(label), label_dtype_);
    if (const char* why = allow_outside_root_ ? nullptr : leaves_root(path))
      throw outside_root(where(), path, why, root_);
  }
}

LabeledImageDataset::LabeledImageDataset(const std::string& list_path, std::string root, DType dtype,
                                         DType label_dtype, bool allow_outside_root)
    : root_(std::move(root)), dtype_(dtype), label_dtype_(label_dtype), allow_outside_root_(allow_outside_root) {
  const std::vector<std::string> lines = read_lines("LabeledImageDataset", list_path);
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::vector<std::string> fields = split_whitespace(lines[n]);
    const std::string where = str("LabeledImageDataset: '", list_path, "' line ", n + 1, ": ");
    if (fields.size() != 2)
      throw Error(str(where, "expected \"path label\" (two fields separated by whitespace) but found ",
                      fields.size(), " field", fields.size() == 1 ? "" : "s", " in '", lines[n], "'"));
    // int(): an optional sign, then decimal digits. A label past int64 is reported as written.
    const std::string& text = fields[1];
    int64_t label = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), label);
    if ((ec != std::errc() && ec != std::errc::result_out_of_range) || end != text.data() + text.size() ||
        (begin != text.data() && *begin == '-'))
      throw Error(str(where, "the label '", text, "' is not an integer"));
    if (ec == std::errc::result_out_of_range || !label_fits(label, label_dtype_))
      throw label_misfit(where, text, label_dtype_);
    if (const char* why = allow_outside_root_ ? nullptr : leaves_root(fields[0]))
      throw outside_root(where, fields[0], why, root_);
    pairs_.emplace_back(fields[0], label);
  }
}

Example LabeledImageDataset::get_example(size_t i) const {
  check_index(i);
  const auto& [path, label] = pairs_[i];
  // Built from the int64 itself: through a double, labels past 2^53 would round.
  const Tensor exact = Tensor::from_vector(std::vector<int64_t>{label}, {});
  return {read_image(join(root_, path), dtype_), label_dtype_ == DType::Int64 ? exact : exact.astype(label_dtype_)};
}

std::optional<std::string> LabeledImageDataset::describe(const std::vector<size_t>& indices) const {
  ByteWriter w = start_description("LabeledImageDataset");
  w.write_string(root_);
  write_dtype(w, dtype_);
  write_dtype(w, label_dtype_);
  write_flag(w, allow_outside_root_);
  w.write_size(indices.size());
  for (size_t i : indices) {
    check_index(i);
    w.write_string(pairs_[i].first);
    w.write_raw(&pairs_[i].second, sizeof(int64_t));
  }
  return w.take();
}

DatasetPtr LabeledImageDataset::from_description(ByteReader& r) {
  std::string root = r.read_string();
  const DType dtype = read_dtype(r), label_dtype = read_dtype(r);
  const bool allow_outside_root = read_flag(r);
  std::vector<Pair> pairs(size_t(r.read_size(2 * sizeof(uint64_t))));
  for (Pair& p : pairs) {
    p.first = r.read_string();
    r.read_raw(&p.second, sizeof(int64_t));
  }
  return std::make_shared<LabeledImageDataset>(std::move(pairs), std::move(root), dtype, label_dtype,
                                               allow_outside_root);
}

}  // namespace chainer::datasets
