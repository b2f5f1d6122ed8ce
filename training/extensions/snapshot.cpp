#include "training/extensions/snapshot.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>

#include "core/io/npz.h"
#include "core/io/serializers.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

namespace {

// The trainer's attributes a filename can name, as Python's str.format(trainer) reads them.
struct Fields {
  int64_t iteration = 0, epoch = 0;
  double epoch_detail = 0, elapsed_time = 0;
};

const char* const known_fields = "{.updater.iteration}, {.updater.epoch}, {.updater.epoch_detail}, {.elapsed_time}";

// Python's format-spec mini-language, `[[fill]align][sign][#][0][width][.precision][type]`,
// for an integer or a float. WHAT names the extension and the field in errors.
class Spec {
 public:
  Spec(const std::string& spec, const std::string& what) : what_(what) {
    size_t i = 0;
    auto is_align = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
    if (spec.size() >= 2 && is_align(spec[1])) fill_ = spec[0], align_ = spec[1], i = 2;
    else if (!spec.empty() && is_align(spec[0])) align_ = spec[0], i = 1;
    if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign_ = spec[i++];
    if (i < spec.size() && spec[i] == '#') alternate_ = true, ++i;
    if (i < spec.size() && spec[i] == '0') {
      if (!align_) fill_ = '0', align_ = '=';
      ++i;
    }
    while (i < spec.size() && std::isdigit((unsigned char)spec[i])) width_ = width_ * 10 + (spec[i++] - '0');
    if (i < spec.size() && spec[i] == '.') {
      ++i;
      if (i == spec.size() || !std::isdigit((unsigned char)spec[i])) fail(spec, "a precision needs digits");
      precision_ = 0;
      while (i < spec.size() && std::isdigit((unsigned char)spec[i])) *precision_ = *precision_ * 10 + (spec[i++] - '0');
    }
    if (i < spec.size()) type_ = spec[i++];
    if (i != spec.size()) fail(spec, "it is not [[fill]align][sign][#][0][width][.precision][type]");
  }

  std::string format(int64_t v) const {
    if (std::string("eEfFgG%").find(type_) != std::string::npos && type_) return format(double(v));
    int base = 10;
    const char* prefix = "";
    switch (type_) {
      case 0: case 'd': case 'n': break;
      case 'x': case 'X': base = 16, prefix = type_ == 'x' ? "0x" : "0X"; break;
      case 'o': base = 8, prefix = "0o"; break;
      case 'b': base = 2, prefix = "0b"; break;
      default: fail_type("an integer");
    }
    if (precision_) throw Error(str(what_, ": a precision is not allowed for an integer"));
    char buf[72];
    const uint64_t magnitude = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    std::string digits(buf, std::to_chars(buf, buf + sizeof buf, magnitude, base).ptr);
    if (type_ == 'X') for (char& c : digits) c = char(std::toupper((unsigned char)c));
    return pad(sign(v < 0) + (alternate_ ? prefix : ""), digits);
  }

  std::string format(double v) const {
    char conversion = type_;
    double magnitude = std::fabs(v);
    std::string suffix;
    switch (type_) {
      case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': break;
      case '%': conversion = 'f', magnitude *= 100, suffix = "%"; break;
      case 0: conversion = 'g'; break;
      default: fail_type("a float");
    }
    std::string body;
    if (!type_ && !precision_) {
      // Python's str(float): the shortest text that reads back, with ".0" on whole numbers.
      char buf[64];
      body.assign(buf, std::to_chars(buf, buf + sizeof buf, magnitude).ptr);
      if (std::isfinite(magnitude) && body.find_first_of(".e") == std::string::npos) body += ".0";
    } else {
      const int precision = precision_ ? *precision_ : 6;
      const std::string fmt = str('%', alternate_ ? "#" : "", ".*", conversion);
      char buf[512];
      std::snprintf(buf, sizeof buf, fmt.c_str(), precision, magnitude);
      body = buf;
      if (!type_ && std::isfinite(magnitude) && body.find_first_of(".e") == std::string::npos) body += ".0";
    }
    return pad(sign(std::signbit(v) && !std::isnan(v)), body + suffix);
  }

 private:
  [[noreturn]] void fail(const std::string& spec, const std::string& why) const {
    throw Error(str(what_, ": the format spec '", spec, "' is not valid: ", why));
  }
  [[noreturn]] void fail_type(const char* kind) const {
    throw Error(str(what_, ": the format code '", type_, "' is not one for ", kind));
  }
  std::string sign(bool negative) const {
    if (negative) return "-";
    return sign_ == '+' ? "+" : sign_ == ' ' ? " " : "";
  }
  // Pads HEAD (sign, base prefix) + BODY to the width; '=' puts the fill between them.
  std::string pad(const std::string& head, const std::string& body) const {
    const size_t size = head.size() + body.size();
    if (size_t(width_) <= size) return head + body;
    const size_t n = size_t(width_) - size;
    switch (align_ ? align_ : '>') {
      case '<': return head + body + std::string(n, fill_);
      case '^': return std::string(n / 2, fill_) + head + body + std::string(n - n / 2, fill_);
      case '=': return head + std::string(n, fill_) + body;
      default: return std::string(n, fill_) + head + body;
    }
  }
  std::string what_;
  char fill_ = ' ', align_ = 0, sign_ = '-', type_ = 0;
  bool alternate_ = false;
  int width_ = 0;
  std::optional<int> precision_;
};

// PATTERN with each replacement field filled from FIELDS, as Python's PATTERN.format(trainer)
// for the fields listed in known_fields ("{0.updater.iteration}" is the same as
// "{.updater.iteration}"); "{{" and "}}" are literal braces. NAME names the extension in errors.
std::string format_filename(const std::string& pattern, const Fields& fields, const std::string& name) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
        out += '}', ++i;
        continue;
      }
      throw Error(str(name, ": the filename '", pattern, "' has a single '}'; write '}}' for a brace"));
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{', ++i;
      continue;
    }
    const size_t close = pattern.find('}', i);
    if (close == std::string::npos)
      throw Error(str(name, ": the filename '", pattern, "' has a '{' without its '}'; write '{{' for a brace"));
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const size_t colon = field.find(':');
    std::string key = field.substr(0, colon);
    if (key.starts_with("0.")) key.erase(0, 1);
    const std::string what = str(name, ": the field '{", field, "}' in the filename '", pattern, "'");
    const Spec spec(colon == std::string::npos ? "" : field.substr(colon + 1), what);
    if (key == ".updater.iteration") out += spec.format(fields.iteration);
    else if (key == ".updater.epoch") out += spec.format(fields.epoch);
    else if (key == ".updater.epoch_detail") out += spec.format(fields.epoch_detail);
    else if (key == ".elapsed_time") out += spec.format(fields.elapsed_time);
    else
      throw Error(str(name, ": the filename '", pattern, "' names the field '{", key, "}', which is not one of ",
                      known_fields));
    i = close;
  }
  return out;
}

}  // namespace

Snapshot::Snapshot(std::string filename, Link* target) : filename_(std::move(filename)), target_(target) {
  format_filename(filename_, Fields{}, default_name());  // a mistake in the filename shows now, not at the first save
}

std::string Snapshot::path_for(const Trainer& trainer) const {
  const Updater& u = trainer.updater();
  const Fields fields{u.iteration(), u.epoch(), u.epoch_detail(), trainer.elapsed_time()};
  return (std::filesystem::path(trainer.out()) / format_filename(filename_, fields, default_name())).string();
}

void Snapshot::operator()(Trainer& trainer) {
  Serializer s = Serializer::writer();
  if (target_) target_->serialize(s);
  else trainer.serialize(s);
  save_npz(path_for(trainer), s.entries());
}

void Snapshot::load(const std::string& path, Trainer& trainer) const {
  if (!target_) return load_snapshot(path, trainer);
  serializers::load_npz(path, *target_);  // strict; errors name the file and the entry
}

void Snapshot::initialize(Trainer& trainer) {
  // Before looking for the newest snapshot: a save killed before its rename left only its
  // temporary file, which is not a snapshot and would stay for good.
  const std::string prefix = filename_.substr(0, filename_.find('{'));
  const size_t close = filename_.rfind('}');
  const std::string suffix = close == std::string::npos ? filename_ : filename_.substr(close + 1);
  const bool fixed = filename_.find('{') == std::string::npos;  // a name without fields names one file
  remove_stale_temporaries(trainer.out(), [&](const std::string& name) {
    if (fixed) return name == filename_;
    return name.size() >= prefix.size() + suffix.size() && name.starts_with(prefix) && name.ends_with(suffix);
  });
  if (!autoload_) return;
  if (const std::string latest = find_latest_snapshot(filename_, trainer.out()); !latest.empty())
    load((std::filesystem::path(trainer.out()) / latest).string(), trainer);
}

std::vector<std::string> remove_stale_temporaries(const std::string& directory,
                                                  const std::function<bool(const std::string&)>& matches) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    // NAME.tmp.PID.N, the digits whole: nothing else is a temporary file of ours.
    const size_t tmp = name.rfind(".tmp.");
    if (tmp == std::string::npos || !matches(name.substr(0, tmp))) continue;
    const std::string tail = name.substr(tmp + 5);
    const size_t dot = tail.find('.');
    auto digits = [](const std::string& t) {
      return !t.empty() && t.size() <= 18 && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot == std::string::npos || !digits(tail.substr(0, dot)) || !digits(tail.substr(dot + 1))) continue;
    // A writer still running on this machine may be about to rename it (another process saving
    // into the same directory, or this one): only a dead process's file is stale.
    const long pid = std::stol(tail.substr(0, dot));
    if (pid > 0 && pid <= std::numeric_limits<pid_t>::max() && (::kill(pid_t(pid), 0) == 0 || errno == EPERM)) continue;
    if (!entry.is_regular_file(ec)) continue;
    if (std::filesystem::remove(entry.path(), ec)) removed.push_back(name);
  }
  return removed;
}

std::string find_latest_snapshot(const std::string& format, const std::string& directory) {
  const std::string prefix = format.substr(0, format.find('{'));
  const size_t close = format.rfind('}');
  const std::string suffix = close == std::string::npos ? format : format.substr(close + 1);
  // file_time_type's epoch is not 1970 (libstdc++: 2174), so the first match starts the search.
  std::pair<std::filesystem::file_time_type, std::string> latest{std::filesystem::file_time_type::min(), ""};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.size() < prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    latest = std::max(latest, std::make_pair(entry.last_write_time(ec), name));
  }
  return latest.second;
}

std::shared_ptr<Snapshot> snapshot(std::string filename) { return std::make_shared<Snapshot>(std::move(filename)); }

std::shared_ptr<Snapshot> snapshot_object(Link& target, std::string filename) {
  return std::make_shared<Snapshot>(std::move(filename), &target);
}

}  // namespace chainer::training::extensions
