/// @file
/// Reading and writing images as tensors, as Chainer's image datasets see them: read_image gives
/// what `numpy.asarray(PIL.Image.open(path), dtype)` gives, transposed to (C, H, W), with values
/// as stored (0..255; 0..65535 for 16-bit grayscale), never scaled. PNG through libpng, JPEG
/// through libjpeg(-turbo); the format comes from the file's first bytes, not its name.
///
/// An image's header says how large it is, and a file of a few bytes can claim 65500 x 65500
/// pixels: read_image checks the claim against the file's size (that many pixels compress to no
/// fewer bytes than deflate's best ratio, or a sequential JPEG's bit a block, allows) and the
/// decoded size against image_max_bytes() before allocating anything for the pixels.
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor/tensor.h"

namespace chainer::datasets {

/// The image at PATH as a (C, H, W) tensor of DTYPE, channels as PIL gives them: grayscale (1),
/// gray + alpha (2), RGB (3), RGBA (4); a palette PNG gives its palette indices (1 channel), a
/// 1-bit grayscale PNG 0 and 1, 2- and 4-bit grayscale scaled to 0..255, 16-bit grayscale
/// 0..65535 and 16-bit colour the high byte of each sample (PIL's modes "P", "1", "L", "I;16",
/// "RGB"). JPEG: grayscale or RGB; CMYK JPEGs are refused. Throws chainer::Error naming PATH when
/// the file is missing, not a regular file (a directory, a FIFO, a device), unreadable, neither
/// PNG nor JPEG, truncated or corrupt, when its header declares more pixels than its bytes can
/// hold, or when decoding it would take more than image_max_bytes().
Tensor read_image(const std::string& path, DType dtype = DType::Float32);

/// The most bytes read_image decodes one image into: the image's C x H x W values in the dtype
/// asked (4 bytes each for float32) or in the decoder's own wider buffers, whichever is larger.
/// CHAINER_IMAGE_MAX_BYTES when set (a whole number of bytes, at least 1; anything else is an
/// Error naming the variable), else 1 GiB: PIL's MAX_IMAGE_PIXELS (89,478,485 pixels, 9459 x 9459)
/// of RGB as float32, or 18918 x 18918 pixels of RGB as uint8. A larger image file is refused too.
uint64_t image_max_bytes();

/// Writes IMAGE, (C, H, W) with C = 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA), to PATH as an
/// 8-bit PNG. IMAGE is uint8, or floating point in 0..255 (rounded to nearest, clamped to
/// 0..255). Throws chainer::Error naming PATH when the shape is not one of these or the file
/// cannot be written.
void write_png(const std::string& path, const Tensor& image);

}  // namespace chainer::datasets
