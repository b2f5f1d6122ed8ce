#include "datasets/image_dataset.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "datasets/dataset_description.h"
#include "datasets/image_io.h"

namespace chainer::datasets {

namespace {

std::vector<std::string> read_lines(const std::string& what, const std::string& list_path) {
  std::ifstream in(list_path);
  if (!in) throw Error(str(what, ": cannot open the list file '", list_path, "': ", std::strerror(errno)));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (in.bad()) throw Error(str(what, ": cannot read the list file '", list_path, "': ", std::strerror(errno)));
  return lines;
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

DType read_dtype(ByteReader& r) {
  uint8_t code = 0;
  r.read_raw(&code, 1);
  if (code >= kDTypeCount) throw Error(str("unknown dtype code ", int(code)));
  return DType(code);
}

}  // namespace

ImageDataset::ImageDataset(std::vector<std::string> paths, std::string root, DType dtype)
    : paths_(std::move(paths)), root_(std::move(root)), dtype_(dtype) {}

ImageDataset::ImageDataset(const std::string& list_path, std::string root, DType dtype)
    : root_(std::move(root)), dtype_(dtype) {
  for (const std::string& line : read_lines("ImageDataset", list_path)) paths_.push_back(strip(line));
}

Example ImageDataset::get_example(size_t i) const {
  check_index(i);
  return {read_image(join(root_, paths_[i]), dtype_)};
}

std::optional<std::string> ImageDataset::describe(const std::vector<size_t>& indices) const {
  ByteWriter w = start_description("ImageDataset");
  w.write_string(root_);
  write_dtype(w, dtype_);
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
  std::vector<std::string> paths(size_t(r.read_size(sizeof(uint64_t))));
  for (std::string& p : paths) p = r.read_string();
  return std::make_shared<ImageDataset>(std::move(paths), std::move(root), dtype);
}

LabeledImageDataset::LabeledImageDataset(std::vector<Pair> pairs, std::string root, DType dtype, DType label_dtype)
    : pairs_(std::move(pairs)), root_(std::move(root)), dtype_(dtype), label_dtype_(label_dtype) {}

LabeledImageDataset::LabeledImageDataset(const std::string& list_path, std::string root, DType dtype,
                                         DType label_dtype)
    : root_(std::move(root)), dtype_(dtype), label_dtype_(label_dtype) {
  const std::vector<std::string> lines = read_lines("LabeledImageDataset", list_path);
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::vector<std::string> fields = split_whitespace(lines[n]);
    const std::string where = str("LabeledImageDataset: '", list_path, "' line ", n + 1, ": ");
    if (fields.size() != 2)
      throw Error(str(where, "expected \"path label\" (two fields separated by whitespace) but found ",
                      fields.size(), " field", fields.size() == 1 ? "" : "s", " in '", lines[n], "'"));
    // int(): an optional sign, then decimal digits.
    const std::string& text = fields[1];
    int64_t label = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), label);
    if (ec != std::errc() || end != text.data() + text.size() || (begin != text.data() && *begin == '-'))
      throw Error(str(where, "the label '", text, "' is not an integer"));
    pairs_.emplace_back(fields[0], label);
  }
}

Example LabeledImageDataset::get_example(size_t i) const {
  check_index(i);
  const auto& [path, label] = pairs_[i];
  return {read_image(join(root_, path), dtype_), Tensor::full({}, double(label), label_dtype_)};
}

std::optional<std::string> LabeledImageDataset::describe(const std::vector<size_t>& indices) const {
  ByteWriter w = start_description("LabeledImageDataset");
  w.write_string(root_);
  write_dtype(w, dtype_);
  write_dtype(w, label_dtype_);
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
  std::vector<Pair> pairs(size_t(r.read_size(2 * sizeof(uint64_t))));
  for (Pair& p : pairs) {
    p.first = r.read_string();
    r.read_raw(&p.second, sizeof(int64_t));
  }
  return std::make_shared<LabeledImageDataset>(std::move(pairs), std::move(root), dtype, label_dtype);
}

}  // namespace chainer::datasets
