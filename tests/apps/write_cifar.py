#!/usr/bin/env python3
"""Writes small CIFAR archives in the real binary format for the app tests:
  write_cifar.py DIR [TRAIN_PER_FILE] [TEST]
DIR/cifar-10-binary.tar.gz (cifar-10-batches-bin/data_batch_1..5.bin of TRAIN_PER_FILE records
each, test_batch.bin of TEST, batches.meta.txt) and DIR/cifar-100-binary.tar.gz
(cifar-100-binary/train.bin of 5 x TRAIN_PER_FILE records, test.bin of TEST; coarse and fine
labels), written by Python's tarfile and gzip as the CIFAR page's archives are by GNU tar: records
of label byte(s) + 3072 pixel bytes. Each image is its class's pattern plus noise, so a network can
learn something from a few of them."""
import gzip
import io
import os
import random
import sys
import tarfile

out = sys.argv[1]
per_file = int(sys.argv[2]) if len(sys.argv) > 2 else 16
n_test = int(sys.argv[3]) if len(sys.argv) > 3 else 40
rng = random.Random(0)


def image(label):
    # A bright band whose row depends on the class, over noise.
    px = bytearray(rng.randrange(0, 96) for _ in range(3072))
    for c in range(3):
        for x in range(32):
            px[c * 1024 + (3 * label % 32) * 32 + x] = 255
    return bytes(px)


def records(n, labels):
    data = bytearray()
    for _ in range(n):
        ls = labels()
        data += bytes(ls) + image(ls[-1] % 10)
    return bytes(data)


def archive(path, members):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with open(path + ".tmp", "wb") as f:
        f.write(gzip.compress(raw.getvalue()))
    os.replace(path + ".tmp", path)


os.makedirs(out, exist_ok=True)
label10 = lambda: [rng.randrange(10)]
archive(os.path.join(out, "cifar-10-binary.tar.gz"),
        [("cifar-10-batches-bin/batches.meta.txt", b"airplane\nautomobile\n")] +
        [(f"cifar-10-batches-bin/data_batch_{i}.bin", records(per_file, label10)) for i in range(1, 6)] +
        [("cifar-10-batches-bin/test_batch.bin", records(n_test, label10))])


def label100():
    fine = rng.randrange(100)
    return [fine // 5, fine]


archive(os.path.join(out, "cifar-100-binary.tar.gz"),
        [("cifar-100-binary/train.bin", records(5 * per_file, label100)),
         ("cifar-100-binary/test.bin", records(n_test, label100))])
