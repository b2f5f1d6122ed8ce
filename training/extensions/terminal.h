// Whether an output stream is a terminal, for the extensions that draw with escape codes
// (PrintReport's erasing, ProgressBar): only the standard streams can be told, and a standard
// stream redirected to a file is not one. Internal: not installed.
#pragma once
#include <ostream>

namespace chainer::training::extensions {

// Whether OUT is a standard stream (cout, cerr, clog) that writes to a terminal.
bool is_terminal(const std::ostream& out);
// Whether OUT is cout, cerr or clog.
bool is_standard_stream(const std::ostream& out);

}  // namespace chainer::training::extensions
