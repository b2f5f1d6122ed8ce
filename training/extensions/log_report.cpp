#include "training/extensions/log_report.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "training/extensions/snapshot.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

LogReport::LogReport(std::vector<std::string> keys, Trigger trigger, std::string log_name)
    : keys_(std::move(keys)), trigger_(std::move(trigger)), log_name_(std::move(log_name)) {}

void LogReport::operator()(Trainer& trainer) {
  Observation selected;
  for (const auto& [k, v] : trainer.observation())
    if (keys_.empty() || std::find(keys_.begin(), keys_.end(), k) != keys_.end()) selected[k] = v;
  summary_.add(selected);
  if (!trigger_(trainer)) return;
  Observation entry = summary_.compute_mean();
  entry["epoch"] = double(trainer.updater().epoch());
  entry["iteration"] = double(trainer.updater().iteration());
  entry["elapsed_time"] = trainer.elapsed_time();
  log_.push_back(entry);
  summary_ = DictSummary();
  if (log_name_.empty()) return;
  write_atomically((std::filesystem::path(trainer.out()) / log_name_).string(), to_json(log_));
}

void LogReport::initialize(Trainer& trainer) {
  if (log_name_.empty()) return;
  // A run killed while writing the log left its temporary file; so did an older version of this
  // extension, as `<log_name>.tmp`.
  const std::filesystem::path path = std::filesystem::path(trainer.out()) / log_name_;
  const std::string name = path.filename().string();
  remove_stale_temporaries(path.parent_path().string(), [&](const std::string& n) { return n == name; });
  std::error_code ec;
  if (std::filesystem::is_regular_file(path.string() + ".tmp", ec)) std::filesystem::remove(path.string() + ".tmp", ec);
}

void LogReport::write_atomically(const std::string& path, const std::string& text) {
  // Written under a name of this process and call, then renamed, so PATH only ever holds a
  // whole log; every failure removes the temporary file, which would stay empty or cut short.
  static std::atomic<uint64_t> writes{0};
  const std::string tmp = str(path, ".tmp.", ::getpid(), ".", writes.fetch_add(1));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(str("LogReport: cannot create '", tmp, "' to write the log '", path, "': ", std::strerror(errno)));
  std::string failure;
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fflush(f) != 0)
    failure = str("LogReport: cannot write the log to '", tmp, "': ", std::strerror(errno));
  if (std::fclose(f) != 0 && failure.empty())
    failure = str("LogReport: cannot write the log to '", tmp, "': ", std::strerror(errno));
  if (failure.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
    failure = str("LogReport: cannot rename '", tmp, "' to '", path, "': ", std::strerror(errno));
  if (!failure.empty()) {
    std::remove(tmp.c_str());
    throw Error(failure);
  }
}

namespace {
std::string number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";  // as Python's json
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(int64_t(v));
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
  return std::string(buf, end);
}
}  // namespace

std::string LogReport::to_json(const std::vector<Observation>& log) {
  std::string out = "[";
  for (size_t i = 0; i < log.size(); ++i) {
    out += i ? ",\n    {" : "\n    {";
    bool first = true;
    for (const auto& [k, v] : log[i]) {
      out += first ? "\n        \"" : ",\n        \"";
      out += k + "\": " + number(v);
      first = false;
    }
    out += "\n    }";
  }
  return out + (log.empty() ? "]" : "\n]");
}

std::vector<Observation> LogReport::from_json(const std::string& text) {
  // Reads back what to_json writes: a list of flat objects of numbers. Anything else (a snapshot
  // damaged or written by something else) is an error saying where, not a bare "stod".
  const auto corrupt = [](size_t entry, const std::string& what) {
    return Error(str("LogReport: the saved log is corrupt: entry ", entry, ": ", what));
  };
  std::vector<Observation> log;
  size_t at = 0;
  while ((at = text.find('{', at)) != std::string::npos) {
    const size_t end = text.find('}', at);
    if (end == std::string::npos) throw corrupt(log.size(), "no closing '}'");
    Observation entry;
    for (size_t q = text.find('"', at); q != std::string::npos && q < end; q = text.find('"', q)) {
      const size_t q2 = text.find('"', q + 1);
      const size_t colon = q2 == std::string::npos ? q2 : text.find(':', q2);
      if (q2 == std::string::npos || q2 > end || colon == std::string::npos || colon > end)
        throw corrupt(log.size(), str("a key at offset ", q, " has no closing quote or no ':'"));
      const std::string key = text.substr(q + 1, q2 - q - 1);
      size_t v0 = colon + 1;
      while (v0 < end && text[v0] == ' ') ++v0;
      const size_t v1 = std::min(text.find_first_of(",\n}", v0), end);
      const std::string val = text.substr(v0, v1 - v0);
      double number = 0;
      if (val == "NaN") number = NAN;
      else if (val == "Infinity") number = INFINITY;
      else if (val == "-Infinity") number = -INFINITY;
      else if (auto [p, ec] = std::from_chars(val.data(), val.data() + val.size(), number);
               val.empty() || ec != std::errc() || p != val.data() + val.size())
        throw corrupt(log.size(), str("'", key, "' holds '", val, "', not a number"));
      entry[key] = number;
      q = v1;
    }
    log.push_back(entry);
    at = end + 1;
  }
  return log;
}

void LogReport::serialize(Serializer& s) {
  Serializer t = s["_trigger"];
  trigger_.serialize(t);
  Serializer sum = s["_summary"];
  summary_.serialize(sum);
  std::string text = s.is_reader() ? std::string() : to_json(log_);
  s.value("_log", text);
  if (s.is_reader()) log_ = from_json(text);
}

}  // namespace chainer::training::extensions
