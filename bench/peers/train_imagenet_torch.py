#!/usr/bin/python3
"""PyTorch + torchvision (Debian python3-torch 1.13, python3-torchvision 0.14) peer of
apps/train_imagenet, one process: ChainerMN's examples/chainermn/imagenet/train_imagenet.py on
the same list files, mean image and networks.

Data, as the example's PreprocessedDataset over LabeledImageDataset: a torch.utils.data.Dataset
reads the list ("path label" per line, paths under --root), decodes each image with torchvision's
default loader (PIL, converted to RGB) into float32 (3, H, W), then for training crops insize x
insize at top, left = random.randint(0, size - insize - 1) and flips it left-right with
probability 1/2 (the example's flip of the whole image before the crop), for validation crops the
centre; subtracts the mean image's pixels at the same place and scales by 1/255 (numpy, as the
example). A DataLoader with num_workers = --loaderjob (worker processes, each single-threaded as
PyTorch sets them), shuffle for training, batches of --batchsize (the last one of each epoch
smaller: an epoch is one pass over the list, as a Chainer epoch counts it).

Networks, as apps/imagenet (the example's models, the same layers, shapes and initialisation):
  nin:      mlpconv(96: 11x11 stride 4) - relu - maxpool(3, 2) - mlpconv(256: 5x5 pad 2) - relu -
            maxpool - mlpconv(384: 3x3 pad 1) - relu - maxpool - dropout(0.5) -
            mlpconv(1024, 1024, n_class: 3x3 pad 1) - global average
            (mlpconv: the convolution, then two 1x1 convolutions, relu between; all with bias)
  resnet50: conv7x7(3->64, stride 2, pad 3, bias) - BN - relu - maxpool(3, 2) - stages of
            3, 4, 6, 3 bottlenecks (1x1, 3x3 strided, 1x1 without bias, each with BN; a strided
            1x1 + BN on the first block's shortcut; stride 1 in the first stage) - global
            average - Linear(2048 -> n_class)
The convolutions' W ~ HeNormal = N(0, 2/fan_in), the Linear layer's W ~ LeCunNormal =
N(0, 1/fan_in), biases 0; BN gamma 1, beta 0, eps 2e-5, running statistics decay 0.9 (PyTorch
momentum 0.1). max_pooling_2d(3, 2) is Chainer's with cover_all (PyTorch's ceil_mode=True: the
same output size and windows with pad 0). The global average is the example's
average_pooling_2d(h, 6) for nin at 227 and (h, 7) for resnet50 at 224, and what our models take
at any other size.

Loss softmax cross entropy (batch mean). MomentumSGD(lr=0.01, momentum=0.9) as the example, no
weight decay: Chainer's v <- 0.9 v - lr g, p <- p + v is torch.optim.SGD(momentum=0.9,
dampening 0)'s b <- 0.9 b + g, p <- p - lr b with v = -lr b (the first b = g, v = -lr g in both),
the same updates at a constant lr. Validation after each epoch in batches of --val_batchsize,
model.eval() (BN on its running statistics, dropout off), loss and accuracy the mean of per-batch
means as Chainer's Evaluator reports them.

usage: bench/peers/run-cnn-peer train_imagenet train.txt val.txt --root DIR --mean DIR/mean.npy
       [--arch nin|resnet50] [--insize N] [--n-class 1000] [--batchsize 32] [--epoch 10]
       [--loaderjob N] [--val_batchsize 250] [--threads 2] [--seed 0] [--device cuda]
       [--no-flush-denormal]
(the flags as train_imagenet's; --loaderjob defaults to --threads, as train_imagenet's loader
threads default to its compute threads). On the GPU machine, --device cuda: the model on the
GPU, batches copied from pinned memory (cuDNN with its defaults: benchmark off).

Prints one line per epoch
  epoch E train_loss L train_acc A val_loss L val_acc A train_s T images_per_s R data_wait_s D
  step_s S eval_s V
where data_wait_s is the time spent waiting for the next batch (the DataLoader's iterator, and the
copy to the device) and step_s the time in forward, backward and update (on CUDA synchronised at
the end of each step so the two add up), then a JSON line with everything and the peak RSS.
"""
import argparse
import gc
import json
import math
import os
import platform
import random
import resource
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('train', help='training image-label list file ("path label" per line)')
    p.add_argument('val', help='validation image-label list file')
    p.add_argument('--arch', '-a', choices=('nin', 'resnet50'), default='nin')
    p.add_argument('--insize', type=int, default=None,
                   help="the crop fed to the model (default: the model's, 227 for nin, 224 for resnet50)")
    p.add_argument('--n-class', type=int, default=1000, help='number of classes (default 1000)')
    p.add_argument('--batchsize', '-B', type=int, default=32)
    p.add_argument('--epoch', '-E', type=int, default=10)
    p.add_argument('--loaderjob', '-j', type=int, default=None,
                   help='DataLoader worker processes (default: --threads; 0 loads in the main process)')
    p.add_argument('--mean', '-m', default='mean.npy')
    p.add_argument('--root', '-R', default='.')
    p.add_argument('--val_batchsize', '-b', type=int, default=250)
    p.add_argument('--threads', type=int, default=2, help='compute threads (torch.set_num_threads)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--device', default='cpu', help="'cpu' or 'cuda'")
    p.add_argument('--no-flush-denormal', action='store_true',
                   help='leave FTZ/DAZ off (the peers set it: torch.set_flush_denormal(True))')
    a = p.parse_args()
    if a.loaderjob is None:
        a.loaderjob = a.threads
    if a.insize is None:
        a.insize = 227 if a.arch == 'nin' else 224
    return a


args = parse_args()
# thread settings must be in the environment before torch loads OpenBLAS/OpenMP
os.environ['OMP_NUM_THREADS'] = str(args.threads)
os.environ['OPENBLAS_NUM_THREADS'] = str(args.threads)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.utils.data  # noqa: E402
import torchvision  # noqa: E402
from torchvision.datasets.folder import default_loader  # noqa: E402


class PreprocessedDataset(torch.utils.data.Dataset):
    """The example's PreprocessedDataset over LabeledImageDataset(path, root)."""

    def __init__(self, path, root, mean, crop_size, random_crop):
        self.pairs = []
        with open(path) as f:
            for n, line in enumerate(f, 1):
                fields = line.strip().split()
                if not fields:
                    continue
                if len(fields) != 2:
                    raise ValueError('%s:%d: expected "path label", got %r' % (path, n, line))
                self.pairs.append((os.path.join(root, fields[0]), int(fields[1])))
        self.mean = mean.astype(np.float32)
        self.crop_size = crop_size
        self.random = random_crop

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, i):
        path, label = self.pairs[i]
        # LabeledImageDataset: float32 (C, H, W)
        image = np.asarray(default_loader(path), dtype=np.float32).transpose(2, 0, 1)
        crop_size = self.crop_size
        _, h, w = image.shape
        if self.random:
            top = random.randint(0, h - crop_size - 1)
            left = random.randint(0, w - crop_size - 1)
            if random.randint(0, 1):
                image = image[:, :, ::-1]
        else:
            top = (h - crop_size) // 2
            left = (w - crop_size) // 2
        bottom, right = top + crop_size, left + crop_size
        image = image[:, top:bottom, left:right] - self.mean[:, top:bottom, left:right]
        image *= (1.0 / 255.0)
        return np.ascontiguousarray(image), label


def he_conv(cin, cout, k, stride=1, pad=0, bias=True):
    conv = nn.Conv2d(cin, cout, k, stride, pad, bias=bias)
    nn.init.normal_(conv.weight, 0.0, math.sqrt(2.0 / conv.weight[0].numel()))
    if bias:
        nn.init.zeros_(conv.bias)
    return conv


def bn(c):
    return nn.BatchNorm2d(c, eps=2e-5, momentum=0.1)


def max_pool(x):
    return F.max_pool2d(x, 3, 2, ceil_mode=True)  # Chainer's max_pooling_2d(x, 3, 2), cover_all


class MLPConv(nn.Module):
    """L.MLPConvolution2D(out_channels, ksize, stride, pad, conv_init=HeNormal()): relu between."""

    def __init__(self, cin, outs, k, stride, pad):
        super().__init__()
        chans = [cin] + list(outs)
        self.convs = nn.ModuleList(
            he_conv(chans[i], chans[i + 1], k if i == 0 else 1, stride if i == 0 else 1,
                    pad if i == 0 else 0) for i in range(len(outs)))

    def forward(self, x):
        for i, conv in enumerate(self.convs):
            x = conv(x)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


class NIN(nn.Module):
    def __init__(self, n_class):
        super().__init__()
        self.mlpconv1 = MLPConv(3, (96, 96, 96), 11, 4, 0)
        self.mlpconv2 = MLPConv(96, (256, 256, 256), 5, 1, 2)
        self.mlpconv3 = MLPConv(256, (384, 384, 384), 3, 1, 1)
        self.mlpconv4 = MLPConv(384, (1024, 1024, n_class), 3, 1, 1)

    def forward(self, x):
        h = max_pool(F.relu(self.mlpconv1(x)))
        h = max_pool(F.relu(self.mlpconv2(h)))
        h = max_pool(F.relu(self.mlpconv3(h)))
        h = self.mlpconv4(F.dropout(h, 0.5, self.training))
        return h.mean((2, 3))


class BottleNeckA(nn.Module):
    def __init__(self, cin, ch, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = he_conv(cin, ch, 1, 1, 0, bias=False), bn(ch)
        self.conv2, self.bn2 = he_conv(ch, ch, 3, stride, 1, bias=False), bn(ch)
        self.conv3, self.bn3 = he_conv(ch, cout, 1, 1, 0, bias=False), bn(cout)
        self.conv4, self.bn4 = he_conv(cin, cout, 1, stride, 0, bias=False), bn(cout)

    def forward(self, x):
        h1 = F.relu(self.bn1(self.conv1(x)))
        h1 = F.relu(self.bn2(self.conv2(h1)))
        h1 = self.bn3(self.conv3(h1))
        return F.relu(h1 + self.bn4(self.conv4(x)))


class BottleNeckB(nn.Module):
    def __init__(self, cin, ch):
        super().__init__()
        self.conv1, self.bn1 = he_conv(cin, ch, 1, 1, 0, bias=False), bn(ch)
        self.conv2, self.bn2 = he_conv(ch, ch, 3, 1, 1, bias=False), bn(ch)
        self.conv3, self.bn3 = he_conv(ch, cin, 1, 1, 0, bias=False), bn(cin)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        return F.relu(self.bn3(self.conv3(h)) + x)


def block(layers, cin, ch, cout, stride=2):
    return nn.Sequential(BottleNeckA(cin, ch, cout, stride),
                         *(BottleNeckB(cout, ch) for _ in range(layers - 1)))


class ResNet50(nn.Module):
    def __init__(self, n_class):
        super().__init__()
        self.conv1, self.bn1 = he_conv(3, 64, 7, 2, 3, bias=True), bn(64)
        self.res2 = block(3, 64, 64, 256, 1)
        self.res3 = block(4, 256, 128, 512)
        self.res4 = block(6, 512, 256, 1024)
        self.res5 = block(3, 1024, 512, 2048)
        self.fc = nn.Linear(2048, n_class)
        nn.init.normal_(self.fc.weight, 0.0, math.sqrt(1.0 / 2048))
        nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        h = max_pool(F.relu(self.bn1(self.conv1(x))))
        h = self.res5(self.res4(self.res3(self.res2(h))))
        return self.fc(h.mean((2, 3)))


def main():
    torch.set_num_threads(args.threads)
    if not args.no_flush_denormal:
        torch.set_flush_denormal(True)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    device = torch.device(args.device)
    cuda = device.type == 'cuda'

    mean = np.load(args.mean)
    train = PreprocessedDataset(args.train, args.root, mean, args.insize, True)
    val = PreprocessedDataset(args.val, args.root, mean, args.insize, False)
    gen = torch.Generator().manual_seed(args.seed + 1)
    loader_kw = dict(num_workers=args.loaderjob, pin_memory=cuda,
                     persistent_workers=args.loaderjob > 0)
    train_loader = torch.utils.data.DataLoader(train, args.batchsize, shuffle=True, generator=gen,
                                               **loader_kw)
    val_loader = torch.utils.data.DataLoader(val, args.val_batchsize, shuffle=False, **loader_kw)

    model = (NIN if args.arch == 'nin' else ResNet50)(args.n_class).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    log = []
    it = None
    for epoch in range(1, args.epoch + 1):
        model.train()
        loss_sum = torch.zeros((), device=device)
        acc_sum = torch.zeros((), device=device)
        nb = images = 0
        wait_s = step_s = 0.0
        t0 = time.perf_counter()
        it = iter(train_loader)
        while True:
            ta = time.perf_counter()
            try:
                xb, yb = next(it)
            except StopIteration:
                break
            xb = xb.to(device, non_blocking=True)
            yb = yb.to(device, non_blocking=True)
            tb = time.perf_counter()
            out = model(xb)
            loss = F.cross_entropy(out, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                loss_sum += loss.detach()
                acc_sum += (out.argmax(1) == yb).float().mean()
            sync()
            tc = time.perf_counter()
            wait_s += tb - ta
            step_s += tc - tb
            nb += 1
            images += xb.shape[0]
        tr_loss, tr_acc = loss_sum.item() / nb, acc_sum.item() / nb
        t1 = time.perf_counter()
        model.eval()
        vl = va = 0.0
        nv = 0
        with torch.no_grad():
            for xb, yb in val_loader:
                xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
                out = model(xb)
                vl += F.cross_entropy(out, yb).item()
                va += (out.argmax(1) == yb).float().mean().item()
                nv += 1
        t2 = time.perf_counter()
        rec = dict(epoch=epoch, train_loss=tr_loss, train_acc=tr_acc, val_loss=vl / nv,
                   val_acc=va / nv, train_s=t1 - t0, images=images,
                   images_per_s=images / (t1 - t0), data_wait_s=wait_s, step_s=step_s,
                   steps=nb, eval_s=t2 - t1)
        log.append(rec)
        print('epoch %d train_loss %.6f train_acc %.6f val_loss %.6f val_acc %.6f train_s %.3f '
              'images_per_s %.1f data_wait_s %.3f step_s %.3f eval_s %.3f' % (
                  epoch, tr_loss, tr_acc, rec['val_loss'], rec['val_acc'], rec['train_s'],
                  rec['images_per_s'], wait_s, step_s, rec['eval_s']), flush=True)
    # end the worker processes so that their peak RSS shows in RUSAGE_CHILDREN
    del it, train_loader, val_loader
    gc.collect()
    print(json.dumps({
        'peer': 'pytorch-python-train-imagenet', 'arch': args.arch, 'insize': args.insize,
        'n_class': args.n_class, 'batchsize': args.batchsize, 'val_batchsize': args.val_batchsize,
        'loaderjob': args.loaderjob, 'epochs': log, 'n_train': len(train), 'n_val': len(val),
        'threads': torch.get_num_threads(), 'flush_denormal': not args.no_flush_denormal,
        'final_val_acc': log[-1]['val_acc'] if log else None,
        'peak_rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        'peak_rss_workers_mib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0,
        'device': str(device), 'peak_device_mib': (torch.cuda.max_memory_allocated() / 2**20
                                                   if cuda else None),
        'torch': torch.__version__, 'torchvision': torchvision.__version__,
        'mkldnn': torch.backends.mkldnn.is_available(),
        'env': {k: os.environ.get(k) for k in
                ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'OPENBLAS_CORETYPE',
                 'OMP_WAIT_POLICY')},
        'python': platform.python_version(), 'train': os.path.abspath(args.train),
        'val': os.path.abspath(args.val), 'root': os.path.abspath(args.root),
        'date_utc': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
    }), flush=True)


if __name__ == '__main__':
    main()
