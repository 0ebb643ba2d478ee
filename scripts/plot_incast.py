#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots the incast time series of tests/sim/test_incast.cpp for docs/dcqcn.md.

usage: plot_incast.py TSV_DIR OUT_DIR

TSV_DIR holds incast-N-dcqcn.tsv and incast-N-none.tsv, written by

    UROCE_INCAST_TSV_DIR=TSV_DIR meson test -C build --suite sim 'sim-incast-*'

(or build/tests/sim/sim_incast_test '[incast16]' with the variable set).
For each N it writes OUT_DIR/incast-N.png: the goodput of every flow
(completed WRITE bytes, averaged over 1 ms) and the bottleneck queue with
Kmin/Kmax, DCQCN on the left, no congestion control on the right; the
window the tests judge fairness and the queue over is shaded.
Needs matplotlib (Debian: python3-matplotlib).
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KMIN_KB, KMAX_KB, BUFFER_KB = 5, 160, 250  # as in test_incast.cpp (kRed, kBuffer)
SMOOTH = 4  # samples of 250 us: 1 ms


def judged(n):
    """The window test_incast.cpp judges (its timeline()), in ms."""
    fair_from = (n - 1) * 0.5 + 30
    return fair_from, fair_from + 20


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    t = [float(r["t_ms"]) for r in rows]
    q = [float(r["queue_kb"]) for r in rows]
    flows = sorted({k[len("goodput"):-len("_gbps")] for k in rows[0] if k.startswith("goodput")}, key=int)
    rates = [[float(r[f"goodput{i}_gbps"]) for r in rows] for i in flows]
    return t, q, rates


def smooth(xs, n=SMOOTH):
    out = []
    for i in range(len(xs)):
        w = xs[max(0, i - n + 1):i + 1]
        out.append(sum(w) / len(w))
    return out


def plot(n, tsv_dir, out_dir):
    fig, ax = plt.subplots(2, 2, figsize=(12, 6), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for col, mode, title in ((0, "dcqcn", "DCQCN (paper preset scaled to 10 Gb/s)"), (1, "none", "no congestion control")):
        lo, hi = judged(n)
        path = os.path.join(tsv_dir, f"incast-{n}-{mode}.tsv")
        if not os.path.exists(path):
            print(f"missing {path}", file=sys.stderr)
            return False
        t, q, rates = load(path)
        for i, r in enumerate(rates):
            ax[0][col].plot(t, smooth(r), lw=0.9, label=f"flow {i}" if n <= 4 else None)
        ax[0][col].axhline(10 * 1024 / 1083 / n, color="k", ls=":", lw=0.8, label="fair share")
        ax[0][col].set_title(f"{n}:1 incast at 10 Gb/s, {title}")
        ax[0][col].set_ylabel("goodput per flow [Gb/s]")
        ax[0][col].set_ylim(0, 10)
        for a in (ax[0][col], ax[1][col]):
            a.axvspan(lo, hi, color="0.9", zorder=0, label="judged" if a is ax[0][col] else None)
        ax[0][col].legend(loc="upper right", fontsize=7)
        ax[1][col].plot(t, q, lw=0.7, color="tab:red")
        for y, name in ((KMIN_KB, "Kmin"), (KMAX_KB, "Kmax"), (BUFFER_KB, "buffer")):
            ax[1][col].axhline(y, color="k", ls="--" if name != "buffer" else "-", lw=0.6)
            ax[1][col].text(t[-1], y, f" {name}", va="center", fontsize=7)
        ax[1][col].set_ylabel("bottleneck queue [KB]")
        ax[1][col].set_xlabel("virtual time [ms]")
        ax[1][col].set_ylim(0, BUFFER_KB * 1.05)
    fig.tight_layout()
    out = os.path.join(out_dir, f"incast-{n}.png")
    fig.savefig(out, dpi=90)
    plt.close(fig)
    print(f"wrote {out}")
    return True


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    os.makedirs(sys.argv[2], exist_ok=True)
    ok = all([plot(n, sys.argv[1], sys.argv[2]) for n in (2, 4, 8, 16)])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
