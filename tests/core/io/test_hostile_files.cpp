// Hostile files: what every reader of files (images, image lists, NPZ and NPY, IDX) does with a
// file whose header lies about its size, a file that is not a regular file, or a list line that
// leaves its root. Each must be refused with a message naming the file (and the line or entry)
// and what was expected, before anything of the declared size is allocated.
//
// The table runs under a memory limit (tests/core/io/hostile_files.sh: ulimit -v), far below what the
// lies declare, so a reader that allocates on a header's word fails here with std::bad_alloc
// instead of swapping; a reader that waits on a FIFO is ended by an alarm naming the case.
#include <catch2/catch.hpp>
#include <png.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/io/npz.h"
#include "dataset_files.h"
#include "datasets/dataset_description.h"
#include "datasets/idx.h"
#include "datasets/image_dataset.h"
#include "datasets/image_io.h"
#include "datasets/preprocessed_image_dataset.h"
#include "jpeg_bytes.h"

using namespace chainer;
using namespace chainer::datasets;
using namespace chainer::testing;
using Catch::Contains;

namespace {

// ---- the table ----

// The case now running, for the alarm's message.
const char* g_case = "";

extern "C" void on_alarm(int) {
  const char prefix[] = "\nhostile files: a reader hung (a FIFO read or opened?) in the case: ";
  (void)!::write(2, prefix, sizeof prefix - 1);
  (void)!::write(2, g_case, std::strlen(g_case));
  (void)!::write(2, "\n", 1);
  ::_exit(1);
}

// One hostile file: what reading it does, and what its error must say.
struct Case {
  std::string name;
  std::function<void()> read;
  std::vector<std::string> expected;  // every one of these in the message
};

// Runs each case: READ must throw chainer::Error containing every expected string, within
// seconds. A std::bad_alloc (the memory limit hit: something was allocated on a header's word)
// or any other exception fails the case with its message.
void run_table(const std::vector<Case>& cases) {
  std::signal(SIGALRM, on_alarm);
  for (const Case& c : cases) {
    INFO("case: " << c.name);
    g_case = c.name.c_str();
    ::alarm(20);
    std::string message;
    bool threw_error = false;
    try {
      c.read();
    } catch (const Error& e) {
      threw_error = true;
      message = e.what();
    } catch (const std::bad_alloc&) {
      message = "std::bad_alloc: it allocated what the file declares, past the memory limit";
    } catch (const std::exception& e) {
      message = std::string("not a chainer::Error: ") + e.what();
    }
    ::alarm(0);
    INFO("message: " << message);
    CHECK(threw_error);
    for (const std::string& part : c.expected) CHECK_THAT(message, Contains(part));
  }
  g_case = "";
}

// Sets NAME to VALUE for the scope (unset again after).
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

// ---- PNG and JPEG ----

void put_be32(Bytes& b, uint32_t v) { put_u32(b, v); }

// A PNG chunk: length, type, data, CRC-32 of type and data.
Bytes png_chunk(const std::string& type, const Bytes& data) {
  Bytes b;
  put_be32(b, uint32_t(data.size()));
  b += type + data;
  put_be32(b, chainer::testing::crc32(type + data));
  return b;
}

// A PNG that declares WIDTH x HEIGHT pixels of COLOR_TYPE at 8 bits, followed by EXTRA chunks
// and an IDAT of a few bytes (no real pixel data), as a forger would write it.
Bytes forged_png(uint32_t width, uint32_t height, int color_type, const Bytes& extra = "") {
  Bytes ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr += Bytes{8, char(color_type), 0, 0, 0};  // bit depth, colour type, compression, filter, interlace
  Bytes b = "\x89PNG\r\n\x1a\n";
  b += png_chunk("IHDR", ihdr) + extra + png_chunk("IDAT", Bytes("\x78\x9c\x03\x00\x00\x00\x00\x01", 8));
  return b + png_chunk("IEND", "");
}

// JPEG with the frame header (SOF0 or SOF2) patched to declare WIDTH x HEIGHT.
Bytes forge_jpeg_size(Bytes jpeg, uint16_t width, uint16_t height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i)
    if (uint8_t(jpeg[i]) == 0xff && (uint8_t(jpeg[i + 1]) == 0xc0 || uint8_t(jpeg[i + 1]) == 0xc2)) {
      jpeg[i + 5] = char(height >> 8), jpeg[i + 6] = char(height & 0xff);
      jpeg[i + 7] = char(width >> 8), jpeg[i + 8] = char(width & 0xff);
      return jpeg;
    }
  FAIL("no frame header in the JPEG");
  return jpeg;
}

Tensor pattern(int64_t C, int64_t H, int64_t W) {
  std::vector<uint8_t> v;
  for (int64_t i = 0; i < C * H * W; ++i) v.push_back(uint8_t(i * 37 % 256));
  return Tensor::from_vector(v, {C, H, W});
}

// ---- NPZ and NPY ----

void put_le16(Bytes& b, uint32_t v) { b.push_back(char(v & 0xff)), b.push_back(char((v >> 8) & 0xff)); }

// An NPY v1.0 array: DESCR, SHAPE as numpy writes it ("(3, 4)"), then DATA as given.
Bytes npy(const std::string& descr, const std::string& shape, const Bytes& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  Bytes b = "\x93NUMPY\x01";
  b.push_back('\0');
  put_le16(b, uint32_t(header.size()));
  return b + header + data;
}

// Raw deflate of DATA (what a ZIP's method 8 holds).
Bytes deflated(const Bytes& data) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  Bytes out(deflateBound(&zs, uLong(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = uInt(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// One member's bytes in the archive.
struct Member {
  std::string name;
  Bytes data;      // as stored: raw, or deflated when METHOD is 8
  uint16_t method;
  uint32_t crc, size;  // of the uncompressed data
};

Member stored(const std::string& name, const Bytes& npy_bytes) {
  return {name, npy_bytes, 0, uint32_t(::crc32(0, reinterpret_cast<const Bytef*>(npy_bytes.data()), uInt(npy_bytes.size()))),
          uint32_t(npy_bytes.size())};
}
Member compressed(const std::string& name, const Bytes& npy_bytes) {
  Member m = stored(name, npy_bytes);
  m.data = deflated(npy_bytes), m.method = 8;
  return m;
}

// A directory entry: NAME pointing at member AT, declaring SIZE uncompressed and STORED
// compressed bytes (else the member's own).
struct Ref {
  std::string name;
  size_t at;
  std::optional<uint32_t> size, stored = std::nullopt;
};

// A ZIP archive of MEMBERS whose central directory lists REFS (by default one per member).
Bytes zip(const std::vector<Member>& members, std::vector<Ref> refs = {}) {
  if (refs.empty())
    for (size_t i = 0; i < members.size(); ++i) refs.push_back({members[i].name, i, std::nullopt});
  auto le32 = [](Bytes& b, uint32_t v) { put_le32(b, v); };
  Bytes archive, central;
  std::vector<uint32_t> offsets;
  for (const Member& m : members) {
    offsets.push_back(uint32_t(archive.size()));
    le32(archive, 0x04034b50);
    put_le16(archive, 20), put_le16(archive, 0), put_le16(archive, m.method), put_le16(archive, 0), put_le16(archive, 0x21);
    le32(archive, m.crc), le32(archive, uint32_t(m.data.size())), le32(archive, m.size);
    put_le16(archive, uint32_t(m.name.size())), put_le16(archive, 0);
    archive += m.name + m.data;
  }
  for (const Ref& r : refs) {
    const Member& m = members[r.at];
    le32(central, 0x02014b50);
    put_le16(central, 20), put_le16(central, 20), put_le16(central, 0), put_le16(central, m.method);
    put_le16(central, 0), put_le16(central, 0x21);
    le32(central, m.crc), le32(central, r.stored.value_or(uint32_t(m.data.size()))), le32(central, r.size.value_or(m.size));
    put_le16(central, uint32_t(r.name.size())), put_le16(central, 0), put_le16(central, 0);
    put_le16(central, 0), put_le16(central, 0), le32(central, 0), le32(central, offsets[r.at]);
    central += r.name;
  }
  const uint32_t central_at = uint32_t(archive.size());
  archive += central;
  le32(archive, 0x06054b50);
  put_le16(archive, 0), put_le16(archive, 0), put_le16(archive, uint32_t(refs.size())), put_le16(archive, uint32_t(refs.size()));
  le32(archive, uint32_t(central.size())), le32(archive, central_at), put_le16(archive, 0);
  return archive;
}

Bytes floats(size_t n) { return Bytes(n * 4, '\0'); }

// ---- IDX ----

Bytes idx_header(uint32_t magic, const std::vector<uint32_t>& extents) {
  Bytes b;
  put_u32(b, magic);
  for (uint32_t e : extents) put_u32(b, e);
  return b;
}

}  // namespace

TEST_CASE("hostile files: the table runs under a memory limit, far below what the files declare", "[hostile]") {
  // tests/core/io/hostile_files.sh sets it (ulimit -v); without it a regression would swap, not fail.
  rlimit limit{};
  REQUIRE(::getrlimit(RLIMIT_AS, &limit) == 0);
  INFO("run this binary through tests/core/io/hostile_files.sh, which sets ulimit -v");
  REQUIRE(limit.rlim_cur != RLIM_INFINITY);
  CHECK(limit.rlim_cur <= (rlim_t(2) << 30));
}

TEST_CASE("hostile images: sizes a header declares are checked against the file and the limit first", "[hostile]") {
  TempDir dir;
  auto file = [&](const std::string& name, const Bytes& bytes) {
    const std::string path = (dir.path / name).string();
    write_file(path, bytes);
    return path;
  };
  const std::string png60k = file("60k.png", forged_png(60000, 60000, PNG_COLOR_TYPE_RGB));
  const std::string png100k = file("100k.png", forged_png(100000, 100000, PNG_COLOR_TYPE_GRAY));
  // 6 MB of an unknown chunk make 40000 x 40000 RGB plausible for deflate's ratio (4.8 GB of
  // pixels in 6 MB), but decoded as float32 it is 19.2 GB: the limit refuses it.
  const std::string padded = file("padded.png", forged_png(40000, 40000, PNG_COLOR_TYPE_RGB,
                                                           png_chunk("juNk", Bytes(6000000, 'x'))));
  const std::string jpeg65k = file("65k.jpg", forge_jpeg_size(jpeg_bytes(pattern(1, 8, 8)), 65500, 65500));
  const std::string rgb65k = file("65k_rgb.jpg", forge_jpeg_size(jpeg_bytes(pattern(3, 16, 16)), 65500, 65500));
  const std::string progressive65k =
      file("65k_progressive.jpg", forge_jpeg_size(jpeg_bytes(pattern(1, 8, 8), 100, true), 65500, 65500));
  const std::string small = file("small.png", Bytes());
  write_png(small, pattern(3, 64, 64));
  const std::string small_jpeg = file("small.jpg", jpeg_bytes(pattern(3, 64, 64), 100, true));
  ::mkfifo((dir.path / "fifo.png").c_str(), 0600);
  const std::string fifo = (dir.path / "fifo.png").string();
  fs::create_directories(dir.path / "dir.png");
  const std::string directory = (dir.path / "dir.png").string();

  run_table({
      {"a PNG of 45 bytes claiming 60000 x 60000 RGB",
       [&] { read_image(png60k); },
       {"read_image: '" + png60k + "' is not a valid PNG", "declares 60000 x 60000 pixels",
        "the file has only " + std::to_string(fs::file_size(png60k)) + " bytes", "deflate compresses at most 1032:1"}},
      {"a PNG claiming 100000 x 100000 gray",
       [&] { read_image(png100k, DType::UInt8); },
       {"'" + png100k + "' is not a valid PNG", "100000 x 100000"}},
      {"a PNG whose size deflate allows, but whose decoded image passes the limit",
       [&] { read_image(padded); },
       {"read_image: '" + padded + "' is a 40000 x 40000 PNG of 3 channels", "as float32 needs 19200000000 bytes",
        "more than the limit of 1073741824 (CHAINER_IMAGE_MAX_BYTES"}},
      {"a sequential JPEG of a few hundred bytes claiming 65500 x 65500",
       [&] { read_image(jpeg65k); },
       {"read_image: '" + jpeg65k + "' is not a valid JPEG", "declares 65500 x 65500 pixels", "at least 8380418 bytes"}},
      {"an RGB JPEG claiming 65500 x 65500",
       [&] { read_image(rgb65k, DType::UInt8); },
       {"'" + rgb65k + "' is not a valid JPEG", "65500 x 65500"}},
      {"a progressive JPEG claiming 65500 x 65500 (no size floor: the limit refuses it)",
       [&] { read_image(progressive65k, DType::UInt8); },
       {"read_image: '" + progressive65k + "' is a 65500 x 65500 JPEG of 1 channel", "more than the limit of 1073741824"}},
      {"a real PNG over a lowered CHAINER_IMAGE_MAX_BYTES",
       [&] {
         ScopedEnv env("CHAINER_IMAGE_MAX_BYTES", "40000");
         read_image(small);
       },
       {"'" + small + "' is a 64 x 64 PNG of 3 channels: decoding it as float32 needs 49152 bytes",
        "more than the limit of 40000 (CHAINER_IMAGE_MAX_BYTES"}},
      {"a real progressive JPEG over a lowered CHAINER_IMAGE_MAX_BYTES",
       [&] {
         ScopedEnv env("CHAINER_IMAGE_MAX_BYTES", "12288");
         read_image(small_jpeg, DType::Float64);
       },
       {"'" + small_jpeg + "' is a 64 x 64 JPEG of 3 channels: decoding it as float64 needs 98304 bytes"}},
      {"an image file larger than the limit",
       [&] {
         ScopedEnv env("CHAINER_IMAGE_MAX_BYTES", "1000000");
         read_image(padded);
       },
       {"read_image: '" + padded + "' is " + std::to_string(fs::file_size(padded)) +
        " bytes, more than the limit of 1000000 bytes for one image"}},
      {"CHAINER_IMAGE_MAX_BYTES that is not a whole number",
       [&] {
         ScopedEnv env("CHAINER_IMAGE_MAX_BYTES", "1G");
         read_image(small);
       },
       {"CHAINER_IMAGE_MAX_BYTES expects an integer, got '1G'"}},
      {"CHAINER_IMAGE_MAX_BYTES of 0",
       [&] {
         ScopedEnv env("CHAINER_IMAGE_MAX_BYTES", "0");
         read_image(small);
       },
       {"CHAINER_IMAGE_MAX_BYTES must be at least 1, got 0"}},
      {"/dev/zero as an image", [] { read_image("/dev/zero"); },
       {"read_image: '/dev/zero' is a character device, not a regular file"}},
      {"a FIFO as an image (no writer: opening it would wait forever)", [&] { read_image(fifo); },
       {"read_image: '" + fifo + "' is a FIFO (named pipe), not a regular file"}},
      {"a directory as an image", [&] { read_image(directory); },
       {"read_image: '" + directory + "' is a directory, not a regular file"}},
  });
  // The real ones under the default limit still read.
  CHECK(read_image(small).shape() == Shape{3, 64, 64});
  CHECK(read_image(small_jpeg).shape() == Shape{3, 64, 64});
}

TEST_CASE("hostile lists: files that are not files, labels past the dtype, paths that leave the root", "[hostile]") {
  TempDir dir;
  fs::create_directories(dir.path / "root" / "sub");
  write_png((dir.path / "root" / "a.png").string(), pattern(3, 4, 4));
  write_png((dir.path / "outside.png").string(), pattern(3, 4, 4));
  ::mkfifo((dir.path / "root" / "fifo.png").c_str(), 0600);
  ::mkfifo((dir.path / "list_fifo.txt").c_str(), 0600);
  const std::string root = (dir.path / "root").string(), fifo_list = (dir.path / "list_fifo.txt").string();
  auto list = [&](const std::string& name, const std::string& text) {
    const std::string path = (dir.path / name).string();
    write_file(path, text);
    return path;
  };
  const std::string big_label = list("big_label.txt", "a.png 1\na.png 9999999999\n");
  const std::string huge_label = list("huge_label.txt", "a.png -99999999999999999999\n");
  const std::string byte_label = list("byte_label.txt", "a.png 256\n");
  const std::string up = list("up.txt", "a.png 0\nsub/../../outside.png 1\n");
  const std::string absolute = list("absolute.txt", "a.png\n\n" + (dir.path / "outside.png").string() + "\n");
  const std::string zero = list("zero.txt", "/dev/zero 0\n");
  const std::string with_dir = list("with_dir.txt", "a.png 0\nsub 1\n");
  const std::string with_fifo = list("with_fifo.txt", "fifo.png 0\n");

  run_table({
      {"a label past int32, reported as written",
       [&] { LabeledImageDataset d(big_label, root); },
       {"LabeledImageDataset: '" + big_label + "' line 2: the label 9999999999 does not fit the labels' dtype int32 "
        "(-2147483648 to 2147483647)"}},
      {"a label past int64, reported as written",
       [&] { LabeledImageDataset d(huge_label, root, DType::Float32, DType::Int64); },
       {"'" + huge_label + "' line 1: the label -99999999999999999999 does not fit the labels' dtype int64"}},
      {"a label past uint8",
       [&] { LabeledImageDataset d(byte_label, root, DType::Float32, DType::UInt8); },
       {"line 1: the label 256 does not fit the labels' dtype uint8 (0 to 255)"}},
      {"a label past int32 given as a pair",
       [&] { LabeledImageDataset d({{"a.png", 0}, {"a.png", int64_t(1) << 40}}, root); },
       {"LabeledImageDataset: pair 1 ('a.png'): the label 1099511627776 does not fit the labels' dtype int32"}},
      {"a path that climbs out of the root with ..",
       [&] { LabeledImageDataset d(up, root); },
       {"LabeledImageDataset: '" + up + "' line 2: the path 'sub/../../outside.png' climbs above the root with '..'",
        "outside the root '" + root + "'", "allow_outside_root", "--allow-outside-root"}},
      {"an absolute path in an ImageDataset list",
       [&] { ImageDataset d(absolute, root); },
       {"ImageDataset: '" + absolute + "' line 3: the path '" + (dir.path / "outside.png").string() + "' is absolute"}},
      {"an absolute path given as a pair",
       [&] { LabeledImageDataset d({{"/etc/passwd", 0}}, root); },
       {"LabeledImageDataset: pair 0 ('/etc/passwd'): the path '/etc/passwd' is absolute"}},
      {"an absolute path given to ImageDataset",
       [&] { ImageDataset d(std::vector<std::string>{"a.png", "../x.png"}, root); },
       {"ImageDataset: path 1: the path '../x.png' climbs above the root"}},
      {"/dev/zero named by a list (allowed outside the root): refused when read",
       [&] { LabeledImageDataset(zero, root, DType::Float32, DType::Int32, true).get_example(0); },
       {"read_image: '/dev/zero' is a character device, not a regular file"}},
      {"a directory named by a list", [&] { LabeledImageDataset(with_dir, root).get_example(1); },
       {"read_image: '" + (fs::path(root) / "sub").string() + "' is a directory, not a regular file"}},
      {"a FIFO named by a list", [&] { LabeledImageDataset(with_fifo, root).get_example(0); },
       {"read_image: '" + (fs::path(root) / "fifo.png").string() + "' is a FIFO (named pipe), not a regular file"}},
      {"/dev/zero as the list file", [&] { LabeledImageDataset d("/dev/zero", root); },
       {"LabeledImageDataset: the list file '/dev/zero' is a character device, not a regular file"}},
      {"a FIFO as the list file", [&] { ImageDataset d(fifo_list, root); },
       {"ImageDataset: the list file '" + fifo_list + "' is a FIFO (named pipe), not a regular file"}},
      {"a directory as the list file", [&] { LabeledImageDataset d(root, root); },
       {"LabeledImageDataset: the list file '" + root + "' is a directory, not a regular file"}},
  });

  // allow_outside_root reads them, as Chainer's os.path.join does, and travels with a share.
  const LabeledImageDataset allowed(up, root, DType::UInt8, DType::Int32, true);
  CHECK(allowed.allow_outside_root());
  CHECK(allowed.get_example(1)[0].shape() == Shape{3, 4, 4});
  const auto share = std::dynamic_pointer_cast<const LabeledImageDataset>(build_dataset(*allowed.describe({1})));
  REQUIRE(share);
  CHECK(share->allow_outside_root());
  CHECK(share->get_example(0)[0].shape() == Shape{3, 4, 4});
  CHECK(ImageDataset(absolute, root, DType::UInt8, true).get_example(2)[0].shape() == Shape{3, 4, 4});
  // ".." that stays under the root is no escape; labels at int32's ends fit.
  const std::string inside = list("inside.txt", "sub/../a.png 2147483647\n./a.png -2147483648\n");
  const LabeledImageDataset d(inside, root);
  CHECK(d.get_example(0)[1].item<int32_t>() == 2147483647);
  CHECK(d.get_example(1)[1].item<int32_t>() == -2147483648);
  // int64 labels past 2^53 stay exact (not rounded through a double).
  const LabeledImageDataset wide({{"a.png", (int64_t(1) << 60) + 1}}, root, DType::UInt8, DType::Int64);
  CHECK(wide.get_example(0)[1].item<int64_t>() == (int64_t(1) << 60) + 1);
}

TEST_CASE("hostile images in the ImageNet preprocessing: a gray or RGBA image among RGB ones is named", "[hostile]") {
  TempDir dir;
  write_png((dir.path / "rgb.png").string(), pattern(3, 6, 6));
  write_png((dir.path / "gray.png").string(), pattern(1, 6, 6));
  write_png((dir.path / "rgba.png").string(), pattern(4, 6, 6));
  write_png((dir.path / "wide.png").string(), pattern(3, 6, 7));
  auto images = std::make_shared<LabeledImageDataset>(
      std::vector<LabeledImageDataset::Pair>{{"rgb.png", 0}, {"gray.png", 1}, {"rgba.png", 2}, {"wide.png", 3}},
      dir.path.string());
  const PreprocessedImageDataset d(images, Tensor::zeros({3, 6, 6}), 4, false);
  CHECK(d.get_example(0)[0].shape() == Shape{3, 4, 4});
  run_table({
      {"a gray image", [&] { d.get_example(1); },
       {"PreprocessedImageDataset: example 1 ('" + (dir.path / "gray.png").string() + "')",
        "the image has shape (1, 6, 6) and the mean (3, 6, 6)", "1 channel (gray) but every image must have the mean's 3 (RGB)"}},
      {"an RGBA image", [&] { d.get_example(2); },
       {"example 2 ('" + (dir.path / "rgba.png").string() + "')", "4 channels (RGBA)"}},
      {"an image of another size", [&] { d.get_example(3); },
       {"example 3 ('" + (dir.path / "wide.png").string() + "')", "every image must be 6 x 6, the mean image's size"}},
  });
}

TEST_CASE("hostile NPZ and NPY: declared sizes against the entries' real bytes, overlaps, the limit", "[hostile]") {
  TempDir dir;
  auto file = [&](const std::string& name, const Bytes& bytes) {
    const std::string path = (dir.path / name).string();
    write_file(path, bytes);
    return path;
  };
  const Bytes array = npy("<f4", "(4,)", floats(4));  // 144 bytes: a header of 10 + 118, then 16
  // A stored entry whose directory declares 4 GiB: the bytes are not in the file.
  const std::string stored4g =
      file("stored4g.npz", zip({stored("w.npy", array)}, {{"w.npy", 0, 0xfffffff0u, 0xfffffff0u}}));
  // A stored entry declaring 4 GiB uncompressed from its 144 stored bytes.
  const std::string sizes_differ = file("sizes_differ.npz", zip({stored("w.npy", array)}, {{"w.npy", 0, 0xfffffff0u}}));
  // A deflated entry declaring 4 GiB from a few compressed bytes.
  const std::string deflated4g = file("deflated4g.npz", zip({compressed("w.npy", array)}, {{"w.npy", 0, 0xfffffff0u}}));
  // One 4 MB array, listed 1000 times under other names: 4 GB from a 4 MB file.
  std::vector<Ref> aliases;
  for (int i = 0; i < 1000; ++i) aliases.push_back({"w" + std::to_string(i) + ".npy", 0, std::nullopt});
  const std::string aliased = file("aliased.npz", zip({stored("w.npy", npy("<f4", "(1000000,)", floats(1000000)))}, aliases));
  // A deflated entry declaring 20 bytes, too few for its NPY header.
  Member short_entry = compressed("w.npy", array);
  short_entry.size = 20;
  const std::string too_short = file("too_short.npz", zip({short_entry}));
  // Deflated entries that inflate to fewer or more bytes than their directory declares.
  Member fewer = compressed("w.npy", npy("<f4", "(8,)", floats(4)));
  fewer.size += 16;
  const std::string inflates_fewer = file("inflates_fewer.npz", zip({fewer}));
  Member more = compressed("w.npy", array + floats(4));
  more.size -= 16;
  const std::string inflates_more = file("inflates_more.npz", zip({more}));
  // NPY headers that declare more than follows.
  const std::string npy_huge = file("huge.npy", npy("<f4", "(100000, 100000)", floats(3)));
  const std::string npy_overflow = file("overflow.npy", npy("<f8", "(4294967296, 4294967296)", ""));
  const std::string npy_negative = file("negative.npy", npy("<f4", "(-1, 4)", floats(4)));
  const std::string npz_huge = file("huge.npz", zip({compressed("w.npy", npy("<f4", "(100000, 100000)", floats(3)))}));
  const std::string real = (dir.path / "real.npz").string();
  save_npz(real, {{"w", Tensor::ones({1000})}});
  ::mkfifo((dir.path / "fifo.npz").c_str(), 0600);
  const std::string fifo = (dir.path / "fifo.npz").string();

  run_table({
      {"a stored entry declaring 4 GiB", [&] { load_npz(stored4g); },
       {"load_npz: '" + stored4g + "' is not a valid NPZ file",
        "entry 'w.npy' declares 4294967280 bytes at offset 35, past the end of its data (179): truncated member"}},
      {"a stored entry declaring 4 GiB uncompressed from 144 bytes", [&] { load_npz(sizes_differ); },
       {"'" + sizes_differ + "' is not a valid NPZ file",
        "entry 'w.npy' is stored uncompressed in 144 bytes but declares 4294967280"}},
      {"a deflated entry declaring 4 GiB from a few bytes", [&] { load_npz(deflated4g); },
       {"'" + deflated4g + "' is not a valid NPZ file", "entry 'w.npy' declares 4294967280 bytes inflated from",
        "deflate expands at most 1032 times"}},
      {"1000 entries sharing one array's bytes", [&] { load_npz(aliased); },
       {"'" + aliased + "' is not a valid NPZ file", "share the bytes from offset 0 on",
        "an archive's entries never overlap"}},
      {"a deflated entry declaring too few bytes for its NPY header", [&] { load_npz(too_short); },
       {"load_npz: '" + too_short + "' entry 'w' has a header of 118 bytes but only 10 bytes follow"}},
      {"a deflated entry inflating to fewer bytes than it declares", [&] { load_npz(inflates_fewer); },
       {"load_npz: '" + inflates_fewer + "' entry 'w' inflates to fewer than the 160 bytes its ZIP header declares"}},
      {"a deflated entry inflating to more bytes than it declares", [&] { load_npz(inflates_more); },
       {"load_npz: '" + inflates_more + "' entry 'w' inflates to more than the 144 bytes its ZIP header declares"}},
      {"an NPY header declaring 100000 x 100000 over 12 bytes", [&] { load_npy(npy_huge); },
       {"load_npy: '" + npy_huge + "' holds 12 data bytes but shape (100000, 100000) of float32 needs 40000000000"}},
      {"an NPY shape whose size overflows 64 bits", [&] { load_npy(npy_overflow); },
       {"load_npy: '" + npy_overflow + "' holds 0 data bytes", "needs more than 2^64"}},
      {"a negative extent", [&] { load_npy(npy_negative); },
       {"load_npy: '" + npy_negative + "' has the extent '-1' in its shape", "expected non-negative integers"}},
      {"an NPZ entry's NPY header declaring 100000 x 100000", [&] { load_npz(npz_huge); },
       {"load_npz: '" + npz_huge + "' entry 'w' holds 12 data bytes but shape (100000, 100000) of float32 needs"}},
      {"a real NPZ over a lowered CHAINER_NPZ_MAX_BYTES",
       [&] {
         ScopedEnv env("CHAINER_NPZ_MAX_BYTES", "1000");
         load_npz(real);
       },
       {"load_npz: '" + real + "' holds 4128 bytes of arrays, more than the limit of 1000 bytes (CHAINER_NPZ_MAX_BYTES",
        "set CHAINER_NPZ_MAX_BYTES to at least 4128"}},
      {"CHAINER_NPZ_MAX_BYTES that is not a whole number",
       [&] {
         ScopedEnv env("CHAINER_NPZ_MAX_BYTES", "4G");
         load_npz(real);
       },
       {"CHAINER_NPZ_MAX_BYTES expects an integer, got '4G'"}},
      {"/dev/zero as an NPZ (a snapshot to resume)", [] { load_npz("/dev/zero"); },
       {"load_npz: '/dev/zero' is a character device, not a regular file"}},
      {"/dev/zero as an NPY (the mean image)", [] { load_npy("/dev/zero"); },
       {"load_npy: '/dev/zero' is a character device, not a regular file"}},
      {"a FIFO as an NPZ", [&] { load_npz(fifo); }, {"load_npz: '" + fifo + "' is a FIFO (named pipe), not a regular file"}},
      {"a directory as an NPZ", [&] { load_npz(dir.path.string()); },
       {"load_npz: '" + dir.path.string() + "' is a directory, not a regular file"}},
  });

  // What numpy.savez and numpy.savez_compressed write still loads: stored and deflated entries,
  // empty arrays, several entries.
  const std::string good = file("good.npz", zip({stored("a.npy", npy("<i8", "(2, 3)", Bytes(48, '\1'))),
                                                 compressed("b.npy", npy("<f4", "(1000,)", floats(1000))),
                                                 compressed("e.npy", npy("<f4", "(0, 3)", ""))}));
  const TensorMap m = load_npz(good);
  REQUIRE(m.size() == 3);
  CHECK(m.at("a").shape() == Shape{2, 3});
  CHECK(m.at("a").to_vector<int64_t>()[0] == 0x0101010101010101);
  CHECK(m.at("b").to_vector<float>() == std::vector<float>(1000, 0.f));
  CHECK(m.at("e").shape() == Shape{0, 3});
  CHECK(load_npz(real).at("w").to_vector<float>() == std::vector<float>(1000, 1.f));
}

TEST_CASE("hostile IDX files: counts against the file's size, and files that are not files", "[hostile]") {
  TempDir dir;
  auto file = [&](const std::string& name, const Bytes& bytes) {
    const fs::path path = dir.path / name;
    write_file(path, bytes);
    return path;
  };
  // A million images of 1024 x 1024 (1 TB) declared by 16 bytes, plain and gzip-compressed.
  const fs::path plain = file("images-idx3-ubyte", idx_header(2051, {1000000, 1024, 1024}));
  const fs::path gz = file("images-idx3-ubyte.gz", gzip(idx_header(2051, {1000000, 1024, 1024})));
  const fs::path labels = file("labels-idx1-ubyte.gz", gzip(idx_header(2049, {4000000000u})));
  const fs::path overflow = file("overflow-idx3-ubyte", idx_header(2051, {0xffffffffu, 0xffffffffu, 0xffffffffu}));
  fs::create_directories(dir.path / "dir-idx3-ubyte");
  ::mkfifo((dir.path / "fifo-idx3-ubyte").c_str(), 0600);

  run_table({
      {"an uncompressed IDX file declaring 1 TB in 16 bytes", [&] { load_idx_images(plain); },
       {"IDX file '" + plain.string() + "' is truncated: expected 1048576000016 bytes, got 16"}},
      {"a gzip IDX file declaring 1 TB", [&] { load_idx_images(gz); },
       {"IDX file '" + gz.string() + "' declares 1000000 x 1024 x 1024 values (1048576000016 bytes), more than its " +
            std::to_string(fs::file_size(gz)) + " bytes of gzip data can hold"}},
      {"a gzip label file declaring 4e9 labels", [&] { load_idx_labels(labels); },
       {"IDX file '" + labels.string() + "' declares 4000000000 values"}},
      {"extents whose product overflows 64 bits", [&] { load_idx_images(overflow); },
       {"IDX file '" + overflow.string() + "' is truncated"}},
      {"a directory", [&] { load_idx_images(dir.path / "dir-idx3-ubyte"); },
       {"IDX file '" + (dir.path / "dir-idx3-ubyte").string() + "' is a directory, not a regular file"}},
      {"a FIFO", [&] { load_idx_images(dir.path / "fifo-idx3-ubyte"); },
       {"IDX file '" + (dir.path / "fifo-idx3-ubyte").string() + "' is a FIFO (named pipe), not a regular file"}},
      {"/dev/zero", [] { load_idx_labels("/dev/zero"); }, {"IDX file '/dev/zero' is a character device"}},
  });
}
