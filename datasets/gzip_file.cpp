#include "datasets/gzip_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/io/npz.h"
#include "core/util/error.h"

namespace chainer::datasets {

GzipFile::GzipFile(const std::filesystem::path& path, std::string what) : path_(path), what_(std::move(what)) {
  InputFile file("", path.string(), what_ + " ");
  file_bytes_ = file.size();
  if (file_bytes_ >= 2) file.read_at(0, magic_, 2);
  file_ = gzdopen(file.fd(), "rb");
  if (!file_) throw Error(str("cannot open ", what_, " ", quoted_path(), ": ", std::strerror(errno)));
  file.release();  // gzclose closes it
  gzbuffer(file_, 1 << 18);
}

GzipFile::~GzipFile() { gzclose(file_); }

size_t GzipFile::read(void* dst, size_t size) {
  size_t done = 0;
  while (done < size) {
    const unsigned chunk = unsigned(std::min<size_t>(size - done, size_t(1) << 30));
    const int n = gzread(file_, static_cast<char*>(dst) + done, chunk);
    if (n < 0) {
      int code = Z_OK;
      std::string msg = gzerror(file_, &code);
      const std::string prefix = path_.string() + ": ";  // zlib puts the path in front
      if (msg.starts_with(prefix)) msg.erase(0, prefix.size());
      throw Error(str("cannot decompress ", what_, " ", quoted_path(), ": ", msg, " (zlib error ", code,
                      "); the file is corrupt, download it again"));
    }
    if (n == 0) break;
    done += size_t(n);
    offset_ += uint64_t(n);
  }
  return done;
}

bool GzipFile::ends_before_trailer() {
  char buf[4096];
  while (read(buf, sizeof buf) > 0) {
  }
  return cut_short();
}

bool GzipFile::cut_short() const {
  int code = Z_OK;
  gzerror(file_, &code);
  return code == Z_BUF_ERROR;
}

}  // namespace chainer::datasets
