"""``python -m dptaucc.baselines.fccm [n_trials]``: the paper-style table on the planted matrix."""

import sys

from .paper_table import paper_table

if __name__ == "__main__":
    n_trials = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    table = paper_table(n_trials=n_trials)
    print(f"{'method':<14} {'corr best':>9} {'corr mean':>9} {'NMI(whole)':>10} {'NMI(truth)':>10}")
    for name, row in table.items():
        print(f"{name:<14} {row['corr_best']:9.3f} {row['corr_mean']:9.3f} "
              f"{row['nmi_whole_mean']:10.3f} {row['nmi_truth_mean']:10.3f}")
