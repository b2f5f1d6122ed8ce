#include "datasets/download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include "core/util/error.h"
#include "core/util/parse.h"

namespace chainer::dataset {

namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& path) { return str("'", path.string(), "'"); }

std::mutex root_mutex;
std::optional<fs::path> root_override;  // set_dataset_root's path

fs::path home_directory() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  passwd entry{}, *found = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &entry, buf, sizeof buf, &found) == 0 && found && found->pw_dir) return found->pw_dir;
  throw Error("get_dataset_root: $HOME is not set and the user has no home directory in the password database; "
              "set CHAINER_DATASET_ROOT to the directory that holds (or may hold) the data sets");
}

bool is_hex(const std::string& text, size_t digits) {
  if (text.size() != digits) return false;
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool is_sha256(const std::string& text) { return is_hex(text, 64); }

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The sum a file is checked against: SHA-256, or MD5 for a data set whose publisher gives only
// MD5 sums (CIFAR's page); a SHA-256 is preferred wherever one is known.
struct Checksum {
  bool md5 = false;
  std::string hex;  // lowercase
  const char* name() const { return md5 ? "MD5" : "SHA-256"; }
};

Checksum checksum_of(const RemoteFile& file) {
  return file.sha256.empty() ? Checksum{true, lower(file.md5)} : Checksum{false, lower(file.sha256)};
}

// A digest (SHA-256 or MD5) over bytes fed in pieces, through OpenSSL's EVP interface.
class Digest {
 public:
  explicit Digest(bool md5 = false) : ctx_(EVP_MD_CTX_new()), name_(md5 ? "MD5" : "SHA-256") {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, md5 ? EVP_md5() : EVP_sha256(), nullptr) != 1)
      throw Error(str("OpenSSL (libcrypto) cannot start a ", name_, " digest; is the library installed whole?"));
  }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  bool update(const void* data, size_t size) { return EVP_DigestUpdate(ctx_, data, size) == 1; }

  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned size = 0;
    if (EVP_DigestFinal_ex(ctx_, digest, &size) != 1)
      throw Error(str("OpenSSL (libcrypto) cannot finish a ", name_, " digest"));
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < size; ++i) {
      out.push_back(digits[digest[i] >> 4]);
      out.push_back(digits[digest[i] & 15]);
    }
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
  const char* name_;
};

// Partial files: a download writes to "." NAME ".download-" and mkstemp's six letters and digits,
// beside NAME, and holds an open-file-description lock (F_OFD_SETLK) on it while it writes. The
// kernel drops the lock when the writer's process ends in any way (killed included), so a partial
// that can be locked has no writer left, however recent; one whose lock is held is being written,
// however old. OFD locks, not POSIX record locks: those belong to the process, so a downloader in
// another thread of the same process would see them as free, and would drop them on closing the
// file. Where the file system has no locks (an NFS mount without a lock manager), a partial is
// judged by age alone.
constexpr const char* kPartialInfix = ".download-";
constexpr std::chrono::hours kPartialAgeWithoutLocks{24};

// Takes FD's write lock without waiting: 0, or errno (EAGAIN: held by another open file).
int lock_partial(int fd) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;  // l_start = l_len = 0: the whole file, however long it grows
  if (fcntl(fd, F_OFD_SETLK, &lock) == 0) return 0;
  return errno == EACCES ? EAGAIN : errno;  // POSIX allows either for a held lock
}

// Whether NAME is a partial file of a download of FILE_NAME (the pattern above, exactly).
bool is_partial_of(const std::string& name, const std::string& file_name) {
  const std::string prefix = "." + file_name + kPartialInfix;
  if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) return false;
  return std::all_of(name.end() - 6, name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

// Removes the partial files of downloads of FINAL_PATH whose writer is gone (a killed process),
// and no others: not another name's, not a live writer's (in this process or another), not a
// file merely named alike (wrong length, another owner's that this user cannot open).
void remove_stale_partials(const fs::path& final_path) {
  const fs::path dir = final_path.parent_path().empty() ? fs::path(".") : final_path.parent_path();
  const std::string file_name = final_path.filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path partial = it->path();
    if (!is_partial_of(partial.filename().string(), file_name)) continue;
    const int fd = open(partial.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);  // a write lock needs write access
    if (fd < 0) continue;
    struct stat held {};
    bool stale = false;
    if (fstat(fd, &held) == 0 && S_ISREG(held.st_mode)) {
      const int error = lock_partial(fd);
      if (error == 0)
        stale = true;
      else if (error != EAGAIN)  // no locks on this file system
        stale = std::chrono::system_clock::now() - std::chrono::system_clock::from_time_t(held.st_mtime) >
                kPartialAgeWithoutLocks;
    }
    // Only while the name still leads to the file judged: had its writer renamed it into place
    // and another file taken the name since, that one is not ours to judge.
    struct stat named {};
    if (stale && lstat(partial.c_str(), &named) == 0 && named.st_dev == held.st_dev && named.st_ino == held.st_ino)
      unlink(partial.c_str());
    close(fd);
  }
}

// A new partial file beside FINAL_PATH (named and locked as above), removed unless commit()
// renames it to FINAL_PATH: a reader never sees a partial file under the final name.
class TempFile {
 public:
  explicit TempFile(const fs::path& final_path) {
    const std::string pattern =
        (final_path.parent_path() / ("." + final_path.filename().string() + kPartialInfix + "XXXXXX")).string();
    for (;;) {
      std::string name = pattern;
      fd_ = mkstemp(name.data());
      if (fd_ < 0)
        throw Error(str("cannot create a temporary file in ", quoted(final_path.parent_path()), ": ",
                        std::strerror(errno)));
      // Between mkstemp and the lock another download's remove_stale_partials can take the
      // lock, judge the file stale and remove it: then this one starts over with a new file
      // rather than write to one that has lost its name. Any other failure means that the file
      // system has no locks: the partial is written unlocked, judged by its age.
      if (lock_partial(fd_) != EAGAIN) {
        path_ = name;
        break;
      }
      close(fd_);
    }
  }
  ~TempFile() {
    // Unlinked before it is closed, so that its lock guards it to the end.
    if (!path_.empty()) unlink(path_.c_str());
    if (fd_ >= 0) close(fd_);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const fs::path& path() const { return path_; }

  // Writes all of DATA; false (errno set) when the disk refuses.
  bool write(const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = ::write(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data += n;
      size -= size_t(n);
    }
    return true;
  }

  // Makes the data durable and moves it to FINAL_PATH (replacing what is there) in one step.
  void commit(const fs::path& final_path) {
    // mkstemp makes the file 0600; a cached data set is as readable as any other download.
    if (fchmod(fd_, 0644) != 0 || fsync(fd_) != 0)
      throw Error(str("cannot write ", quoted(path_), ": ", std::strerror(errno)));
    // Renamed while still open and locked: closed first, it would be an unlocked partial that
    // another download could remove before the rename.
    if (std::rename(path_.c_str(), final_path.c_str()) != 0)
      throw Error(str("cannot rename ", quoted(path_), " to ", quoted(final_path), ": ", std::strerror(errno)));
    path_.clear();
    // fsync has reported any error of writing; close's result adds nothing once the data are in place.
    close(fd_);
    fd_ = -1;
  }

 private:
  fs::path path_;
  int fd_ = -1;
};

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Seconds as a message shows them: "1.3".
std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", seconds);
  return buf;
}

// A limit from the environment variable NAME, FALLBACK when it is unset or empty; a value that is
// not a whole number in [MIN, 10^9] is an error naming OP, the variable, the value, what it means
// and its default. 10^9 bounds a product of two limits well inside int64_t.
int64_t limit_from_environment(const char* op, const char* name, int64_t fallback, int64_t min, const char* meaning) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  try {
    return parse_integer(text, name, min, 1000000000);
  } catch (const Error& e) {
    throw Error(str(op, ": ", e.what(), " (", meaning, "; default ", fallback, ")"));
  }
}

DownloadLimits limits_from_environment(const char* op) {
  const DownloadLimits defaults;
  DownloadLimits limits;
  limits.timeout = limit_from_environment(op, "CHAINER_DOWNLOAD_TIMEOUT", defaults.timeout, 0,
                                          "the seconds one file's transfer may take, 0 for no deadline");
  limits.min_rate = limit_from_environment(op, "CHAINER_DOWNLOAD_MIN_RATE", defaults.min_rate, 0,
                                           "the bytes per second a transfer must average, 0 for no minimum");
  limits.min_rate_time = limit_from_environment(op, "CHAINER_DOWNLOAD_MIN_RATE_TIME", defaults.min_rate_time, 1,
                                                "the seconds over which CHAINER_DOWNLOAD_MIN_RATE is measured");
  return limits;
}

// Which limit ended a transfer.
enum class Abandoned { no, deadline, min_rate };

// What one transfer has written so far, and its progress against the limits.
struct Transfer {
  Transfer(TempFile* file, Digest* sum, const DownloadLimits& limits)
      : file(file), sum(sum), limits(limits), start(Clock::now()), window_start(start) {}
  TempFile* file;
  Digest* sum;
  DownloadLimits limits;
  Clock::time_point start;
  Clock::time_point window_start;  // the stretch of min_rate_time seconds being measured
  uint64_t bytes = 0;
  uint64_t window_bytes = 0;  // bytes when the stretch began
  int write_errno = 0;        // set when the disk refused the data
  Abandoned abandoned = Abandoned::no;
  uint64_t window_got = 0;    // the bytes of the stretch that fell below min_rate
  double window_seconds = 0;  // and its length: min_rate_time, or up to a second more
};

// curl's write callback: returning fewer bytes than given ends the transfer (CURLE_WRITE_ERROR).
size_t on_data(char* data, size_t size, size_t count, void* user) {
  Transfer& t = *static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (!t.file->write(data, n)) {
    t.write_errno = errno ? errno : EIO;
    return 0;
  }
  if (!t.sum->update(data, n)) {
    t.write_errno = EIO;
    return 0;
  }
  t.bytes += n;
  return n;
}

// curl's progress callback, called while data flows and about once a second while none does:
// a nonzero return ends the transfer (CURLE_ABORTED_BY_CALLBACK). The limits are checked here
// rather than with CURLOPT_LOW_SPEED_*, whose timeout is the same error code as a connection
// timeout, so the message can say which limit ended the transfer.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  Transfer& t = *static_cast<Transfer*>(user);
  const Clock::time_point now = Clock::now();
  if (t.limits.timeout > 0 && seconds_between(t.start, now) >= double(t.limits.timeout)) {
    t.abandoned = Abandoned::deadline;
    return 1;
  }
  const double window = seconds_between(t.window_start, now);
  if (t.limits.min_rate > 0 && window >= double(t.limits.min_rate_time)) {
    const uint64_t got = t.bytes - t.window_bytes;
    if (got < uint64_t(t.limits.min_rate * t.limits.min_rate_time)) {
      t.abandoned = Abandoned::min_rate;
      t.window_got = got;
      t.window_seconds = window;
      return 1;
    }
    t.window_start = now;
    t.window_bytes = t.bytes;
  }
  return 0;
}

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] {
    const CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (code != CURLE_OK) throw Error(str("libcurl cannot start: ", curl_easy_strerror(code)));
  });
}

// " (expected SIZE bytes: cut short)" and the like for a file of ACTUAL bytes, "" when SIZE is
// not known (0) or is ACTUAL.
std::string size_note(uint64_t actual, uint64_t size) {
  if (size == 0 || actual == size) return "";
  return str(" (expected ", size, actual < size ? " bytes: cut short)" : " bytes: too long)");
}

// Downloads URL to PATH checked against EXPECTED (and SIZE where known, for the message); returns
// what went wrong, or nothing on success.
std::optional<std::string> try_download(const std::string& url, const fs::path& path, const Checksum& expected,
                                        uint64_t size, const DownloadLimits& limits) {
  init_curl();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return "libcurl cannot create a transfer (out of memory?)";
  remove_stale_partials(path);
  TempFile file(path);
  Digest sum(expected.md5);
  char curl_message[CURL_ERROR_SIZE] = "";
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);  // an HTTP status of 400 or more is an error, not a body
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);     // no SIGALRM for timeouts: safe in threaded programs
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
  // The deadline also as curl's own timeout: it holds where the progress callback is not called
  // on time (a slow name lookup), and ends the transfer to the millisecond.
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, long(limits.timeout * 1000));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "chainermn-cpp");
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_message);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  std::cerr << "Downloading from " << url << "..." << std::endl;  // as Chainer: the first call is slow
  Transfer transfer(&file, &sum, limits);  // its clock starts here
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &transfer);
  const CURLcode code = curl_easy_perform(h);
  const double elapsed = seconds_between(transfer.start, Clock::now());

  const std::string curl_error = str("curl error ", int(code), ": ", *curl_message ? curl_message : curl_easy_strerror(code));
  curl_off_t length = -1;  // the Content-Length, -1 when unknown
  curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  const std::string arrived =
      str(transfer.bytes, " bytes", length >= 0 ? str(" of ", length) : std::string(), " had arrived in all");
  // curl's copy of the deadline ended it, not its 30 s for connecting. curl times by the
  // millisecond and may end a hair before this clock reaches the deadline.
  if (code == CURLE_OPERATION_TIMEDOUT && limits.timeout > 0 && elapsed >= double(limits.timeout) - 0.1)
    transfer.abandoned = Abandoned::deadline;
  if (transfer.abandoned == Abandoned::deadline)
    return str("abandoned after ", seconds_text(elapsed), " s at the deadline of ", limits.timeout,
               " s for one file (CHAINER_DOWNLOAD_TIMEOUT=", limits.timeout, "); ", arrived,
               "; on a slow but working link raise CHAINER_DOWNLOAD_TIMEOUT (0: no deadline)");
  if (transfer.abandoned == Abandoned::min_rate)
    return str("abandoned after ", seconds_text(elapsed), " s: ", transfer.window_got, " bytes arrived in the last ",
               seconds_text(transfer.window_seconds), " s, under the minimum rate of ", limits.min_rate,
               " bytes/s over ", limits.min_rate_time, " s (CHAINER_DOWNLOAD_MIN_RATE=", limits.min_rate,
               ", CHAINER_DOWNLOAD_MIN_RATE_TIME=", limits.min_rate_time, "); ", arrived,
               "; on a slow but working link lower CHAINER_DOWNLOAD_MIN_RATE (0: no minimum)");
  switch (code) {
    case CURLE_OK:
      break;
    case CURLE_HTTP_RETURNED_ERROR: {
      long status = 0;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
      return str("the server answered HTTP status ", status, status == 404 ? " (Not Found)" : "");
    }
    case CURLE_PARTIAL_FILE:
      return str("the transfer was cut short: ", transfer.bytes, " bytes arrived",
                 length >= 0 ? str(" of ", length) : std::string(), " (", curl_error, ")");
    case CURLE_WRITE_ERROR:
      if (transfer.write_errno)
        return str("cannot write ", quoted(file.path()), ": ", std::strerror(transfer.write_errno));
      return curl_error;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT: {
      long os_errno = 0;  // the system's reason ("Connection refused"), which curl's message may leave out
      curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
      return str("no connection (", curl_error, os_errno ? str("; ", std::strerror(int(os_errno))) : std::string(),
                 "): this machine may be offline, or need a proxy (curl reads http_proxy and https_proxy)");
    }
    default:
      return curl_error;
  }
  const std::string got = sum.hex();
  if (got != expected.hex)
    return str("checksum mismatch: expected ", expected.name(), " ", expected.hex, ", got ", got, " over the ",
               transfer.bytes,
               " bytes that arrived", size_note(transfer.bytes, size),
               " (a corrupted transfer, or the server holds another file)");
  file.commit(path);
  return std::nullopt;
}

// What is wrong with the cached copy PATH of FILE ("the cached file '...' is 300 bytes (expected
// 9912422 bytes: cut short), SHA-256 ... (expected ...)"), or "" when it is whole.
std::string cached_file_damage(const fs::path& path, const RemoteFile& file) {
  std::error_code ec;
  const uint64_t actual = fs::file_size(path, ec);
  if (ec) return str("the cached file ", quoted(path), " cannot be read: ", ec.message());
  const Checksum expected = checksum_of(file);
  std::string sum;
  try {
    sum = expected.md5 ? md5_file(path) : sha256_file(path);
  } catch (const Error& e) {
    return str("the cached file ", quoted(path), " cannot be read (", e.what(), ")");
  }
  if (sum == expected.hex) return "";  // the sum decides; the size only names a short file
  return str("the cached file ", quoted(path), " is ", actual, " bytes", size_note(actual, file.size), ", ",
             expected.name(), " ", sum, " (expected ", expected.hex, ")");
}

void create_directories(const fs::path& dir, const char* function) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error(str(function, ": cannot create the directory ", quoted(dir), ": ",
                    ec ? ec.message() : "a file of that name is in the way",
                    "; set CHAINER_DATASET_ROOT to a directory you can write to"));
}

}  // namespace

fs::path get_dataset_root() {
  {
    std::lock_guard<std::mutex> lock(root_mutex);
    if (root_override) return *root_override;
  }
  if (const char* root = std::getenv("CHAINER_DATASET_ROOT"); root && *root) return root;
  return home_directory() / ".chainer" / "dataset";
}

void set_dataset_root(const fs::path& path) {
  std::lock_guard<std::mutex> lock(root_mutex);
  if (path.empty())
    root_override.reset();
  else
    root_override = path;
}

fs::path get_dataset_directory(const std::string& dataset_name, bool create_directory) {
  const fs::path dir = get_dataset_root() / dataset_name;
  if (create_directory) create_directories(dir, "get_dataset_directory");
  return dir;
}

namespace {

// The digest of the bytes of the file at PATH; FUNCTION names the caller in errors.
std::string file_digest(const fs::path& path, bool md5, const char* function) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(str(function, ": cannot open ", quoted(path), ": ", std::strerror(errno)));
  Digest sum(md5);
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  for (;;) {
    const ssize_t n = read(fd, buf.get(), 1 << 20);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      close(fd);
      throw Error(str(function, ": cannot read ", quoted(path), ": ", std::strerror(saved)));
    }
    if (n == 0) break;
    sum.update(buf.get(), size_t(n));
  }
  close(fd);
  return sum.hex();
}

}  // namespace

std::string sha256_file(const fs::path& path) { return file_digest(path, false, "sha256_file"); }

std::string md5_file(const fs::path& path) { return file_digest(path, true, "md5_file"); }

DownloadLimits download_limits() { return limits_from_environment("download_limits"); }

void download_file(const std::string& url, const fs::path& path, const std::string& sha256) {
  const DownloadLimits limits = limits_from_environment("download_file");
  if (!is_sha256(sha256))
    throw Error(str("download_file: sha256 must be 64 hex digits, got '", sha256, "' (", sha256.size(),
                    " characters)"));
  if (path.filename().empty()) throw Error(str("download_file: path ", quoted(path), " names no file"));
  if (!path.parent_path().empty()) create_directories(path.parent_path(), "download_file");
  if (std::optional<std::string> failure = try_download(url, path, Checksum{false, lower(sha256)}, 0, limits))
    throw Error(str("download_file: cannot download '", url, "': ", *failure, ". Nothing was written to ",
                    quoted(path), "; try again later, or get the file by other means and put it there"));
}

fs::path download_dataset(const DatasetSource& source) {
  const DownloadLimits limits = limits_from_environment("download_dataset");
  if (source.mirrors.empty()) throw Error(str("download_dataset: ", source.name, " has no mirrors to download from"));
  for (const RemoteFile& file : source.files)
    if (file.sha256.empty() ? !is_hex(file.md5, 32) : !is_sha256(file.sha256))
      throw Error(str("download_dataset: ", source.name, "'s ", file.name, " needs a SHA-256 of 64 hex digits",
                      file.sha256.empty() ? str(" or an MD5 of 32, got the MD5 '", file.md5, "'")
                                          : str(", got '", file.sha256, "'")));
  const fs::path dir = get_dataset_directory(source.directory);
  for (const RemoteFile& file : source.files) {
    const fs::path path = dir / file.name;
    std::error_code ec;
    std::string damaged;  // what is wrong with the file already there
    if (fs::is_regular_file(path, ec)) {
      // Checked each time, not trusted as Chainer trusts its cache: a file cut short (a full disk,
      // a copy by hand) would otherwise fail when read, with no way out but deleting it by hand.
      damaged = cached_file_damage(path, file);
      if (damaged.empty()) continue;
      std::cerr << source.name << ": " << damaged << "; downloading it again" << std::endl;
    }
    std::string failures;
    bool done = false;
    for (const std::string& mirror : source.mirrors) {
      const std::optional<std::string> failure =
          try_download(mirror + file.name, path, checksum_of(file), file.size, limits);
      if (!failure) {
        done = true;
        break;
      }
      failures += str("\n  ", mirror, file.name, ": ", *failure);
    }
    if (!done) {
      std::string names;
      for (const RemoteFile& f : source.files) names += (names.empty() ? "" : ", ") + f.name;
      throw Error(str(source.name, ": cannot download ", file.name, " from any of its ", source.mirrors.size(),
                      source.mirrors.size() == 1 ? " mirror:" : " mirrors:", failures,
                      damaged.empty() ? std::string() : str("\nIt was downloaded again because ", damaged,
                                                            "; that file was left as it was"),
                      "\nPut the files (", names,
                      ") into ", quoted(dir), " by hand, or set CHAINER_DATASET_ROOT to a directory whose ",
                      source.directory, " holds them"));
    }
  }
  return dir;
}

}  // namespace chainer::dataset
