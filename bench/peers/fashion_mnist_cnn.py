#!/usr/bin/python3
"""PyTorch (Debian python3-torch 1.13, CPU) peer of the Fashion-MNIST CNN (apps/fashion_mnist_cnn):

  conv3x3(1->32, pad 1, nobias) - BN(32) - relu - conv3x3(32->32, pad 1, nobias) - BN - relu - max_pool(2)
  conv3x3(32->64, pad 1, nobias) - BN(64) - relu - conv3x3(64->64, pad 1, nobias) - BN - relu - max_pool(2)
  dropout(0.5) - Linear(3136 -> 10)

softmax cross entropy (batch mean), Adam(lr=1e-3, betas 0.9/0.999, eps 1e-8) as chainer.optimizers.Adam(),
batch 100 reshuffled each epoch, Fashion-MNIST 60,000/10,000 from the IDX files, pixels x 1/255,
evaluation after each epoch in batches of 100 (mean of per-batch means, as Chainer's Evaluator, with
BN on its running statistics and dropout off). Initialised as Chainer: W ~ LeCunNormal = N(0, 1/fan_in)
for the convolutions and the Linear layer, b = 0; BN gamma = 1, beta = 0, eps = 2e-5 and running
statistics decay 0.9 (Chainer's defaults; PyTorch's momentum 0.1). max_pool(2) is Chainer's
max_pooling_2d(2) (stride 2; cover_all adds nothing on 28 and 14).

usage: bench/peers/run-cnn-peer fashion_mnist_cnn --epochs 3 [--data DIR] [--threads 2]
       [--batchsize 100] [--seed 0] [--no-flush-denormal] [--device cuda] [--amp float16|bfloat16]
       [--model cnn|mlp]
--amp trains under torch.autocast in that dtype (with a GradScaler for float16, PyTorch's recipe;
the CPU's autocast takes bfloat16): the peer of the apps' --dtype mixed16 and mixed_bf16.
--model mlp trains the ChainerMN tutorial's MLP instead (784-1000-1000-10, ReLU, LeCunNormal
weights, Adam's defaults), the peer of apps/mnist_mlp (give it MNIST's directory).
On the GPU machine (PyTorch there, cuDNN with its defaults: benchmark off), --device cuda keeps
the model, the optimizer and both data sets on the GPU, as fashion_mnist_cnn --gpu does.
Prints one line per epoch
  epoch E train_loss L train_acc A test_loss L test_acc A train_s T eval_s T
then a JSON line (with peak RSS, ru_maxrss).
"""
import argparse
import contextlib
import gzip
import json
import math
import os
import platform
import resource
import struct
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--epochs', type=int, default=10)
    p.add_argument('--data', default='/usr/share/datasets/fashion-mnist',
                   help='directory with the Fashion-MNIST IDX(.gz) files')
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--batchsize', type=int, default=100)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--device', default='cpu', help="'cpu' or 'cuda'")
    p.add_argument('--amp', choices=['float16', 'bfloat16'], help='torch.autocast in this dtype')
    p.add_argument('--model', choices=['cnn', 'mlp'], default='cnn')
    p.add_argument('--no-flush-denormal', action='store_true',
                   help='leave FTZ/DAZ off (the peers set it: torch.set_flush_denormal(True))')
    return p.parse_args()


args = parse_args()
# thread settings must be in the environment before torch loads OpenBLAS/OpenMP
os.environ['OMP_NUM_THREADS'] = str(args.threads)
os.environ['OPENBLAS_NUM_THREADS'] = str(args.threads)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def read_idx(path):
    """One unsigned-byte IDX file (PATH.gz or PATH) as a uint8 tensor of its shape."""
    if os.path.exists(path + '.gz'):
        with gzip.open(path + '.gz', 'rb') as f:
            data = f.read()
    else:
        with open(path, 'rb') as f:
            data = f.read()
    zero, dtype_code, ndim = struct.unpack('>HBB', data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError('%s: not an unsigned-byte IDX file' % path)
    dims = struct.unpack('>' + 'I' * ndim, data[4:4 + 4 * ndim])
    t = torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8)
    if t.numel() != math.prod(dims):
        raise ValueError('%s: size mismatch %d vs %s' % (path, t.numel(), dims))
    return t.reshape(dims)


def load_fashion_mnist(directory):
    """(x_train, y_train, x_test, y_test): x float32 (N, 1, 28, 28) in [0, 1], y int64."""
    def images(name):
        x = read_idx(os.path.join(directory, name)).to(torch.float32)
        x *= 1.0 / 255.0  # as chainer.datasets.get_fashion_mnist (scale 1)
        return x.reshape(-1, 1, 28, 28).contiguous()

    def labels(name):
        return read_idx(os.path.join(directory, name)).to(torch.int64)
    return (images('train-images-idx3-ubyte'), labels('train-labels-idx1-ubyte'),
            images('t10k-images-idx3-ubyte'), labels('t10k-labels-idx1-ubyte'))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        chans = [(1, 32), (32, 32), (32, 64), (64, 64)]
        self.convs = nn.ModuleList(nn.Conv2d(i, o, 3, padding=1, bias=False) for i, o in chans)
        self.bns = nn.ModuleList(nn.BatchNorm2d(o, eps=2e-5, momentum=0.1) for _, o in chans)
        self.fc = nn.Linear(64 * 7 * 7, 10)
        for layer in list(self.convs) + [self.fc]:
            fan_in = layer.weight[0].numel()
            nn.init.normal_(layer.weight, 0.0, math.sqrt(1.0 / fan_in))
        nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            x = F.relu(bn(conv(x)))
            if i % 2 == 1:
                x = F.max_pool2d(x, 2)
        x = F.dropout(x, 0.5, self.training)
        return self.fc(x.flatten(1))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(784, 1000), nn.Linear(1000, 1000), nn.Linear(1000, 10)])
        for layer in self.layers:
            nn.init.normal_(layer.weight, 0.0, math.sqrt(1.0 / layer.weight.shape[1]))
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        x = x.flatten(1)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < 2:
                x = F.relu(x)
        return x


def autocast(device):
    """torch.autocast in --amp's dtype, or nothing."""
    if not args.amp:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=getattr(torch, args.amp))


def evaluate(model, x, y, bs):
    loss_sum = acc_sum = 0.0
    nb = 0
    with torch.no_grad(), autocast(x.device):
        for i in range(0, x.shape[0], bs):
            out = model(x[i:i + bs])
            loss_sum += F.cross_entropy(out, y[i:i + bs]).item()
            acc_sum += (out.argmax(1) == y[i:i + bs]).float().mean().item()
            nb += 1
    return loss_sum / nb, acc_sum / nb


def main():
    torch.set_num_threads(args.threads)
    if not args.no_flush_denormal:
        torch.set_flush_denormal(True)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    xtr, ytr, xte, yte = (t.to(device) for t in load_fashion_mnist(args.data))
    n, bs = xtr.shape[0], args.batchsize
    model = (MLP() if args.model == 'mlp' else CNN()).to(device)
    # The tutorial's Adam() is Chainer's default alpha 1e-3, as the CNN app's Adam(1e-3).
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    scaler = torch.cuda.amp.GradScaler() if args.amp == 'float16' and device.type == 'cuda' else None
    gen = torch.Generator().manual_seed(args.seed + 1)
    log = []
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        loss_sum = torch.zeros((), device=device)
        acc_sum = torch.zeros((), device=device)
        nb = 0
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, bs):
            idx = perm[i:i + bs].to(device)
            xb, yb = xtr.index_select(0, idx), ytr.index_select(0, idx)
            with autocast(device):
                out = model(xb)
                loss = F.cross_entropy(out, yb)
            opt.zero_grad(set_to_none=True)
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            with torch.no_grad():
                loss_sum += loss.detach()
                acc_sum += (out.argmax(1) == yb).float().mean()
            nb += 1
        tr_loss, tr_acc = loss_sum.item() / nb, acc_sum.item() / nb
        t1 = time.perf_counter()
        model.eval()
        te_loss, te_acc = evaluate(model, xte, yte, bs)
        t2 = time.perf_counter()
        log.append(dict(train_loss=tr_loss, train_acc=tr_acc, test_loss=te_loss, test_acc=te_acc,
                        train_s=t1 - t0, eval_s=t2 - t1))
        print('epoch %d train_loss %.6f train_acc %.6f test_loss %.6f test_acc %.6f '
              'train_s %.3f eval_s %.3f' % (epoch, tr_loss, tr_acc, te_loss, te_acc, t1 - t0,
                                            t2 - t1), flush=True)
    train_s = [r['train_s'] for r in log]
    eval_s = [r['eval_s'] for r in log]
    print(json.dumps({
        'peer': 'pytorch-python-fashion-' + args.model, 'amp': args.amp, 'epochs': len(log), 'batchsize': bs,
        'threads': torch.get_num_threads(), 'flush_denormal': not args.no_flush_denormal,
        'final_train_loss': log[-1]['train_loss'], 'final_train_acc': log[-1]['train_acc'],
        'final_test_loss': log[-1]['test_loss'], 'final_test_acc': log[-1]['test_acc'],
        'train_s': train_s, 'eval_s': eval_s, 'epoch1_train_s': train_s[0],
        'mean_train_s_excl_first': sum(train_s[1:]) / (len(train_s) - 1) if len(log) > 1 else None,
        'peak_rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        'device': str(device), 'peak_device_mib': (torch.cuda.max_memory_allocated() / 2**20
                                                   if device.type == 'cuda' else None),
        'torch': torch.__version__, 'mkldnn': torch.backends.mkldnn.is_available(),
        'env': {k: os.environ.get(k) for k in
                ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'OPENBLAS_CORETYPE')},
        'python': platform.python_version(), 'data': os.path.abspath(args.data),
        'date_utc': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
    }), flush=True)


if __name__ == '__main__':
    main()
