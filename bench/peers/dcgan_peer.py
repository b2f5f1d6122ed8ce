#!/usr/bin/python3
"""PyTorch (Debian python3-torch 1.13, CPU) peer of train_dcgan (ChainerMN's DCGAN example), and the
Inception-score-like figure that compares both sides' generators.

train: the same DCGAN as apps/train_dcgan (net.py's networks with one channel, Fashion-MNIST padded
  with black to 32x32, pixels x 1/255; Adam(2e-4, betas 0.5/0.999) with weight decay 1e-4 added to
  the gradient, as Chainer's WeightDecay hook; W ~ N(0, 0.02), biases 0; BN eps 2e-5, running
  statistics decay 0.9; the discriminator's BN without gamma, Gaussian noise (sigma 0.2) on its input
  and hidden layers while training; z ~ U(-1, 1); updater.py's losses, batch means). One difference
  of order, since PyTorch refuses a backward through tensors that a step modified in place: both
  gradients come from the one forward before either step, so the generator's goes through the
  discriminator before its step (Chainer's, after it: one Adam step of 2e-4 apart).
  Writes the generator (state_dict) to --out.

score: trains a classifier on Fashion-MNIST (apps/fashion_mnist_cnn's CNN: two blocks of two 3x3
  convolutions with BN and ReLU and a 2x2 max pooling, dropout, Linear; Adam 1e-3, batch 100) for
  --classifier-epochs, or loads it from --classifier when that file exists (else saves it there);
  then, for each generator given (--ours: a gen_iter_N.npz of train_dcgan; --peer: a state_dict of
  train), draws --samples images from z ~ U(-1, 1) with --seed in test mode (BN on its running
  statistics, as visualize.py), crops the 28x28 centre and prints
      IS = exp(E_x KL(p(y|x) || p(y)))
  with p(y|x) the classifier's softmax and p(y) its mean over the samples (1 for samples that are all
  one class, 10 at most). The same figure of the real test images is printed as the reference.

usage: bench/peers/run-cnn-peer dcgan_peer train --iterations 1000 --out gen.pt [--ch 128] [--batchsize 50]
           [--n-hidden 100] [--seed 0] [--data DIR] [--threads 2] [--train-size N]
       bench/peers/run-cnn-peer dcgan_peer score [--ours gen_iter_1000.npz] [--peer gen.pt] [--ch 128]
           [--classifier FILE] [--classifier-epochs 1] [--classifier-train-size N] [--samples 5000]
           [--seed 0] [--data DIR]
Prints JSON lines.
"""
import argparse
import gzip
import json
import math
import os
import resource
import struct
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('command', choices=['train', 'score'])
    p.add_argument('--data', default='/usr/share/datasets/fashion-mnist')
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--ch', type=int, default=512)
    p.add_argument('--n-hidden', type=int, default=100)
    # train
    p.add_argument('--iterations', type=int, default=1000)
    p.add_argument('--batchsize', type=int, default=50)
    p.add_argument('--train-size', type=int, default=0)
    p.add_argument('--display-interval', type=int, default=100)
    p.add_argument('--out', default='gen.pt')
    # score
    p.add_argument('--ours', default='')
    p.add_argument('--peer', default='')
    p.add_argument('--classifier', default='')
    p.add_argument('--classifier-epochs', type=int, default=1)
    p.add_argument('--classifier-train-size', type=int, default=0, help='its first N training images (0: all)')
    p.add_argument('--samples', type=int, default=5000)
    return p.parse_args()


args = parse_args()
os.environ['OMP_NUM_THREADS'] = str(args.threads)
os.environ['OPENBLAS_NUM_THREADS'] = str(args.threads)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)
torch.set_flush_denormal(True)


def read_idx(path):
    """One unsigned-byte IDX file (PATH.gz or PATH) as a uint8 array of its shape."""
    opener = gzip.open if os.path.exists(path + '.gz') else open
    with opener(path + '.gz' if os.path.exists(path + '.gz') else path, 'rb') as f:
        data = f.read()
    ndim = data[3]
    shape = struct.unpack('>' + 'I' * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def fashion(split):
    """(images float32 (N, 1, 28, 28) in [0, 1], labels int64)."""
    prefix = 'train' if split == 'train' else 't10k'
    x = read_idx(os.path.join(args.data, prefix + '-images-idx3-ubyte')).astype(np.float32) / 255
    t = read_idx(os.path.join(args.data, prefix + '-labels-idx1-ubyte')).astype(np.int64)
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(t)


class Generator(nn.Module):
    """net.py's Generator (bottom width 4) with one output channel."""

    def __init__(self, n_hidden, ch, channels=1, bottom_width=4):
        super().__init__()
        self.n_hidden, self.ch, self.bw = n_hidden, ch, bottom_width
        self.l0 = nn.Linear(n_hidden, bottom_width * bottom_width * ch)
        self.dc1 = nn.ConvTranspose2d(ch, ch // 2, 4, 2, 1)
        self.dc2 = nn.ConvTranspose2d(ch // 2, ch // 4, 4, 2, 1)
        self.dc3 = nn.ConvTranspose2d(ch // 4, ch // 8, 4, 2, 1)
        self.dc4 = nn.ConvTranspose2d(ch // 8, channels, 3, 1, 1)
        self.bn0 = nn.BatchNorm1d(bottom_width * bottom_width * ch, eps=2e-5, momentum=0.1)
        self.bn1 = nn.BatchNorm2d(ch // 2, eps=2e-5, momentum=0.1)
        self.bn2 = nn.BatchNorm2d(ch // 4, eps=2e-5, momentum=0.1)
        self.bn3 = nn.BatchNorm2d(ch // 8, eps=2e-5, momentum=0.1)
        for m in [self.l0, self.dc1, self.dc2, self.dc3, self.dc4]:
            nn.init.normal_(m.weight, 0, 0.02)
            nn.init.zeros_(m.bias)

    def make_hidden(self, n, gen=None):
        return torch.rand(n, self.n_hidden, generator=gen) * 2 - 1

    def forward(self, z):
        h = F.relu(self.bn0(self.l0(z.reshape(len(z), -1)))).reshape(len(z), self.ch, self.bw, self.bw)
        h = F.relu(self.bn1(self.dc1(h)))
        h = F.relu(self.bn2(self.dc2(h)))
        h = F.relu(self.bn3(self.dc3(h)))
        return torch.sigmoid(self.dc4(h))

    def load_chainer_npz(self, path):
        """The parameters and running statistics of train_dcgan's gen_iter_N.npz."""
        d = np.load(path)
        state = {}
        for name in ['l0', 'dc1', 'dc2', 'dc3', 'dc4']:
            # Linear's W (out, in) and Deconvolution2D's (in, out, kh, kw) are laid out as PyTorch's.
            state[name + '.weight'] = torch.from_numpy(d[name + '/W'])
            state[name + '.bias'] = torch.from_numpy(d[name + '/b'])
        for name in ['bn0', 'bn1', 'bn2', 'bn3']:
            state[name + '.weight'] = torch.from_numpy(d[name + '/gamma'])
            state[name + '.bias'] = torch.from_numpy(d[name + '/beta'])
            state[name + '.running_mean'] = torch.from_numpy(d[name + '/avg_mean'])
            state[name + '.running_var'] = torch.from_numpy(d[name + '/avg_var'])
            state[name + '.num_batches_tracked'] = torch.tensor(int(d[name + '/N']))
        self.load_state_dict(state)


class NoGammaBN(nn.Module):
    """Chainer's BatchNormalization(use_gamma=False): normalized, plus a learned beta."""

    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c, eps=2e-5, momentum=0.1, affine=False)
        self.beta = nn.Parameter(torch.zeros(c))

    def forward(self, x):
        return self.bn(x) + self.beta.view(1, -1, 1, 1)


class Discriminator(nn.Module):
    """net.py's Discriminator (bottom width 4) on one input channel."""

    def __init__(self, ch, channels=1, bottom_width=4):
        super().__init__()
        spec = [(channels, ch // 8, 3, 1, 1), (ch // 8, ch // 4, 4, 2, 1), (ch // 4, ch // 4, 3, 1, 1),
                (ch // 4, ch // 2, 4, 2, 1), (ch // 2, ch // 2, 3, 1, 1), (ch // 2, ch, 4, 2, 1), (ch, ch, 3, 1, 1)]
        self.convs = nn.ModuleList(nn.Conv2d(*s) for s in spec)
        self.bns = nn.ModuleList(NoGammaBN(s[1]) for s in spec[1:])
        self.l4 = nn.Linear(bottom_width * bottom_width * ch, 1)
        for m in [*self.convs, self.l4]:
            nn.init.normal_(m.weight, 0, 0.02)
            nn.init.zeros_(m.bias)

    def noise(self, h):
        return h + 0.2 * torch.randn_like(h) if self.training else h

    def forward(self, x):
        h = F.leaky_relu(self.noise(self.convs[0](self.noise(x))), 0.2)
        for conv, bn in zip(self.convs[1:], self.bns):
            h = F.leaky_relu(self.noise(bn(conv(h))), 0.2)
        return self.l4(h.reshape(len(h), -1))


def train():
    torch.manual_seed(args.seed)
    x, _ = fashion('train')
    if args.train_size:
        x = x[:args.train_size]
    x = F.pad(x, (2, 2, 2, 2))  # 28x28 -> 32x32, black
    gen, dis = Generator(args.n_hidden, args.ch), Discriminator(args.ch)
    opts = [torch.optim.Adam(m.parameters(), lr=2e-4, betas=(0.5, 0.999), eps=1e-8, weight_decay=1e-4)
            for m in (gen, dis)]
    order, at, start = torch.randperm(len(x)), 0, time.time()
    for it in range(1, args.iterations + 1):
        if at + args.batchsize > len(order):
            order, at = torch.randperm(len(x)), 0
        x_real = x[order[at:at + args.batchsize]]
        at += args.batchsize
        y_real = dis(x_real)
        y_fake = dis(gen(gen.make_hidden(args.batchsize)))
        loss_dis = F.softplus(-y_real).mean() + F.softplus(y_fake).mean()
        loss_gen = F.softplus(-y_fake).mean()
        g_gen = torch.autograd.grad(loss_gen, list(gen.parameters()), retain_graph=True)
        g_dis = torch.autograd.grad(loss_dis, list(dis.parameters()))
        for model, grads, opt in ((gen, g_gen, opts[0]), (dis, g_dis, opts[1])):
            for p, g in zip(model.parameters(), grads):
                p.grad = g
            opt.step()
        if it % args.display_interval == 0:
            print(json.dumps({'iteration': it, 'gen/loss': loss_gen.item(), 'dis/loss': loss_dis.item(),
                              'elapsed_s': round(time.time() - start, 1)}), flush=True)
    torch.save(gen.state_dict(), args.out)
    print(json.dumps({'train_s': round(time.time() - start, 1), 'iterations': args.iterations,
                      'peak_rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      'torch': torch.__version__}), flush=True)


class Classifier(nn.Module):
    """apps/fashion_mnist_cnn's CNN."""

    def __init__(self):
        super().__init__()
        chans = [(1, 32), (32, 32), (32, 64), (64, 64)]
        self.convs = nn.ModuleList(nn.Conv2d(i, o, 3, 1, 1, bias=False) for i, o in chans)
        self.bns = nn.ModuleList(nn.BatchNorm2d(o, eps=2e-5, momentum=0.1) for _, o in chans)
        self.fc = nn.Linear(64 * 7 * 7, 10)

    def forward(self, x):
        h = x
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            h = F.relu(bn(conv(h)))
            if i % 2 == 1:
                h = F.max_pool2d(h, 2)
        return self.fc(F.dropout(h.reshape(len(h), -1), 0.5, self.training))


def classifier():
    model = Classifier()
    if args.classifier and os.path.exists(args.classifier):
        model.load_state_dict(torch.load(args.classifier))
    else:
        torch.manual_seed(1)
        x, t = fashion('train')
        if args.classifier_train_size:
            x, t = x[:args.classifier_train_size], t[:args.classifier_train_size]
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(args.classifier_epochs):
            model.train()
            order = torch.randperm(len(x))
            for i in range(0, len(x), 100):
                idx = order[i:i + 100]
                opt.zero_grad()
                F.cross_entropy(model(x[idx]), t[idx]).backward()
                opt.step()
        if args.classifier:
            torch.save(model.state_dict(), args.classifier)
    model.eval()
    x, t = fashion('test')
    with torch.no_grad():
        acc = sum((model(x[i:i + 500]).argmax(1) == t[i:i + 500]).sum().item() for i in range(0, len(x), 500)) / len(x)
    print(json.dumps({'classifier_test_accuracy': round(acc, 4)}), flush=True)
    return model


def inception_score(model, images):
    """exp(E_x KL(p(y|x) || p(y))) of IMAGES (N, 1, 28, 28), and the classes' share of the samples."""
    with torch.no_grad():
        p = torch.cat([F.softmax(model(images[i:i + 500]), 1) for i in range(0, len(images), 500)]).double()
    py = p.mean(0, keepdim=True)
    kl = (p * (torch.log(p + 1e-12) - torch.log(py + 1e-12))).sum(1).mean()
    return math.exp(kl.item()), [round(v, 3) for v in np.bincount(p.argmax(1).numpy(), minlength=10) / len(p)]


def samples(gen):
    gen.eval()
    g = torch.Generator().manual_seed(args.seed)
    with torch.no_grad():
        x = torch.cat([gen(gen.make_hidden(min(500, args.samples - i), g)) for i in range(0, args.samples, 500)])
    return x[:, :, 2:30, 2:30]  # the 28x28 centre: the padding undone


def score():
    model = classifier()
    real, _ = fashion('test')
    s, share = inception_score(model, real)
    print(json.dumps({'source': 'real test images', 'n': len(real), 'IS': round(s, 3), 'class_share': share}))
    for source, path in (('ours', args.ours), ('pytorch', args.peer)):
        if not path:
            continue
        gen = Generator(args.n_hidden, args.ch)
        if source == 'ours':
            gen.load_chainer_npz(path)
        else:
            gen.load_state_dict(torch.load(path))
        s, share = inception_score(model, samples(gen))
        print(json.dumps({'source': source, 'generator': path, 'n': args.samples, 'IS': round(s, 3),
                          'class_share': share}), flush=True)


if __name__ == '__main__':
    train() if args.command == 'train' else score()
