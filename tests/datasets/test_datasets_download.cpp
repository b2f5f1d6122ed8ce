// Downloading data sets (datasets/download.h) against an HTTP server in this process on
// 127.0.0.1, whose answers each test chooses: whole files, files cut short, wrong bytes, 404,
// bytes trickled slowly, a connection that stalls, and a port where nothing listens. No test
// touches the network outside this machine.
#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "datasets/cifar.h"
#include "datasets/download.h"
#include "datasets/fashion_mnist.h"
#include "datasets/mnist.h"
#include "dataset_files.h"

using namespace chainer;
using namespace chainer::dataset;
using namespace chainer::testing;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// What the server answers for one path.
struct Route {
  int status = 200;
  std::string body;
  bool content_length = true;              // send a Content-Length header (of the whole body)
  size_t send = std::string::npos;         // bytes of the body sent before the connection is closed
  size_t chunk = 0;                        // body bytes per send, with a pause between sends (0: all at once)
  int pause_ms = 0;                        // the pause between chunks
  size_t stall = std::string::npos;        // body bytes sent before the server goes silent, holding the connection
  bool respond = true;                     // false: read the request, then hold the connection without a word
};

// How long the server holds a connection at most (stalled, or trickling): a client that never
// gives up fails its test after this instead of hanging it.
constexpr auto kServerPatience = std::chrono::seconds(8);

// An HTTP server on 127.0.0.1 at a port the kernel picks, answering each GET from a table of
// routes (404 for anything else) on one thread, one connection at a time, closing after each.
class LocalServer {
 public:
  LocalServer() {
    // A proxy from the environment would receive these requests instead of the server.
    ::setenv("no_proxy", "*", 1);
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LocalServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  void route(const std::string& path, Route r) {
    std::lock_guard<std::mutex> lock(mutex_);
    routes_[path] = std::move(r);
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  std::string url(const std::string& name) const { return base_url() + name; }
  int requests(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_[path];
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      answer(client);
      ::close(client);
    }
  }

  void answer(int client) {
    timeval timeout{5, 0};
    ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(client, buf, sizeof buf, 0);
      if (n <= 0) return;
      request.append(buf, size_t(n));
    }
    const size_t start = request.find(' ') + 1;
    const std::string path = request.substr(start, request.find(' ', start) - start);
    Route r;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++counts_[path];
      auto it = routes_.find(path);
      r = it != routes_.end() ? it->second : Route{404, "no such file", true, std::string::npos};
    }
    const auto deadline = std::chrono::steady_clock::now() + kServerPatience;
    if (!r.respond) return hold(client, deadline);
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + (r.status == 200 ? " OK" : " Not Found") + "\r\n";
    if (r.content_length) head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
    head += "Connection: close\r\n\r\n";
    if (!send_all(client, head)) return;
    const size_t end = std::min({r.send, r.stall, r.body.size()});
    const size_t step = r.chunk ? r.chunk : end;
    for (size_t at = 0; at < end; at += step) {
      if (at > 0 && !wait_for(client, std::chrono::milliseconds(r.pause_ms), deadline)) return;
      if (!send_all(client, r.body.substr(at, std::min(step, end - at)))) return;
    }
    if (r.stall < r.body.size() && r.stall < r.send) hold(client, deadline);
  }

  static bool send_all(int client, const std::string& out) {
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = ::send(client, out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += size_t(n);
    }
    return true;
  }

  // Waits FOR (at most until DEADLINE); false when the client has closed the connection (it gave
  // up), the deadline has passed, or the server is stopping.
  bool wait_for(int client, std::chrono::milliseconds for_, std::chrono::steady_clock::time_point deadline) {
    const auto until = std::min(std::chrono::steady_clock::now() + for_, deadline);
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      if (stop_ || now >= deadline) return false;
      if (now >= until) return true;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
      pollfd p{client, POLLIN, 0};
      if (::poll(&p, 1, int(std::min<long long>(left + 1, 50))) > 0) {
        char buf[256];
        if (::recv(client, buf, sizeof buf, MSG_DONTWAIT) <= 0) return false;  // closed by the client
      }
    }
  }

  // Sends nothing more, until the client closes the connection or DEADLINE.
  void hold(int client, std::chrono::steady_clock::time_point deadline) {
    while (wait_for(client, std::chrono::milliseconds(50), deadline)) {
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, Route> routes_;
  std::map<std::string, int> counts_;
};

// A port on 127.0.0.1 where nothing listens: bound (so no one else takes it) but not listening,
// so a connection is refused.
class DeadPort {
 public:
  DeadPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~DeadPort() { ::close(fd_); }
  DeadPort(const DeadPort&) = delete;
  DeadPort& operator=(const DeadPort&) = delete;
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// 100 kB of pseudo-random bytes: several of curl's write calls.
std::string payload(uint64_t seed) {
  Generator gen(seed);
  std::string bytes;
  for (int i = 0; i < 100000; ++i) bytes.push_back(char(gen.below(256)));
  return bytes;
}

std::string sha256_of(const std::string& bytes, const fs::path& scratch) {
  write_file(scratch, bytes);
  const std::string sum = sha256_file(scratch);
  fs::remove(scratch);
  return sum;
}

// The names in DIR (temporary files included: a failed download must leave none).
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Sets an environment variable for one scope, restoring what it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The partial files in DIR: names with ".download-" in them.
std::vector<std::string> partials(const fs::path& dir) {
  std::vector<std::string> names;
  for (const std::string& name : listing(dir))
    if (name.find(".download-") != std::string::npos) names.push_back(name);
  return names;
}

// Waits (at most 5 s) until DIR holds a partial file; its name, or "" if none came.
std::string wait_for_partial(const fs::path& dir) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    if (const std::vector<std::string> found = partials(dir); !found.empty()) return found[0];
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("sha256_file: the SHA-256 of a file's bytes in hex") {
  TempDir tmp;
  write_file(tmp.path / "abc", "abc");
  CHECK(sha256_file(tmp.path / "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  write_file(tmp.path / "empty", "");
  CHECK(sha256_file(tmp.path / "empty") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  REQUIRE_THROWS_WITH(sha256_file(tmp.path / "nowhere"), Contains("cannot open") && Contains("nowhere'"));
}

TEST_CASE("md5_file: the MD5 of a file's bytes in hex") {
  TempDir tmp;
  write_file(tmp.path / "abc", "abc");
  CHECK(md5_file(tmp.path / "abc") == "900150983cd24fb0d6963f7d28e17f72");
  write_file(tmp.path / "empty", "");
  CHECK(md5_file(tmp.path / "empty") == "d41d8cd98f00b204e9800998ecf8427e");
  REQUIRE_THROWS_WITH(md5_file(tmp.path / "nowhere"), Contains("md5_file: cannot open") && Contains("nowhere'"));
}

TEST_CASE("get_dataset_root: set_dataset_root, else $CHAINER_DATASET_ROOT, else ~/.chainer/dataset") {
  TempDir tmp;
  set_dataset_root("");
  ::setenv("CHAINER_DATASET_ROOT", (tmp.path / "env").c_str(), 1);
  CHECK(get_dataset_root() == tmp.path / "env");
  ::unsetenv("CHAINER_DATASET_ROOT");
  if (const char* home = std::getenv("HOME")) CHECK(get_dataset_root() == fs::path(home) / ".chainer" / "dataset");
  set_dataset_root(tmp.path / "set");
  ::setenv("CHAINER_DATASET_ROOT", (tmp.path / "env").c_str(), 1);
  CHECK(get_dataset_root() == tmp.path / "set");

  CHECK(get_dataset_directory("pfnet/chainer/x", false) == tmp.path / "set" / "pfnet" / "chainer" / "x");
  CHECK_FALSE(fs::exists(tmp.path / "set"));
  CHECK(get_dataset_directory("pfnet/chainer/x") == tmp.path / "set" / "pfnet" / "chainer" / "x");
  CHECK(fs::is_directory(tmp.path / "set" / "pfnet" / "chainer" / "x"));

  write_file(tmp.path / "file", "in the way");
  set_dataset_root(tmp.path / "file");
  REQUIRE_THROWS_WITH(get_dataset_directory("mnist"), Contains("get_dataset_directory: cannot create the directory") &&
                                                          Contains("CHAINER_DATASET_ROOT"));
  set_dataset_root("");
  ::unsetenv("CHAINER_DATASET_ROOT");
}

TEST_CASE("download_file: a good download appears whole under its name, checked") {
  TempDir tmp;
  LocalServer server;
  const std::string bytes = payload(1);
  const std::string sum = sha256_of(bytes, tmp.path / "scratch");
  server.route("/data.gz", {200, bytes});
  const fs::path path = tmp.path / "made" / "data.gz";  // its directory is created
  download_file(server.url("data.gz"), path, sum);
  CHECK(read_file(path) == bytes);
  CHECK(sha256_file(path) == sum);
  CHECK(listing(path.parent_path()) == std::vector<std::string>{"data.gz"});  // no temporary file left
  CHECK((fs::status(path).permissions() & fs::perms::others_read) != fs::perms::none);

  // The sum in capitals is the same sum; an existing file is replaced.
  std::string upper = sum;
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  write_file(path, "old");
  download_file(server.url("data.gz"), path, upper);
  CHECK(read_file(path) == bytes);
  CHECK(server.requests("/data.gz") == 2);

  REQUIRE_THROWS_WITH(download_file(server.url("data.gz"), path, "abc"),
                      Contains("download_file: sha256 must be 64 hex digits, got 'abc' (3 characters)"));
}

TEST_CASE("download_file: a failed download leaves nothing under the name, and says why") {
  TempDir tmp;
  LocalServer server;
  const std::string bytes = payload(2);
  const std::string sum = sha256_of(bytes, tmp.path / "scratch");
  const fs::path path = tmp.path / "data.gz";

  SECTION("cut short: the server closes the connection before Content-Length bytes") {
    server.route("/data.gz", {200, bytes, true, 30000});
    REQUIRE_THROWS_WITH(download_file(server.url("data.gz"), path, sum),
                        Contains(server.url("data.gz")) && Contains("the transfer was cut short: 30000 bytes arrived of 100000") &&
                            Contains("curl error 18") && Contains("Nothing was written to '" + path.string() + "'"));
  }
  SECTION("cut short without a Content-Length: the checksum catches it") {
    server.route("/data.gz", {200, bytes, false, 30000});
    REQUIRE_THROWS_WITH(download_file(server.url("data.gz"), path, sum),
                        Contains("checksum mismatch") && Contains("over the 30000 bytes that arrived"));
  }
  SECTION("corrupted: other bytes than the checksum says") {
    std::string corrupt = bytes;
    corrupt[5000] ^= 1;
    server.route("/data.gz", {200, corrupt});
    const std::string got = sha256_of(corrupt, tmp.path / "scratch");
    REQUIRE_THROWS_WITH(download_file(server.url("data.gz"), path, sum),
                        Contains("cannot download '" + server.url("data.gz") + "': checksum mismatch: expected SHA-256 " +
                                 sum + ", got " + got + " over the 100000 bytes that arrived") &&
                            Contains("Nothing was written to '" + path.string() + "'") && Contains("put it there"));
  }
  SECTION("HTTP 404") {
    REQUIRE_THROWS_WITH(download_file(server.url("missing.gz"), path, sum),
                        Contains(server.url("missing.gz")) && Contains("the server answered HTTP status 404 (Not Found)"));
  }
  SECTION("unreachable: connection refused") {
    DeadPort dead;
    REQUIRE_THROWS_WITH(download_file(dead.base_url() + "data.gz", path, sum),
                        Contains(dead.base_url() + "data.gz") && Contains("no connection (curl error 7: ") &&
                            Contains("; Connection refused)") && Contains("this machine may be offline") &&
                            Contains("put it there"));
  }
  CHECK_FALSE(fs::exists(path));
  CHECK(listing(tmp.path).empty());  // no temporary file left either

  // A file already under the name is left as it was by a failed download.
  write_file(path, "old");
  server.route("/bad.gz", {200, "bad"});
  REQUIRE_THROWS(download_file(server.url("bad.gz"), path, sum));
  CHECK(read_file(path) == "old");
}

TEST_CASE("download_dataset: tries the mirrors in order, downloads each missing file once") {
  TempDir tmp;
  LocalServer server;
  DeadPort dead;
  set_dataset_root(tmp.path / "root");
  // A small MNIST, served by the local server under the real file names.
  fs::create_directories(tmp.path / "served");
  write_small_mnist(tmp.path / "served");
  DatasetSource source = datasets::mnist_source();
  source.mirrors = {dead.base_url(), server.base_url()};
  for (RemoteFile& file : source.files) {
    server.route("/" + file.name, {200, read_file(tmp.path / "served" / file.name)});
    file.sha256 = sha256_file(tmp.path / "served" / file.name);
  }

  const fs::path dir = download_dataset(source);
  CHECK(dir == tmp.path / "root" / "pfnet" / "chainer" / "mnist");
  for (const RemoteFile& file : source.files) {
    CHECK(sha256_file(dir / file.name) == file.sha256);
    CHECK(server.requests("/" + file.name) == 1);
  }
  CHECK(listing(dir).size() == 4);

  // The second time every file is there: nothing is downloaded.
  CHECK(download_dataset(source) == dir);
  for (const RemoteFile& file : source.files) CHECK(server.requests("/" + file.name) == 1);

  // A missing file is downloaded again; a file that no mirror serves is an error that lists
  // each mirror's failure and says where the files go.
  fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
  server.route("/t10k-labels-idx1-ubyte.gz", {404, ""});
  try {
    download_dataset(source);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Contains("MNIST: cannot download t10k-labels-idx1-ubyte.gz from any of its 2 mirrors:\n  " +
                              dead.base_url() + "t10k-labels-idx1-ubyte.gz: no connection"));
    CHECK_THAT(what, Contains("\n  " + server.url("t10k-labels-idx1-ubyte.gz") + ": the server answered HTTP status 404"));
    CHECK_THAT(what, Contains("Put the files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                              "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) into '" + dir.string() +
                              "' by hand, or set CHAINER_DATASET_ROOT"));
  }
  CHECK(listing(dir).size() == 3);

  source.files[0].sha256 = "not a sum";
  REQUIRE_THROWS_WITH(download_dataset(source),
                      Contains("MNIST's train-images-idx3-ubyte.gz needs a SHA-256 of 64 hex digits, got 'not a sum'"));
  source.files[0].sha256 = "";
  source.files[0].md5 = "abc";
  REQUIRE_THROWS_WITH(download_dataset(source),
                      Contains("needs a SHA-256 of 64 hex digits or an MD5 of 32, got the MD5 'abc'"));
  source.mirrors.clear();
  REQUIRE_THROWS_WITH(download_dataset(source), Contains("MNIST has no mirrors"));
  set_dataset_root("");
}

TEST_CASE("get_mnist without a directory reads the dataset root's files, checked against the official sums") {
  const char* mnist = std::getenv("MNIST_DIR");
  if (!mnist || !fs::is_directory(mnist)) FAIL("MNIST_DIR " << (mnist ? mnist : "(unset)") << " is not a directory");
  TempDir tmp;
  set_dataset_root(tmp.path / "root");
  REQUIRE_THROWS_WITH(datasets::get_mnist(true, 0), Contains("get_mnist: ndim must be 1"));  // before any download
  // The real files, so that the check passes and nothing is downloaded from the real mirrors.
  const fs::path dir = get_dataset_directory("pfnet/chainer/mnist");
  for (const RemoteFile& file : datasets::mnist_source().files)
    fs::create_symlink(fs::path(mnist) / file.name, dir / file.name);
  auto [train, test] = datasets::get_mnist(/*withlabel=*/false, /*ndim=*/3);
  CHECK(train->size() == 60000);
  CHECK(test->size() == 10000);
  REQUIRE(train->fields().size() == 1);
  CHECK(train->fields()[0].shape() == Shape{60000, 1, 28, 28});
  set_dataset_root("");
}

TEST_CASE("mnist_source and fashion_mnist_source: Chainer's directories, the official sums") {
  const DatasetSource& mnist = datasets::mnist_source();
  CHECK(mnist.directory == "pfnet/chainer/mnist");
  CHECK(mnist.mirrors == std::vector<std::string>{"http://yann.lecun.com/exdb/mnist/",
                                                  "https://ossci-datasets.s3.amazonaws.com/mnist/"});
  const DatasetSource& fashion = datasets::fashion_mnist_source();
  CHECK(fashion.directory == "pfnet/chainer/fashion-mnist");
  CHECK(fashion.mirrors == std::vector<std::string>{"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"});
  REQUIRE(mnist.files.size() == 4);
  REQUIRE(fashion.files.size() == 4);
  CHECK(fashion.files[0].name == "train-images-idx3-ubyte.gz");

  // The MNIST sums are those of the original files the suite reads.
  const char* dir = std::getenv("MNIST_DIR");
  if (!dir || !fs::is_directory(dir)) FAIL("MNIST_DIR " << (dir ? dir : "(unset)") << " is not a directory");
  for (const RemoteFile& file : mnist.files) {
    CHECK(sha256_file(fs::path(dir) / file.name) == file.sha256);
    CHECK(fs::file_size(fs::path(dir) / file.name) == file.size);
  }
  for (const RemoteFile& file : fashion.files) CHECK(file.size > 0);
}

TEST_CASE("download limits: documented defaults, each changed by its environment variable, read strictly") {
  ScopedEnv timeout("CHAINER_DOWNLOAD_TIMEOUT", nullptr);
  ScopedEnv rate("CHAINER_DOWNLOAD_MIN_RATE", nullptr);
  ScopedEnv rate_time("CHAINER_DOWNLOAD_MIN_RATE_TIME", nullptr);
  DownloadLimits limits = download_limits();
  CHECK(limits.timeout == 1800);
  CHECK(limits.min_rate == 1024);
  CHECK(limits.min_rate_time == 60);

  ::setenv("CHAINER_DOWNLOAD_TIMEOUT", "90", 1);
  ::setenv("CHAINER_DOWNLOAD_MIN_RATE", "0", 1);  // 0 turns the minimum off
  ::setenv("CHAINER_DOWNLOAD_MIN_RATE_TIME", "5", 1);
  limits = download_limits();
  CHECK(limits.timeout == 90);
  CHECK(limits.min_rate == 0);
  CHECK(limits.min_rate_time == 5);
  ::setenv("CHAINER_DOWNLOAD_TIMEOUT", "", 1);  // empty: as if unset
  CHECK(download_limits().timeout == 1800);

  // A bad value is an error naming the variable and the value, also where a download would
  // otherwise start: nothing is asked of the server.
  TempDir tmp;
  LocalServer server;
  server.route("/data.gz", {200, "bytes"});
  const std::string sum(64, '0');
  for (const char* bad : {"10s", "1.5", "-1", " 5", "ten"}) {
    ::setenv("CHAINER_DOWNLOAD_TIMEOUT", bad, 1);
    REQUIRE_THROWS_WITH(download_limits(), Contains("CHAINER_DOWNLOAD_TIMEOUT") && Contains(bad) &&
                                               Contains("seconds") && Contains("default 1800"));
    REQUIRE_THROWS_WITH(download_file(server.url("data.gz"), tmp.path / "data.gz", sum),
                        Contains("download_file: CHAINER_DOWNLOAD_TIMEOUT") && Contains(bad));
  }
  CHECK(server.requests("/data.gz") == 0);
  ::unsetenv("CHAINER_DOWNLOAD_TIMEOUT");
  ::setenv("CHAINER_DOWNLOAD_MIN_RATE", "fast", 1);
  REQUIRE_THROWS_WITH(download_limits(), Contains("CHAINER_DOWNLOAD_MIN_RATE expects an integer, got 'fast'") &&
                                             Contains("bytes per second") && Contains("default 1024"));
  ::unsetenv("CHAINER_DOWNLOAD_MIN_RATE");
  ::setenv("CHAINER_DOWNLOAD_MIN_RATE_TIME", "0", 1);
  REQUIRE_THROWS_WITH(download_limits(), Contains("CHAINER_DOWNLOAD_MIN_RATE_TIME must be at least 1, got 0") &&
                                             Contains("default 60"));
}

TEST_CASE("download_file: a server slower than the minimum rate is abandoned, naming the URL, what arrived and the limit") {
  TempDir tmp;
  LocalServer server;
  const std::string bytes = payload(3);
  const std::string sum = sha256_of(bytes, tmp.path / "scratch");
  const fs::path path = tmp.path / "data.gz";
  ScopedEnv timeout("CHAINER_DOWNLOAD_TIMEOUT", nullptr);
  ScopedEnv rate("CHAINER_DOWNLOAD_MIN_RATE", "1000");
  ScopedEnv rate_time("CHAINER_DOWNLOAD_MIN_RATE_TIME", "1");
  const auto start = std::chrono::steady_clock::now();

  SECTION("trickling: 2 bytes every 100 ms") {
    server.route("/data.gz", {200, bytes, true, std::string::npos, 2, 100});
    REQUIRE_THROWS_WITH(
        download_file(server.url("data.gz"), path, sum),
        Contains("download_file: cannot download '" + server.url("data.gz") + "': abandoned after ") &&
            Contains("bytes arrived in the last 1.") &&
            Contains("s, under the minimum rate of 1000 bytes/s over 1 s "
                     "(CHAINER_DOWNLOAD_MIN_RATE=1000, CHAINER_DOWNLOAD_MIN_RATE_TIME=1)") &&
            Contains("of 100000 had arrived") && Contains("Nothing was written to '" + path.string() + "'"));
  }
  SECTION("stalled after 500 bytes, the connection held open") {
    server.route("/data.gz", {200, bytes, true, std::string::npos, 0, 0, 500});
    REQUIRE_THROWS_WITH(download_file(server.url("data.gz"), path, sum),
                        Contains(server.url("data.gz")) && Contains("500 bytes of 100000 had arrived") &&
                            Contains("CHAINER_DOWNLOAD_MIN_RATE=1000"));
  }
  SECTION("stalled before answering") {
    server.route("/data.gz", {200, bytes, true, std::string::npos, 0, 0, std::string::npos, false});
    REQUIRE_THROWS_WITH(download_file(server.url("data.gz"), path, sum),
                        Contains(server.url("data.gz")) && Contains(": 0 bytes arrived in the last 1.") &&
                            Contains("; 0 bytes had arrived in all"));
  }
  // Abandoned after the 1 s window, not when the server gave up on the client.
  CHECK(seconds_since(start) < 3);
  CHECK(listing(tmp.path).empty());  // the partial file is gone with the transfer
}

TEST_CASE("download_file: a slow transfer above the minimum rate and within the deadline completes") {
  TempDir tmp;
  LocalServer server;
  const std::string bytes = payload(4);
  const std::string sum = sha256_of(bytes, tmp.path / "scratch");
  ScopedEnv timeout("CHAINER_DOWNLOAD_TIMEOUT", "5");
  ScopedEnv rate("CHAINER_DOWNLOAD_MIN_RATE", "1000");
  ScopedEnv rate_time("CHAINER_DOWNLOAD_MIN_RATE_TIME", "1");
  // 100 kB in 1.2 s: several windows of the minimum rate.
  server.route("/data.gz", {200, bytes, true, std::string::npos, 10000, 120});
  download_file(server.url("data.gz"), tmp.path / "data.gz", sum);
  CHECK(read_file(tmp.path / "data.gz") == bytes);
}

TEST_CASE("download_file: a transfer that outlasts the deadline is abandoned at the deadline, naming it") {
  TempDir tmp;
  LocalServer server;
  const std::string bytes = payload(5);
  const std::string sum = sha256_of(bytes, tmp.path / "scratch");
  const fs::path path = tmp.path / "data.gz";
  ScopedEnv timeout("CHAINER_DOWNLOAD_TIMEOUT", "1");
  ScopedEnv rate("CHAINER_DOWNLOAD_MIN_RATE", "100");
  ScopedEnv rate_time("CHAINER_DOWNLOAD_MIN_RATE_TIME", "1");
  // 50 kB/s, far above the minimum rate, but 2 s for the whole file.
  server.route("/data.gz", {200, bytes, true, std::string::npos, 1000, 20});
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH(download_file(server.url("data.gz"), path, sum),
                      Contains("cannot download '" + server.url("data.gz") + "': abandoned after 1.") &&
                          Contains("s at the deadline of 1 s for one file (CHAINER_DOWNLOAD_TIMEOUT=1)") &&
                          Contains("bytes of 100000 had arrived") && Contains("Nothing was written"));
  const double took = seconds_since(start);
  CHECK(took >= 0.9);  // curl times by the millisecond, and may end a hair early
  CHECK(took < 1.9);
  CHECK(listing(tmp.path).empty());
}

TEST_CASE("download_file: the partial file of a download killed midway is removed by the next download of that file") {
  TempDir tmp;
  LocalServer server;
  const std::string bytes = payload(6);
  const std::string sum = sha256_of(bytes, tmp.path / "scratch");
  const fs::path path = tmp.path / "data.gz";
  ScopedEnv rate("CHAINER_DOWNLOAD_MIN_RATE", "0");  // the child waits until it is killed
  server.route("/data.gz", {200, bytes, true, std::string::npos, 0, 0, 1000});
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      download_file(server.url("data.gz"), path, sum);
    } catch (...) {
    }
    ::_exit(0);
  }
  const std::string partial = wait_for_partial(tmp.path);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(partial != "");
  CHECK(WIFSIGNALED(status));
  CHECK(partials(tmp.path) == std::vector<std::string>{partial});  // what a killed download leaves

  server.route("/data.gz", {200, bytes});
  download_file(server.url("data.gz"), path, sum);
  CHECK(listing(tmp.path) == std::vector<std::string>{"data.gz"});
}

TEST_CASE("download_file: only its own file's partials whose writer is gone are removed, however young or old") {
  TempDir tmp;
  LocalServer server;
  const std::string bytes = payload(7);
  const std::string sum = sha256_of(bytes, tmp.path / "scratch");
  server.route("/data.gz", {200, bytes});
  const auto two_days_ago = fs::file_time_type::clock::now() - std::chrono::hours(48);
  for (const char* name : {".data.gz.download-Fresh1", ".data.gz.download-Old999", ".data.gz.download-Live42",
                           ".other.gz.download-Fresh1", "data.gz.download-Fresh1", ".data.gz.download-Short",
                           ".data.gz.download-Fresh1.txt", ".data.gz.download-Odd_12"}) {
    write_file(tmp.path / name, "partial");
    if (std::string(name).find("Fresh") == std::string::npos) fs::last_write_time(tmp.path / name, two_days_ago);
  }
  // A download still writing .data.gz.download-Live42 (in this process, as another thread's would
  // be) holds its lock, as download_file does.
  const int live = ::open((tmp.path / ".data.gz.download-Live42").c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(live >= 0);
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  REQUIRE(::fcntl(live, F_OFD_SETLK, &lock) == 0);

  download_file(server.url("data.gz"), tmp.path / "data.gz", sum);
  CHECK(listing(tmp.path) == std::vector<std::string>{".data.gz.download-Fresh1.txt", ".data.gz.download-Live42",
                                                      ".data.gz.download-Odd_12", ".data.gz.download-Short",
                                                      ".other.gz.download-Fresh1", "data.gz",
                                                      "data.gz.download-Fresh1"});

  // Its writer gone, the live one is stale too.
  ::close(live);
  download_file(server.url("data.gz"), tmp.path / "data.gz", sum);
  const std::vector<std::string> after = listing(tmp.path);
  CHECK(std::find(after.begin(), after.end(), ".data.gz.download-Live42") == after.end());
  CHECK(after.size() == 6);
}

TEST_CASE("download_file: two downloads of one file at once both succeed, neither removing the other's partial") {
  TempDir tmp;
  LocalServer server;
  const std::string bytes = payload(8);
  const std::string sum = sha256_of(bytes, tmp.path / "scratch");
  const fs::path path = tmp.path / "data.gz";
  // 0.4 s a download; the server answers one at a time, so the second waits for the first.
  server.route("/data.gz", {200, bytes, true, std::string::npos, 12500, 50});
  std::exception_ptr first_error;
  std::thread first([&] {
    try {
      download_file(server.url("data.gz"), path, sum);
    } catch (...) {
      first_error = std::current_exception();
    }
  });
  // The second starts while the first writes its partial file.
  const bool overlapped = wait_for_partial(tmp.path) != "";
  std::exception_ptr second_error;
  try {
    download_file(server.url("data.gz"), path, sum);
  } catch (...) {
    second_error = std::current_exception();
  }
  first.join();
  CHECK(overlapped);
  if (first_error) std::rethrow_exception(first_error);
  if (second_error) std::rethrow_exception(second_error);
  CHECK(read_file(path) == bytes);
  CHECK(server.requests("/data.gz") == 2);
  CHECK(listing(tmp.path) == std::vector<std::string>{"data.gz"});
}

TEST_CASE("download_dataset: a cached file cut short or corrupted is downloaded again, once; then an error names it") {
  TempDir tmp;
  LocalServer server;
  set_dataset_root(tmp.path / "root");
  fs::create_directories(tmp.path / "served");
  write_small_mnist(tmp.path / "served");
  DatasetSource source = datasets::mnist_source();
  source.mirrors = {server.base_url()};
  for (RemoteFile& file : source.files) {
    const std::string bytes = read_file(tmp.path / "served" / file.name);
    server.route("/" + file.name, {200, bytes});
    file.sha256 = sha256_file(tmp.path / "served" / file.name);
    file.size = bytes.size();
  }
  const fs::path dir = download_dataset(source);
  const RemoteFile& images = source.files[0];
  const RemoteFile& labels = source.files[3];
  const std::string whole = read_file(dir / images.name);

  // Cut short (as by a full disk): downloaded again, the others left alone.
  write_file(dir / images.name, whole.substr(0, 100));
  CHECK(download_dataset(source) == dir);
  CHECK(read_file(dir / images.name) == whole);
  CHECK(server.requests("/" + images.name) == 2);
  for (size_t i = 1; i < 4; ++i) CHECK(server.requests("/" + source.files[i].name) == 1);

  // Corrupted in place, its size unchanged: downloaded again.
  std::string flipped = whole;
  flipped[flipped.size() / 2] ^= 1;
  write_file(dir / images.name, flipped);
  download_dataset(source);
  CHECK(read_file(dir / images.name) == whole);
  CHECK(server.requests("/" + images.name) == 3);

  // The server's copy is wrong too: one more request, then an error naming the cached file, its
  // size and SHA-256 against those expected, and the URL with what it served. The damaged file
  // stays as it was, and the next call tries again.
  const std::string good_labels = read_file(dir / labels.name);
  const std::string short_labels = good_labels.substr(0, 10);
  write_file(dir / labels.name, short_labels);
  std::string served = good_labels;
  served[0] ^= 1;
  server.route("/" + labels.name, {200, served});
  const std::string short_sum = sha256_of(short_labels, tmp.path / "scratch");
  const std::string served_sum = sha256_of(served, tmp.path / "scratch");
  try {
    download_dataset(source);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Contains("MNIST: cannot download " + labels.name + " from any of its 1 mirror:\n  " +
                              server.url(labels.name) + ": checksum mismatch: expected SHA-256 " + labels.sha256 +
                              ", got " + served_sum + " over the " + std::to_string(served.size()) +
                              " bytes that arrived"));
    CHECK_THAT(what, Contains("\nIt was downloaded again because the cached file '" + (dir / labels.name).string() +
                              "' is 10 bytes (expected " + std::to_string(labels.size) + " bytes: cut short), SHA-256 " +
                              short_sum + " (expected " + labels.sha256 + "); that file was left as it was"));
    CHECK_THAT(what, Contains("by hand"));
  }
  CHECK(server.requests("/" + labels.name) == 2);
  CHECK(read_file(dir / labels.name) == short_labels);
  CHECK(partials(dir).empty());
  set_dataset_root("");
}

TEST_CASE("CIFAR's archives are downloaded checked against their MD5: a mismatch leaves nothing, a match is read") {
  const DatasetSource& cifar10 = datasets::cifar10_source();
  const DatasetSource& cifar100 = datasets::cifar100_source();
  CHECK(cifar10.directory == "pfnet/chainer/cifar");
  CHECK(cifar100.directory == "pfnet/chainer/cifar");
  CHECK(cifar10.mirrors == std::vector<std::string>{"https://www.cs.toronto.edu/~kriz/"});
  REQUIRE(cifar10.files.size() == 1);
  REQUIRE(cifar100.files.size() == 1);
  // The sums and sizes the CIFAR page publishes (it gives MD5 only).
  CHECK(cifar10.files[0].name == "cifar-10-binary.tar.gz");
  CHECK(cifar10.files[0].md5 == "c32a1d4ab5d03f1284b67883e8d87530");
  CHECK(cifar10.files[0].size == 170052171);
  CHECK(cifar100.files[0].name == "cifar-100-binary.tar.gz");
  CHECK(cifar100.files[0].md5 == "03b5dce01913d631647c71ecec9e9cb8");
  CHECK(cifar100.files[0].size == 168513733);

  TempDir tmp;
  LocalServer server;
  set_dataset_root(tmp.path / "root");
  const Bytes archive = gzip(small_cifar10_tar());
  server.route("/cifar-10-binary.tar.gz", {200, archive});
  DatasetSource source = cifar10;
  source.mirrors = {server.base_url()};
  const fs::path dir = get_dataset_directory("pfnet/chainer/cifar");
  // The small archive is not the real one: its MD5 is not the published one.
  try {
    download_dataset(source);
    FAIL("a download with the wrong MD5 succeeded");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Contains("CIFAR-10: cannot download cifar-10-binary.tar.gz from any of its 1 mirror:"));
    CHECK_THAT(what, Contains("checksum mismatch: expected MD5 c32a1d4ab5d03f1284b67883e8d87530, got "));
    CHECK_THAT(what, Contains(" bytes that arrived (expected 170052171 bytes: cut short)"));
  }
  CHECK(listing(dir).empty());  // nothing under the name, no partial file left
  // With its own MD5 the same bytes arrive whole and read as CIFAR-10.
  write_file(tmp.path / "archive", archive);
  source.files[0].md5 = md5_file(tmp.path / "archive");
  source.files[0].size = archive.size();
  CHECK(download_dataset(source) == dir);
  CHECK(read_file(dir / "cifar-10-binary.tar.gz") == archive);
  CHECK(datasets::get_cifar10(dir).first->size() == 7);
  CHECK(server.requests("/cifar-10-binary.tar.gz") == 2);
  set_dataset_root("");
}
