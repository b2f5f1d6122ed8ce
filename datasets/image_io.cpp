// libpng and libjpeg report errors by longjmp (libpng's png_error, libjpeg's error_exit), which
// must not cross C++ frames with destructors. Each decoding step that can fail is therefore a
// small function with only trivial locals around its setjmp; it returns false with the library's
// message, and the C++ caller throws. Warnings are never printed: libpng's are dropped, and a
// libjpeg warning about damaged data (a truncated file makes libjpeg pad it with gray and warn)
// is an error, as PIL refuses a truncated image.
//
// Sizes: the header is read first, and the pixels it declares are checked against the file's
// size and against image_max_bytes() before the pixel buffers are allocated; a file of a few
// bytes claiming 60000 x 60000 pixels would otherwise cost gigabytes before failing.
#include "datasets/image_io.h"

#include <jerror.h>
#include <png.h>
#include <stdio.h>  // libjpeg's header needs FILE and size_t declared first

#include <jpeglib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/io/npz.h"
#include "core/util/parse.h"

namespace chainer::datasets {

namespace {

// Deflate's largest expansion (a 258-byte run in 2 bits, 1032:1): PNG pixel data of N
// bytes needs at least N / 1032 bytes of file.
constexpr uint64_t kMaxDeflateRatio = 1032;

// A * B, or UINT64_MAX when that overflows (sizes computed from declared dimensions).
uint64_t mul_saturated(uint64_t a, uint64_t b) {
  uint64_t p;
  return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

// What decoding one file may use: its size, the limit, the dtype asked.
struct Budget {
  uint64_t file_bytes, limit;
  DType dtype;
};

// The check against the limit, once the header has told the image's size: NEED bytes for the
// decoded C x H x W image of KIND ("PNG", "JPEG").
void check_budget(const std::string& path, const char* kind, const Budget& budget, uint64_t need, int64_t C,
                  uint64_t H, uint64_t W) {
  if (need > budget.limit)
    throw Error(str("read_image: '", path, "' is a ", W, " x ", H, " ", kind, " of ", C, " channel", C == 1 ? "" : "s",
                    ": decoding it as ", dtype_name(budget.dtype), " needs ",
                    need == UINT64_MAX ? std::string("over 2^64") : std::to_string(need),
                    " bytes, more than the limit of ", budget.limit,
                    " (CHAINER_IMAGE_MAX_BYTES; set it higher to read larger images)"));
}

// ---- PNG ----

struct PngContext {
  const std::string* bytes;
  size_t at;
  char message[200];
};

void png_fail(png_structp png, png_const_charp message) {
  auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
  std::snprintf(ctx->message, sizeof ctx->message, "%s", message);
  png_longjmp(png, 1);
}
void png_ignore_warning(png_structp, png_const_charp) {}

void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
  if (ctx->bytes->size() - ctx->at < n) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, ctx->bytes->data() + ctx->at, n);
  ctx->at += n;
}

struct PngHeader {
  png_uint_32 width, height;
  int bit_depth, color_type, channels;
  size_t rowbytes;
};

// Reads the header and sets the transforms: 1/2/4-bit samples unpacked to one byte each (the
// caller scales gray), palette indices kept, tRNS not expanded, 16-bit kept (big-endian).
bool png_read_header(png_structp png, png_infop info, PngHeader* h) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  png_get_IHDR(png, info, &h->width, &h->height, &h->bit_depth, &h->color_type, nullptr, nullptr, nullptr);
  if (h->bit_depth < 8) png_set_packing(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  h->channels = png_get_channels(png, info);
  h->rowbytes = png_get_rowbytes(png, info);
  return true;
}

bool png_read_rows(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, info);
  return true;
}

// The read state, destroyed on every way out.
struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngReader() { png_destroy_read_struct(&png, &info, nullptr); }
};

// The channels of the stored samples, before any transform: palette indices are one.
int png_stored_channels(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
    default: return 1;  // gray, palette
  }
}

Tensor decode_png(const std::string& path, const std::string& bytes, const Budget& budget) {
  PngContext ctx{&bytes, 0, {}};
  PngReader r;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, png_fail, png_ignore_warning);
  r.info = r.png ? png_create_info_struct(r.png) : nullptr;
  if (!r.info) throw Error(str("read_image: '", path, "': libpng could not allocate its state"));
  png_set_read_fn(r.png, &ctx, png_read_memory);
  // Ancillary chunks (text, ICC profiles) are decompressed into memory by libpng and used by
  // nobody here: one larger than this is skipped (libpng's own default, set whatever its build).
  png_set_chunk_malloc_max(r.png, 8000000);
  auto fail = [&]() {
    return Error(str("read_image: '", path, "' is a corrupt or truncated PNG (libpng: ", ctx.message, ")"));
  };
  PngHeader h{};
  if (!png_read_header(r.png, r.info, &h)) throw fail();
  // The pixel data the header declares, packed, is at least W x H x bits per pixel / 8 bytes
  // (each row adds a filter byte); its deflate stream cannot be smaller than 1/1032 of that.
  const uint64_t packed =
      mul_saturated(mul_saturated(h.width, h.height), uint64_t(h.bit_depth) * png_stored_channels(h.color_type)) / 8;
  if (packed > mul_saturated(budget.file_bytes, kMaxDeflateRatio))
    throw Error(str("read_image: '", path, "' is not a valid PNG: its header declares ", h.width, " x ", h.height,
                    " pixels (", packed, " bytes of pixel data), but the file has only ", budget.file_bytes,
                    " bytes and deflate compresses at most ", kMaxDeflateRatio,
                    ":1 (the file is truncated or its header is forged)"));
  const bool gray16 = h.bit_depth == 16 && h.color_type == PNG_COLOR_TYPE_GRAY;  // decoded as int32
  const uint64_t values = mul_saturated(mul_saturated(uint64_t(h.channels), h.width), h.height);
  check_budget(path, "PNG", budget,
               std::max(mul_saturated(values, std::max<uint64_t>(dtype_size(budget.dtype), gray16 ? 4 : 1)),
                        mul_saturated(h.rowbytes, h.height)),
               h.channels, h.height, h.width);
  std::vector<png_byte> pixels(h.rowbytes * h.height);
  std::vector<png_bytep> rows(h.height);
  for (png_uint_32 y = 0; y < h.height; ++y) rows[y] = pixels.data() + y * h.rowbytes;
  if (!png_read_rows(r.png, r.info, rows.data())) throw fail();

  const int64_t C = h.channels, H = h.height, W = h.width, plane = H * W;
  const bool gray = h.color_type == PNG_COLOR_TYPE_GRAY;
  if (gray16) {  // PIL's "I;16": the full 16-bit value
    Tensor out = Tensor::empty({1, H, W}, DType::Int32);
    int32_t* o = out.data<int32_t>();
    for (int64_t i = 0; i < plane; ++i) o[i] = int32_t(pixels[2 * i]) << 8 | pixels[2 * i + 1];
    return out;
  }
  Tensor out = Tensor::empty({C, H, W}, DType::UInt8);
  uint8_t* o = out.data<uint8_t>();
  const int64_t step = h.bit_depth == 16 ? 2 : 1;  // 16-bit colour: the high byte, as PIL's "RGB;16B"
  for (int64_t i = 0; i < plane; ++i)
    for (int64_t c = 0; c < C; ++c) o[c * plane + i] = pixels[(i * C + c) * step];
  if (gray && (h.bit_depth == 2 || h.bit_depth == 4)) {  // PIL's "L;2" and "L;4" scale to 0..255
    const uint8_t scale = h.bit_depth == 2 ? 85 : 17;
    for (int64_t i = 0; i < plane; ++i) o[i] = uint8_t(o[i] * scale);
  }
  return out;
}

// ---- JPEG ----

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  cinfo->err->format_message(cinfo, err->message);
  std::longjmp(err->jump, 1);
}
// Level -1 is a warning about the data. Stray bytes between markers are common in real photos
// and harmless (PIL reads them too); any other damage ends the read.
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code != JWRN_EXTRANEOUS_DATA) jpeg_fail(cinfo);
}

// Reads the header only: the size, the components, the coding (progressive, arithmetic).
bool jpeg_header(jpeg_decompress_struct* cinfo, const std::string* bytes) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (setjmp(err->jump)) return false;
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, reinterpret_cast<const unsigned char*>(bytes->data()), (unsigned long)bytes->size());
  jpeg_read_header(cinfo, TRUE);
  return true;
}

// Starts decoding, gray or RGB; libjpeg's own whole-image buffers (a progressive JPEG's
// coefficients) are held to MAX_MEMORY too.
bool jpeg_begin(jpeg_decompress_struct* cinfo, long max_memory) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (setjmp(err->jump)) return false;
  cinfo->out_color_space = cinfo->num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo->mem->max_memory_to_use = max_memory;
  jpeg_start_decompress(cinfo);
  return true;
}

bool jpeg_rows(jpeg_decompress_struct* cinfo, unsigned char* pixels) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (setjmp(err->jump)) return false;
  const size_t stride = size_t(cinfo->output_width) * cinfo->output_components;
  while (cinfo->output_scanline < cinfo->output_height) {
    unsigned char* row = pixels + cinfo->output_scanline * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

Tensor decode_jpeg(const std::string& path, const std::string& bytes, const Budget& budget) {
  jpeg_decompress_struct cinfo{};  // mem null: destroying it before it is created does nothing
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  err.message[0] = '\0';
  // Destroyed on every way out.
  struct Destroy {
    jpeg_decompress_struct* c;
    ~Destroy() { jpeg_destroy_decompress(c); }
  } destroy{&cinfo};
  auto fail = [&]() {
    if (err.mgr.msg_code == JERR_NO_BACKING_STORE)  // its buffers would pass max_memory_to_use
      return Error(str("read_image: '", path, "': decoding this ", cinfo.image_width, " x ", cinfo.image_height,
                       " JPEG needs more than the limit of ", budget.limit,
                       " bytes (CHAINER_IMAGE_MAX_BYTES; set it higher to read larger images)"));
    return Error(str("read_image: '", path, "' is a corrupt or truncated JPEG (libjpeg: ", err.message, ")"));
  };
  if (!jpeg_header(&cinfo, &bytes)) throw fail();
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK)
    throw Error(str("read_image: '", path, "': CMYK JPEGs are not supported (convert it to RGB)"));
  // Every 8 x 8 block of every component is coded, and in sequential Huffman coding a block takes
  // at least one code of at least a bit (two in fact: DC and end of block; one is what a lossless
  // JPEG's data unit of one sample takes), so the file must hold blocks / 8 bytes. Progressive
  // and arithmetic coding have no such floor; the limit below bounds them.
  uint64_t blocks = 0;
  for (int c = 0; c < cinfo.num_components; ++c)
    blocks += mul_saturated(cinfo.comp_info[c].width_in_blocks, cinfo.comp_info[c].height_in_blocks);
  if (!cinfo.progressive_mode && !cinfo.arith_code && blocks / 8 > budget.file_bytes)
    throw Error(str("read_image: '", path, "' is not a valid JPEG: its header declares ", cinfo.image_width, " x ",
                    cinfo.image_height, " pixels (", blocks, " blocks of 8 x 8, at least ", blocks / 8,
                    " bytes of coded data), but the file has only ", budget.file_bytes,
                    " bytes (the file is truncated or its header is forged)"));
  const int64_t channels = cinfo.num_components == 1 ? 1 : 3;
  const uint64_t values = mul_saturated(mul_saturated(uint64_t(channels), cinfo.image_width), cinfo.image_height);
  // A progressive JPEG is decoded from a buffer of all its coefficients (64 of 2 bytes a block).
  const uint64_t coefficients = cinfo.progressive_mode ? mul_saturated(blocks, 128) : 0;
  check_budget(path, "JPEG", budget, std::max(mul_saturated(values, dtype_size(budget.dtype)), coefficients), channels,
               cinfo.image_height, cinfo.image_width);
  if (!jpeg_begin(&cinfo, long(std::min<uint64_t>(budget.limit, uint64_t(LONG_MAX))))) throw fail();
  const int64_t C = cinfo.output_components, H = cinfo.output_height, W = cinfo.output_width, plane = H * W;
  std::vector<unsigned char> pixels(size_t(plane * C));
  if (!jpeg_rows(&cinfo, pixels.data())) throw fail();
  Tensor out = Tensor::empty({C, H, W}, DType::UInt8);
  uint8_t* o = out.data<uint8_t>();
  for (int64_t i = 0; i < plane; ++i)
    for (int64_t c = 0; c < C; ++c) o[c * plane + i] = pixels[i * C + c];
  return out;
}

// ---- writing ----

bool png_write_all(png_structp png, png_infop info, FILE* file, png_uint_32 width, png_uint_32 height,
                   int color_type, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_init_io(png, file);
  png_set_IHDR(png, info, width, height, 8, color_type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

}  // namespace

Tensor read_image(const std::string& path, DType dtype) {
  const uint64_t limit = image_max_bytes();
  const InputFile file("read_image", path);
  if (file.size() > limit)
    throw Error(str("read_image: '", path, "' is ", file.size(), " bytes, more than the limit of ", limit,
                    " bytes for one image (CHAINER_IMAGE_MAX_BYTES; set it higher to read larger images)"));
  const std::string bytes = file.read_all();
  static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Tensor image;
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), png_magic, 8) == 0) {
    image = decode_png(path, bytes, {bytes.size(), limit, dtype});
  } else if (bytes.size() >= 3 && std::memcmp(bytes.data(), "\xff\xd8\xff", 3) == 0) {
    image = decode_jpeg(path, bytes, {bytes.size(), limit, dtype});
  } else {
    throw Error(str("read_image: '", path, "' is neither a PNG nor a JPEG file (",
                    bytes.empty() ? std::string("it is empty") : "its first bytes are not a PNG or JPEG signature",
                    ")"));
  }
  return image.dtype() == dtype ? image : image.astype(dtype);
}

uint64_t image_max_bytes() {
  if (const char* text = std::getenv("CHAINER_IMAGE_MAX_BYTES"))
    return uint64_t(parse_integer(text, "CHAINER_IMAGE_MAX_BYTES", 1));
  return uint64_t(1) << 30;
}

void write_png(const std::string& path, const Tensor& image) {
  if (image.ndim() != 3 || image.shape()[0] < 1 || image.shape()[0] > 4)
    throw Error(str("write_png: '", path, "': the image has shape ", shape_str(image.shape()),
                    "; expected (C, H, W) with C = 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA)"));
  const int64_t C = image.shape()[0], H = image.shape()[1], W = image.shape()[2], plane = H * W;
  Tensor host = image.to(Device{}).contiguous();
  std::vector<png_byte> pixels(size_t(plane * C));
  if (host.dtype() == DType::UInt8) {
    const uint8_t* p = host.data<uint8_t>();
    for (int64_t i = 0; i < plane; ++i)
      for (int64_t c = 0; c < C; ++c) pixels[i * C + c] = p[c * plane + i];
  } else {
    const std::vector<double> v = host.to_vector<double>();
    for (int64_t i = 0; i < plane; ++i)
      for (int64_t c = 0; c < C; ++c)
        pixels[i * C + c] = png_byte(std::clamp(std::nearbyint(v[c * plane + i]), 0.0, 255.0));
  }
  std::vector<png_bytep> rows(static_cast<size_t>(H));
  for (int64_t y = 0; y < H; ++y) rows[y] = pixels.data() + y * W * C;
  static const int color_types[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                    PNG_COLOR_TYPE_RGB_ALPHA};

  FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) throw Error(str("write_png: cannot create '", path, "': ", std::strerror(errno)));
  PngContext ctx{nullptr, 0, {}};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx, png_fail, png_ignore_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  const bool ok =
      info && png_write_all(png, info, file, png_uint_32(W), png_uint_32(H), color_types[C - 1], rows.data());
  png_destroy_write_struct(&png, &info);
  const bool closed = std::fclose(file) == 0;
  if (!ok || !closed) {
    std::remove(path.c_str());
    throw Error(
        str("write_png: cannot write '", path, "'", ok ? ": closing it failed" : str(" (libpng: ", ctx.message, ")")));
  }
}

}  // namespace chainer::datasets
