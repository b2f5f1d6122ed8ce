// The JPEG files the image tests write: an image tensor compressed with libjpeg-turbo in memory.
#pragma once
#include <stdio.h>  // jpeglib.h needs FILE

#include <jpeglib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

// IMAGE (C, H, W) uint8, C = 1, 3 or 4 (4: written as CMYK), as the bytes of a JPEG of QUALITY;
// PROGRESSIVE writes a progressive one.
inline std::string jpeg_bytes(const chainer::Tensor& image, int quality = 100, bool progressive = false) {
  const int C = int(image.shape()[0]), H = int(image.shape()[1]), W = int(image.shape()[2]);
  const std::vector<uint8_t> v = image.to_vector<uint8_t>();
  std::vector<unsigned char> hwc(v.size());
  for (int i = 0; i < H * W; ++i)
    for (int c = 0; c < C; ++c) hwc[size_t(i * C + c)] = v[size_t(c * H * W + i)];
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = W, cinfo.image_height = H, cinfo.input_components = C;
  cinfo.in_color_space = C == 1 ? JCS_GRAYSCALE : C == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = hwc.data() + size_t(cinfo.next_scanline) * W * C;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string bytes(reinterpret_cast<const char*>(out), size);
  std::free(out);
  return bytes;
}
