#include "autograd/function_hooks/timer_hook.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "autograd/function_node.h"
#include "core/device/cuda.h"

namespace chainer::function_hooks {

namespace {

// Waits for the GPUs that hold any of the arrays, so the host clock brackets their work.
void synchronize_devices(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  std::vector<int> devices;
  for (const auto* list : {&a, &b})
    for (const Tensor& t : *list)
      if (t.defined() && t.device().is_cuda() &&
          std::find(devices.begin(), devices.end(), t.device().index) == devices.end())
        devices.push_back(t.device().index);
  for (int d : devices) cuda::get_device(d).synchronize();
}

// Chainer's _choose_unit: the largest unit in which SECONDS is at least 1, else ns.
std::pair<double, std::string> choose_unit(double seconds) {
  double factor = 1;
  for (const char* unit : {"sec", "ms", "us"}) {
    if (seconds * factor >= 1) return {factor, unit};
    factor *= 1000.0;
  }
  return {factor, "ns"};
}
}  // namespace

double TimerHook::clock() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void TimerHook::start(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  synchronize_devices(a, b);
  running_.push_back(clock());
}

void TimerHook::stop(const std::string& function, const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  synchronize_devices(a, b);
  // A postprocess without its preprocess (a hook registered in between): nothing to time.
  if (running_.empty()) return;
  const double elapsed = clock() - running_.back();
  running_.pop_back();
  call_history_.emplace_back(function, elapsed);
  if (running_.empty()) total_time_ += elapsed;
}

void TimerHook::forward_preprocess(const std::string& /*function*/, const std::vector<Tensor>& in_data) {
  start(in_data, {});
}
void TimerHook::forward_postprocess(const std::string& function, const std::vector<Tensor>& in_data) {
  stop(function, in_data, {});
}
void TimerHook::backward_preprocess(const FunctionNode& /*function*/, const std::vector<Tensor>& in_data,
                                    const std::vector<Tensor>& out_grad) {
  start(in_data, out_grad);
}
void TimerHook::backward_postprocess(const FunctionNode& function, const std::vector<Tensor>& in_data,
                                     const std::vector<Tensor>& out_grad) {
  stop(function.name(), in_data, out_grad);
}

std::vector<std::pair<std::string, TimerHook::Record>> TimerHook::summary() const {
  std::vector<std::pair<std::string, Record>> out;
  std::map<std::string, size_t> at;
  for (const auto& [function, elapsed] : call_history_) {
    auto [it, fresh] = at.try_emplace(function, out.size());
    if (fresh) out.emplace_back(function, Record{});
    Record& r = out[it->second].second;
    r.elapsed_time += elapsed;
    ++r.occurrence;
  }
  return out;
}

void TimerHook::print_report(const std::string& unit, std::ostream& out) const {
  const std::map<std::string, double> table = {{"sec", 1}, {"ms", 1e3}, {"us", 1e6}, {"ns", 1e9}};
  const bool auto_foreach = unit == "auto_foreach";
  if (unit != "auto" && !auto_foreach && !table.count(unit))
    throw Error(
        str("TimerHook.print_report: unknown unit '", unit, "'; expected sec, ms, us, ns, auto or auto_foreach"));
  const auto records = summary();
  std::pair<double, std::string> scale = {1, unit};
  if (unit == "auto") {
    double max_time = 0;
    for (const auto& [function, r] : records) max_time = std::max(max_time, r.elapsed_time);
    scale = choose_unit(max_time);
  } else if (!auto_foreach) {
    scale = {table.at(unit), unit};
  }
  std::vector<std::vector<std::string>> rows = {{"FunctionName", "ElapsedTime", "Occurrence"}};
  for (const auto& [function, r] : records) {
    if (auto_foreach) scale = choose_unit(r.elapsed_time);
    char elapsed[64];
    std::snprintf(elapsed, sizeof elapsed, "%3.2f%s", r.elapsed_time * scale.first, scale.second.c_str());
    rows.push_back({function, elapsed, std::to_string(r.occurrence)});
  }
  size_t widths[3] = {0, 0, 0};
  for (const auto& row : rows)
    for (size_t c = 0; c < 3; ++c) widths[c] = std::max(widths[c], row[c].size());
  for (const auto& row : rows) {
    for (size_t c = 0; c < 3; ++c) {
      if (c) out << "  ";
      out << std::string(widths[c] - row[c].size(), ' ') << row[c];
    }
    out << '\n';
  }
  out.flush();
}

}  // namespace chainer::function_hooks
