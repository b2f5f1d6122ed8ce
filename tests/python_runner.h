// Running Python from a test, for results computed by the Python libraries the C++ code
// reproduces (NLTK's BLEU, the seq2seq example's tokenization). Header-only.
#pragma once
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace chainer::testing {

// The first of $PYTHON3 (meson's python3), /usr/bin/python3 (Debian's, where python3-nltk
// installs) and python3 on PATH that imports every module of MODULES ("nltk"); empty if none.
inline std::string find_python(const std::string& modules) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("PYTHON3"); env && *env) candidates.push_back(env);
  candidates.push_back("/usr/bin/python3");
  candidates.push_back("python3");
  for (const std::string& python : candidates) {
    const std::string check = "'" + python + "' -c 'import " + modules + "' >/dev/null 2>&1";
    if (std::system(check.c_str()) == 0) return python;
  }
  return {};
}

// Runs SCRIPT (a file) with PYTHON and returns what it printed; the exit status in STATUS.
inline std::string run_python(const std::string& python, const std::string& script, int& status) {
  const std::string command = "'" + python + "' '" + script + "' 2>&1";
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    const int raw = pclose(pipe);
    status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  } else {
    status = -1;
  }
  return out;
}

}  // namespace chainer::testing
