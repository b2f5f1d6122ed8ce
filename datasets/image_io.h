/// @file
/// Reading and writing images as tensors, as Chainer's image datasets see them: read_image gives
/// what `numpy.asarray(PIL.Image.open(path), dtype)` gives, transposed to (C, H, W), with values
/// as stored (0..255; 0..65535 for 16-bit grayscale), never scaled. PNG through libpng, JPEG
/// through libjpeg(-turbo); the format comes from the file's first bytes, not its name.
#pragma once
#include <string>

#include "core/tensor.h"

namespace chainer::datasets {

/// The image at PATH as a (C, H, W) tensor of DTYPE, channels as PIL gives them: grayscale (1),
/// gray + alpha (2), RGB (3), RGBA (4); a palette PNG gives its palette indices (1 channel), a
/// 1-bit grayscale PNG 0 and 1, 2- and 4-bit grayscale scaled to 0..255, 16-bit grayscale
/// 0..65535 and 16-bit colour the high byte of each sample (PIL's modes "P", "1", "L", "I;16",
/// "RGB"). JPEG: grayscale or RGB; CMYK JPEGs are refused. Throws chainer::Error naming PATH when
/// the file is missing, unreadable, neither PNG nor JPEG, truncated or corrupt.
Tensor read_image(const std::string& path, DType dtype = DType::Float32);

/// Writes IMAGE, (C, H, W) with C = 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA), to PATH as an
/// 8-bit PNG. IMAGE is uint8, or floating point in 0..255 (rounded to nearest, clamped to
/// 0..255). Throws chainer::Error naming PATH when the shape is not one of these or the file
/// cannot be written.
void write_png(const std::string& path, const Tensor& image);

}  // namespace chainer::datasets
