// libpng and libjpeg report errors by longjmp (libpng's png_error, libjpeg's error_exit), which
// must not cross C++ frames with destructors. Each decoding step that can fail is therefore a
// small function with only trivial locals around its setjmp; it returns false with the library's
// message, and the C++ caller throws. Warnings are never printed: libpng's are dropped, and a
// libjpeg warning about damaged data (a truncated file makes libjpeg pad it with gray and warn)
// is an error, as PIL refuses a truncated image.
#include "datasets/image_io.h"

#include <jerror.h>
#include <png.h>
#include <stdio.h>  // libjpeg's header needs FILE and size_t declared first

#include <jpeglib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace chainer::datasets {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str("read_image: cannot open '", path, "': ", std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(str("read_image: cannot read '", path, "': ", std::strerror(errno)));
  return bytes;
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

Tensor decode_png(const std::string& path, const std::string& bytes) {
  PngContext ctx{&bytes, 0, {}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, png_fail, png_ignore_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw Error(str("read_image: '", path, "': libpng could not allocate its state"));
  }
  png_set_read_fn(png, &ctx, png_read_memory);
  auto fail = [&]() {
    png_destroy_read_struct(&png, &info, nullptr);
    return Error(str("read_image: '", path, "' is a corrupt or truncated PNG (libpng: ", ctx.message, ")"));
  };
  PngHeader h{};
  if (!png_read_header(png, info, &h)) throw fail();
  std::vector<png_byte> pixels(h.rowbytes * h.height);
  std::vector<png_bytep> rows(h.height);
  for (png_uint_32 y = 0; y < h.height; ++y) rows[y] = pixels.data() + y * h.rowbytes;
  if (!png_read_rows(png, info, rows.data())) throw fail();
  png_destroy_read_struct(&png, &info, nullptr);

  const int64_t C = h.channels, H = h.height, W = h.width, plane = H * W;
  const bool gray = h.color_type == PNG_COLOR_TYPE_GRAY;
  if (h.bit_depth == 16 && gray) {  // PIL's "I;16": the full 16-bit value
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

bool jpeg_start(jpeg_decompress_struct* cinfo, const std::string* bytes) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (setjmp(err->jump)) return false;
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, reinterpret_cast<const unsigned char*>(bytes->data()), (unsigned long)bytes->size());
  jpeg_read_header(cinfo, TRUE);
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    std::snprintf(err->message, sizeof err->message, "CMYK JPEGs are not supported (convert it to RGB)");
    return false;
  }
  cinfo->out_color_space = cinfo->num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
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

Tensor decode_jpeg(const std::string& path, const std::string& bytes) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  err.message[0] = '\0';
  auto fail = [&]() {
    jpeg_destroy_decompress(&cinfo);
    return Error(str("read_image: '", path, "' is a corrupt or truncated JPEG (libjpeg: ", err.message, ")"));
  };
  if (!jpeg_start(&cinfo, &bytes)) {
    if (std::strncmp(err.message, "CMYK", 4) == 0) {
      jpeg_destroy_decompress(&cinfo);
      throw Error(str("read_image: '", path, "': ", err.message));
    }
    throw fail();
  }
  const int64_t C = cinfo.output_components, H = cinfo.output_height, W = cinfo.output_width, plane = H * W;
  std::vector<unsigned char> pixels(size_t(plane * C));
  if (!jpeg_rows(&cinfo, pixels.data())) throw fail();
  jpeg_destroy_decompress(&cinfo);
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
  const std::string bytes = read_file(path);
  static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Tensor image;
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), png_magic, 8) == 0) {
    image = decode_png(path, bytes);
  } else if (bytes.size() >= 3 && std::memcmp(bytes.data(), "\xff\xd8\xff", 3) == 0) {
    image = decode_jpeg(path, bytes);
  } else {
    throw Error(str("read_image: '", path, "' is neither a PNG nor a JPEG file (",
                    bytes.empty() ? std::string("it is empty") : "its first bytes are not a PNG or JPEG signature", ")"));
  }
  return image.dtype() == dtype ? image : image.astype(dtype);
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
      for (int64_t c = 0; c < C; ++c) pixels[i * C + c] = png_byte(std::clamp(std::nearbyint(v[c * plane + i]), 0.0, 255.0));
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
  const bool ok = info && png_write_all(png, info, file, png_uint_32(W), png_uint_32(H), color_types[C - 1], rows.data());
  png_destroy_write_struct(&png, &info);
  const bool closed = std::fclose(file) == 0;
  if (!ok || !closed) {
    std::remove(path.c_str());
    throw Error(str("write_png: cannot write '", path, "'", ok ? ": closing it failed" : str(" (libpng: ", ctx.message, ")")));
  }
}

}  // namespace chainer::datasets
