#!/usr/bin/python3
"""PyTorch peer of apps/seq2seq (ChainerMN's examples/chainermn/seq2seq/seq2seq.py), Debian's
python3-torch on the CPU (--device cuda on a GPU), trained on the ids the app dumps
(`seq2seq --dump-ids DIR`), so both engines see the very same pairs and vocabularies.

The model is the example's Seq2seq: nn.Embedding for source and target, an nn.LSTM encoder and
decoder (n_layers x n_units, dropout 0.1 between layers as NStepLSTM's), the decoder started from
the encoder's final (h, c), a Linear output; initialized as Chainer initializes EmbedID (N(0, 1)),
NStepLSTM and Linear (W ~ N(0, 1/fan_in), b = 0). Sources are reversed; ys_in = [EOS] + y,
ys_out = y + [EOS]; the sequences go through the LSTMs as PackedSequences (sorted inside
pack_sequence, as NStepLSTM sorts them). Loss: softmax cross entropy summed over the target
tokens and divided by the batch size, perplexity exp(sum / tokens), both averaged over the
epoch's batches as Chainer's LogReport averages them. Adam with Chainer's defaults (lr 0.001,
betas 0.9/0.999, eps 1e-8).

After each epoch the validation set is translated greedily (batches of 100, at most 100 tokens,
as the example's translate) and scored: corpus BLEU as the example's BleuEvaluator (NLTK's
corpus_bleu, smoothing method1), and the token and sequence error rates (edit distance over the
reference lengths; the share of sequences with any error), the G2P task's measures.

--ddp trains in --procs processes (gloo on 127.0.0.1, DistributedDataParallel, --threads each)
as ../../../shared/peers/torch_ddp.py does: each epoch's shuffled order is split between the ranks
(DistributedSampler), --batchsize is per rank (ChainerMN's is per process too), gradients are
averaged; the ranks translate their part of the validation set and rank 0 scores the whole.

usage: bench/peers/run-cnn-peer seq2seq_peer --data-dir DIR [--unit 256] [--layer 2]
       [--batchsize 64] [--epoch 1] [--seed 0] [--threads 2] [--device cpu|cuda]
       [--ddp [--procs 2] [--port P]] [--no-shuffle]
Prints one JSON line per epoch (rank 0): train_s, eval_s, tokens_per_s (source tokens plus
target tokens with their EOS, per second of training), loss, perp, bleu, token_error_rate,
sequence_error_rate, peak_rss_mib (rank 0's, as the app's --timing reports it under mpiexec;
peak_rss_mib_max_rank the largest), and the configuration.
"""
import argparse
import json
import math
import os
import resource
import socket
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, help="what seq2seq --dump-ids wrote")
    p.add_argument("--unit", "-u", type=int, default=256)
    p.add_argument("--layer", "-l", type=int, default=2)
    p.add_argument("--batchsize", "-b", type=int, default=64, help="per process")
    p.add_argument("--epoch", "-e", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2, help="per process")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--ddp", action="store_true", help="data-parallel over --procs processes (CPU, gloo)")
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--port", type=int, default=0, help="gloo's rendezvous port; 0 picks a free one")
    # The example's SerialIterator does not shuffle; the app and this peer do by default.
    p.add_argument("--no-shuffle", action="store_true")
    p.add_argument("--max-length", type=int, default=100, help="of a greedy translation")
    p.add_argument("--eval-batch", type=int, default=100)
    a = p.parse_args()
    if a.ddp and a.device != "cpu":
        p.error("--ddp runs on the CPU (gloo)")
    return a


args = parse_args()
# Before torch loads: the OpenMP and OpenBLAS teams of each process take their size from these.
os.environ["OMP_NUM_THREADS"] = str(args.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.rnn import PackedSequence, pack_sequence  # noqa: E402

# NLTK from Debian's python3-nltk: /usr/bin/python3 finds it; another interpreter may not.
if "/usr/lib/python3/dist-packages" not in sys.path:
    sys.path.append("/usr/lib/python3/dist-packages")
try:
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu  # noqa: E402
except ImportError:
    sys.exit("seq2seq_peer: BLEU needs NLTK (Debian's python3-nltk, or pip install nltk) for %s" % sys.executable)

EOS = 0


class Seq2seq(nn.Module):
    def __init__(self, n_layers, n_source_vocab, n_target_vocab, n_units):
        super().__init__()
        self.embed_x = nn.Embedding(n_source_vocab, n_units)
        self.embed_y = nn.Embedding(n_target_vocab, n_units)
        self.encoder = nn.LSTM(n_units, n_units, n_layers, dropout=0.1)
        self.decoder = nn.LSTM(n_units, n_units, n_layers, dropout=0.1)
        self.W = nn.Linear(n_units, n_target_vocab)
        # Chainer's initializers: EmbedID N(0, 1); NStepLSTM's and Linear's LeCunNormal per matrix
        # (each of PyTorch's stacked gate matrices has the fan-in of Chainer's 8 separate ones), b = 0.
        with torch.no_grad():
            for e in (self.embed_x, self.embed_y):
                nn.init.normal_(e.weight, 0.0, 1.0)
            for name, p in [*self.encoder.named_parameters(), *self.decoder.named_parameters(),
                            *self.W.named_parameters()]:
                if name.startswith("weight"):
                    nn.init.normal_(p, 0.0, math.sqrt(1.0 / p.shape[1]))
                else:
                    nn.init.zeros_(p)

    def embed_packed(self, embed, seqs):
        """The sequences packed (sorted inside pack_sequence), embedded in one call on the packed
        ids as the example's sequence_embed embeds the concatenation."""
        ids = pack_sequence(seqs, enforce_sorted=False)
        return PackedSequence(embed(ids.data), ids.batch_sizes, ids.sorted_indices, ids.unsorted_indices)

    def forward(self, xs, ys):
        """xs, ys: lists of int64 tensors on the model's device. Returns (sum of the token losses,
        number of target tokens)."""
        eos = torch.zeros(1, dtype=torch.int64, device=xs[0].device)
        xs = [x.flip(0) for x in xs]
        ys_in = [torch.cat([eos, y]) for y in ys]
        ys_out = [torch.cat([y, eos]) for y in ys]
        _, (h, c) = self.encoder(self.embed_packed(self.embed_x, xs))  # h, c in the batch's order
        eys = self.embed_packed(self.embed_y, ys_in)
        out, _ = self.decoder(eys, (h, c))
        # The targets in the packed order of the decoder's outputs: the same lengths, the same sort.
        order = eys.sorted_indices.tolist()
        target = pack_sequence([ys_out[i] for i in order], enforce_sorted=True).data
        loss = F.cross_entropy(self.W(out.data), target, reduction="sum")
        return loss, target.numel()

    @torch.no_grad()
    def translate(self, xs, max_length):
        """Greedy decoding as the example's translate; stops once every row has produced EOS
        (what follows a row's first EOS is cut anyway, so the hypotheses are the example's)."""
        batch = len(xs)
        _, (h, c) = self.encoder(self.embed_packed(self.embed_x, [x.flip(0) for x in xs]))
        ys = torch.zeros(batch, dtype=torch.int64, device=h.device)
        result = []
        done = torch.zeros(batch, dtype=torch.bool, device=h.device)
        for _ in range(max_length):
            o, (h, c) = self.decoder(self.embed_y(ys).unsqueeze(0), (h, c))
            ys = self.W(o[0]).argmax(1)
            result.append(ys)
            done |= ys == EOS
            if bool(done.all()):
                break
        outs = []
        for y in torch.stack(result, 1).tolist():
            outs.append(y[:y.index(EOS)] if EOS in y else y)
        return outs


def read_ids(path):
    with open(path) as f:
        return [[int(t) for t in line.split()] for line in f]


def read_split(data_dir, split):
    src = read_ids(os.path.join(data_dir, split + ".source.txt"))
    tgt = read_ids(os.path.join(data_dir, split + ".target.txt"))
    if len(src) != len(tgt):
        sys.exit("seq2seq_peer: %s: %d source and %d target lines" % (split, len(src), len(tgt)))
    pairs = list(zip(src, tgt))
    if not pairs or any(not s or not t for s, t in pairs):
        sys.exit("seq2seq_peer: %s: no pairs, or an empty sequence" % split)
    return pairs


def vocab_size(data_dir, side):
    with open(os.path.join(data_dir, "vocab.%s.txt" % side)) as f:
        return sum(1 for _ in f)


def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def shard(n, epoch, rank, world, shuffle, seed):
    """This rank's indices of an epoch, as DistributedSampler makes them (one permutation seeded
    by seed + epoch on every rank, padded to a multiple of world, rank r taking r, r + world, ...)."""
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        order = torch.randperm(n, generator=g).tolist()
    else:
        order = list(range(n))
    order += order[:(-n) % world]
    return order[rank::world]


def worker(rank, world, a):
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)  # ours runs with FTZ/DAZ
    dev = torch.device(a.device)
    if a.device != "cpu":  # float32 as ours computes it on CUDA: no TF32 (cuDNN's default allows it)
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    ddp = world > 1
    if ddp:
        import torch.distributed as dist
        import datetime
        # A bounded rendezvous: a failed start is an error, not a hang (GLOO_SOCKET_IFNAME is set above).
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.port, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(a.seed)  # the same initial model on every rank (DDP broadcasts rank 0's too)
    train = read_split(a.data_dir, "train")
    valid = read_split(a.data_dir, "validation")
    n_src, n_tgt = vocab_size(a.data_dir, "source"), vocab_size(a.data_dir, "target")
    train_t = [(torch.tensor(s, dtype=torch.int64), torch.tensor(t, dtype=torch.int64)) for s, t in train]
    model = Seq2seq(a.layer, n_src, n_tgt, a.unit).to(dev)
    net = model
    if ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP
        net = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    # The validation pairs split between the ranks once (chainermn.scatter_dataset's contiguous parts).
    lo, hi = len(valid) * rank // world, len(valid) * (rank + 1) // world
    my_valid = valid[lo:hi]
    for epoch in range(1, a.epoch + 1):
        net.train()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        idx = shard(len(train_t), epoch, rank, world, not a.no_shuffle, a.seed)
        loss_sum = perp_sum = 0.0
        batches = src_tokens = tgt_tokens = 0
        for i in range(0, len(idx), a.batchsize):
            batch = [train_t[j] for j in idx[i:i + a.batchsize]]
            xs = [s.to(dev) for s, _ in batch]
            ys = [t.to(dev) for _, t in batch]
            total, n_words = net(xs, ys)
            loss = total / len(batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            lv = loss.item()
            loss_sum += lv
            perp_sum += math.exp(lv * len(batch) / n_words)
            batches += 1
            src_tokens += sum(len(x) for x in xs)
            tgt_tokens += n_words
        if dev.type == "cuda":
            torch.cuda.synchronize()
        train_s = time.perf_counter() - t0
        stats = [loss_sum, perp_sum, batches, src_tokens, tgt_tokens]
        if ddp:
            s = torch.tensor(stats, dtype=torch.float64)
            dist.all_reduce(s)
            stats = s.tolist()
        t1 = time.perf_counter()
        model.eval()
        hyps = []
        for i in range(0, len(my_valid), a.eval_batch):
            hyps += model.translate([torch.tensor(s, dtype=torch.int64, device=dev)
                                     for s, _ in my_valid[i:i + a.eval_batch]], a.max_length)
        rss = rss_max = peak_rss_mib()
        if ddp:
            parts = [None] * world
            dist.all_gather_object(parts, (hyps, rss))
            hyps = [h for p, _ in parts for h in p]
            rss_max = max(r for _, r in parts)
        if rank == 0:
            refs = [t for _, t in valid]
            bleu = corpus_bleu([[r] for r in refs], hyps, smoothing_function=SmoothingFunction().method1)
            edits = sum(edit_distance(h, r) for h, r in zip(hyps, refs))
            wrong = sum(h != r for h, r in zip(hyps, refs))
            eval_s = time.perf_counter() - t1
            loss_sum, perp_sum, batches, src_tokens, tgt_tokens = stats
            print(json.dumps({
                "engine": "pytorch " + torch.__version__, "device": a.device, "procs": world,
                "threads": a.threads, "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
                "unit": a.unit, "layer": a.layer, "batchsize": a.batchsize,
                "train_pairs": len(train), "validation_pairs": len(valid), "epoch": epoch,
                "iterations": int(batches), "train_s": round(train_s, 3), "eval_s": round(eval_s, 3),
                "src_tokens": int(src_tokens), "tgt_tokens": int(tgt_tokens),
                "tokens_per_s": round((src_tokens + tgt_tokens) / train_s, 1),
                "loss": round(loss_sum / batches, 5), "perp": round(perp_sum / batches, 5),
                "bleu": round(bleu, 5), "token_error_rate": round(edits / sum(len(r) for r in refs), 5),
                "sequence_error_rate": round(wrong / len(refs), 5), "peak_rss_mib": round(rss, 1),
                "peak_rss_mib_max_rank": round(rss_max, 1)}), flush=True)
        if ddp:
            dist.barrier()  # the next epoch's time starts together on every rank
    if ddp:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if not args.ddp or args.procs == 1:
        worker(0, 1, args)
        return
    if args.port == 0:
        args.port = free_port()
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args.procs, args), nprocs=args.procs, join=True)


if __name__ == "__main__":
    main()
