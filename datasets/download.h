/// @file
/// Where data sets are cached, and their download, as Chainer's chainer.dataset.download: a
/// data set lives in get_dataset_root() / its name ("pfnet/chainer/mnist"); the root is
/// set_dataset_root's path, else $CHAINER_DATASET_ROOT, else ~/.chainer/dataset. Files come
/// through libcurl (http and https, proxies from the usual environment variables) and each is
/// checked against its SHA-256 (or its MD5 where that is all its publisher gives; OpenSSL's
/// libcrypto) before it appears under its name: it is
/// written to a partial file in the same directory, "." NAME ".download-" and six letters and
/// digits, and renamed, so a file under its final name is always complete, also when several
/// processes download it at once. Every failure removes the partial file; one left by a killed
/// process is removed by the next download of that file, never one still being written (its
/// writer holds a lock on it, which ends with the writer's process). A transfer is
/// abandoned past a deadline or below a minimum rate (DownloadLimits), so a server that trickles
/// or stalls cannot hang the caller. A failure (offline, HTTP error status, cut-short transfer,
/// abandoned transfer, checksum mismatch) raises chainer::Error naming the URL, what went wrong,
/// and where to put the file by hand.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace chainer::dataset {

/// The directory under which data sets are downloaded and cached: the path given to
/// set_dataset_root, else $CHAINER_DATASET_ROOT, else ~/.chainer/dataset (as Chainer).
std::filesystem::path get_dataset_root();

/// Makes PATH the dataset root from now on, over $CHAINER_DATASET_ROOT (as Chainer); an empty
/// PATH goes back to $CHAINER_DATASET_ROOT or the default.
void set_dataset_root(const std::filesystem::path& path);

/// get_dataset_root() / DATASET_NAME (slashes separate directories), created first when
/// CREATE_DIRECTORY is set (as Chainer).
std::filesystem::path get_dataset_directory(const std::string& dataset_name, bool create_directory = true);

/// The SHA-256 of the bytes of the file at PATH, as 64 lowercase hex digits.
std::string sha256_file(const std::filesystem::path& path);

/// The MD5 of the bytes of the file at PATH, as 32 lowercase hex digits: the only sum some
/// publishers give (CIFAR's archives).
std::string md5_file(const std::filesystem::path& path);

/// When a download gives up on one file's transfer (from one mirror). Each limit is read from its
/// environment variable at every download, so a program can set them before it downloads.
struct DownloadLimits {
  /// Seconds one transfer may take in all, connecting included, however fast it runs; 0: no
  /// deadline. $CHAINER_DOWNLOAD_TIMEOUT, default 1800 (MNIST's largest file, 9.9 MB, arrives
  /// in that time at 5.5 kB/s; Fashion-MNIST's, 26 MB, at 15 kB/s).
  int64_t timeout = 1800;
  /// Bytes per second a transfer must average over every stretch of min_rate_time seconds
  /// (waiting for the server's answer included); 0: no minimum. $CHAINER_DOWNLOAD_MIN_RATE,
  /// default 1024.
  int64_t min_rate = 1024;
  /// The stretch over which min_rate is measured, at least 1 second.
  /// $CHAINER_DOWNLOAD_MIN_RATE_TIME, default 60.
  int64_t min_rate_time = 60;
};

/// The limits downloads run under: the defaults, each replaced by its environment variable where
/// that is set and not empty. A value that is not a whole number in range (a unit, a fraction, a
/// sign, a space) is a chainer::Error naming the variable and the value, rather than a default
/// used silently.
DownloadLimits download_limits();

/// Downloads URL to PATH (its directory is created when missing) and checks the bytes against
/// SHA256 (64 hex digits). Nothing appears at PATH unless the whole file arrived with that sum;
/// an existing file at PATH is replaced. Follows redirects; gives up on a connection that
/// cannot be made in 30 seconds, and on a transfer past download_limits().
void download_file(const std::string& url, const std::filesystem::path& path, const std::string& sha256);

/// One file of a data set: its name (in the data set's directory and at the end of its URLs),
/// the SHA-256 of its bytes (or, where its publisher gives none, their MD5), and their number
/// where known.
struct RemoteFile {
  std::string name;    ///< "train-images-idx3-ubyte.gz".
  std::string sha256;  ///< 64 hex digits; empty: the file is checked against md5 instead.
  uint64_t size = 0;   ///< Bytes; 0: not known. Lets messages call a short file cut short.
  std::string md5 = {};  ///< 32 hex digits, used only where sha256 is empty (CIFAR's archives).
};

/// Where a data set is cached and where it is downloaded from.
struct DatasetSource {
  std::string name;                  ///< As messages name it: "Fashion-MNIST".
  std::string directory;             ///< Its directory under the dataset root: "pfnet/chainer/fashion-mnist".
  std::vector<std::string> mirrors;  ///< Base URLs, each ending in '/', tried in order for each file.
  std::vector<RemoteFile> files;     ///< What the directory must hold; a file's URL is mirror + name.
};

/// SOURCE's directory under the dataset root, after downloading each of its files that is not
/// there yet, trying the mirrors in order. A file already there is checked against its SHA-256
/// (a few tens of milliseconds for MNIST); one that fails (cut short by a full disk, or damaged)
/// is downloaded again, once, and replaced only by a download that passes. When no
/// mirror serves a file, the error lists each mirror's failure, describes the damaged file if
/// there was one (its size and SHA-256 against those expected), and says where to put the files
/// by hand.
std::filesystem::path download_dataset(const DatasetSource& source);

}  // namespace chainer::dataset
