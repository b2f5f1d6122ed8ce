"""bench/peers/seq2seq_peer.py on a dump of the layout `seq2seq --dump-ids` writes, made up here so
the peer is tested without the app: a copy task (target = source) over random sequences of a
12-token vocabulary. It must print one JSON line per epoch with every field compare_seq2seq.sh
reads, and its loss must fall over 3 epochs. (--ddp is not run here: in two of three fresh-clone
suite runs its 2 gloo processes never finished, while alone it takes 3 s; bench/compare_seq2seq.sh
--procs2 runs it.) Skipped (77)
without Debian's python3-torch or python3-nltk, which the peer runs on.
  seq2seq_peer.py REPOSITORY_ROOT"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

root = sys.argv[1]
peer = os.path.join(root, "bench", "peers", "seq2seq_peer.py")
python = "/usr/bin/python3"  # the peers' interpreter (run-cnn-peer's): Debian's torch and nltk
probe = subprocess.run([python, "-c", "import torch, nltk"], capture_output=True, text=True)
if probe.returncode != 0:
    last = (probe.stderr.strip().splitlines() or [""])[-1]
    print("skipped: %s cannot import torch and nltk (apt-get install python3-torch python3-nltk): %s" % (python, last))
    sys.exit(77)

KEYS = ["epoch", "procs", "train_s", "eval_s", "tokens_per_s", "loss", "perp", "bleu", "token_error_rate",
        "sequence_error_rate", "peak_rss_mib", "iterations", "src_tokens", "tgt_tokens"]


def write_dump(d, n_train, n_valid, vocab, seed):
    rnd = random.Random(seed)
    words = ["<eos>", "<unk>"] + ["w%d" % i for i in range(vocab - 2)]
    for side in ("source", "target"):
        with open(os.path.join(d, "vocab.%s.txt" % side), "w") as f:
            f.write("\n".join(words) + "\n")
    for split, n in (("train", n_train), ("validation", n_valid)):
        seqs = [[rnd.randrange(2, vocab) for _ in range(rnd.randint(1, 6))] for _ in range(n)]
        for side in ("source", "target"):
            with open(os.path.join(d, "%s.%s.txt" % (split, side)), "w") as f:
                f.write("".join(" ".join(map(str, s)) + "\n" for s in seqs))


def run(d, extra):
    cmd = [python, peer, "--data-dir", d, "--unit", "32", "--layer", "2", "--batchsize", "16", "--seed", "1"] + extra
    start = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    print("$ %s  (%.1f s, exit %d)" % (" ".join(cmd[1:]), time.time() - start, p.returncode))
    print(p.stdout, end="")
    if p.returncode != 0:
        print(p.stderr[-2000:])
        return None
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


failures = []
with tempfile.TemporaryDirectory() as d:
    write_dump(d, 200, 20, 12, 0)
    lines = run(d, ["--epoch", "3", "--threads", "1"])
    if lines is None or len(lines) != 3:
        failures.append("1 process: expected 3 JSON lines")
    else:
        for line in lines:
            missing = [k for k in KEYS if k not in line]
            if missing:
                failures.append("epoch %s lacks %s" % (line.get("epoch"), missing))
        if [line["epoch"] for line in lines] != [1, 2, 3] or lines[0]["procs"] != 1:
            failures.append("epochs %s, procs %s" % ([line["epoch"] for line in lines], lines[0]["procs"]))
        if not lines[2]["loss"] < lines[0]["loss"]:
            failures.append("the loss did not fall: %s" % [line["loss"] for line in lines])
        if not all(0 <= line["bleu"] <= 1 and 0 <= line["sequence_error_rate"] <= 1 for line in lines):
            failures.append("BLEU or the sequence error rate outside [0, 1]")
        if lines[0]["iterations"] != 13 or lines[0]["train_pairs"] != 200:
            failures.append("200 pairs in batches of 16 are 13 iterations, not %s" % lines[0]["iterations"])
for f in failures:
    print("FAIL: " + f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
