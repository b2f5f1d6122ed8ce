#include "core/util/config.h"

#include <cstdlib>
#include <cctype>
#include <cstring>
#include <string>

#include "core/util/error.h"

namespace chainer::config {

namespace {
thread_local bool t_train = true;
}

bool train() { return t_train; }
void set_train(bool train) { t_train = train; }
TrainScope::TrainScope(bool train) : previous_(t_train) { t_train = train; }
TrainScope::~TrainScope() { t_train = previous_; }

namespace {
// Read at a thread's first use, not at its start: a bad value is then an error the caller can
// catch and print, where one thrown while a thread starts would end the process.
bool& autotune_flag() {
  thread_local bool flag = env_flag("CHAINER_AUTOTUNE", false);
  return flag;
}
bool& cudnn_deterministic_flag() {
  thread_local bool flag = env_flag("CHAINER_CUDNN_DETERMINISTIC", true);
  return flag;
}
}  // namespace

bool autotune() { return autotune_flag(); }
void set_autotune(bool autotune) { autotune_flag() = autotune; }
bool cudnn_deterministic() { return cudnn_deterministic_flag(); }
void set_cudnn_deterministic(bool deterministic) { cudnn_deterministic_flag() = deterministic; }

namespace {
thread_local Dtype t_dtype = Dtype::Float32;
constexpr Dtype kDtypes[] = {Dtype::Float32, Dtype::Float64, Dtype::Float16, Dtype::BFloat16, Dtype::Mixed16,
                             Dtype::MixedBf16};
}  // namespace

Dtype dtype() { return t_dtype; }
void set_dtype(Dtype dtype) { t_dtype = dtype; }
DtypeScope::DtypeScope(Dtype dtype) : previous_(t_dtype) { t_dtype = dtype; }
DtypeScope::~DtypeScope() { t_dtype = previous_; }

const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32: return "float32";
    case Dtype::Float64: return "float64";
    case Dtype::Float16: return "float16";
    case Dtype::BFloat16: return "bfloat16";
    case Dtype::Mixed16: return "mixed16";
    case Dtype::MixedBf16: return "mixed_bf16";
  }
  return "?";
}

Dtype parse_dtype(const std::string& name) {
  for (Dtype d : kDtypes)
    if (name == dtype_name(d)) return d;
  throw Error(str("dtype must be float32, float64, float16, bfloat16, mixed16 or mixed_bf16, not '", name, "'"));
}

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  std::string text(v);
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* yes : {"1", "true", "yes", "on"})
    if (text == yes) return true;
  for (const char* no : {"0", "false", "no", "off"})
    if (text == no) return false;
  throw Error(str(name, " expects a yes/no value (1, true, yes or on; 0, false, no or off), got '", v, "'"));
}

}  // namespace chainer::config
