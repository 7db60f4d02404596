"""Every method under one relation: which methods the comparison holds, what its summaries and
the crossover say, and that the figure and the report sections are made from the tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dptaucc.bench import row_relation as rr
from dptaucc.bench.figures import experiment_plots
from dptaucc.bench.report import crossover_section, row_relation_section


def test_the_comparison_holds_the_methods_private_for_one_row_replaced():
    assert rr.ROW_LEVEL == ("dp_taucc_row", "dp_kmeans", "dphd", "dpnmf", "dpm",
                            "colored_noise")
    assert rr.VARIANTS == ("dp_taucc_row",)


def _real(scores: dict[str, float], ref: float = 0.7) -> pd.DataFrame:
    rows = []
    for ds in ("cstr", "tr11"):
        for seed in range(3):
            rows.append({"dataset": ds, "algorithm": "fast_taucc", "mode": None, "seed": seed,
                         "epsilon": math.nan, "nmi_rows": ref, "status": "ok"})
            for alg, value in scores.items():
                for eps in (0.5, 3.0):
                    rows.append({"dataset": ds, "algorithm": alg, "mode": "corrected",
                                 "seed": seed, "epsilon": eps, "nmi_rows": value + 0.01 * seed,
                                 "status": "ok"})
    return pd.DataFrame(rows)


def test_the_verdict_says_near_zero_only_when_every_point_is():
    low = rr.one_relation(_real({"dp_taucc_row": 0.02, "dp_kmeans": 0.03, "dp_taucc": 0.5}))
    assert set(low["algorithm"]) == {"dp_taucc_row", "dp_kmeans", "fast_taucc"}  # not the cell one
    assert rr.one_relation_verdict(low).startswith("Every method is near 0 at every ε <= 3")
    high = rr.one_relation(_real({"dp_taucc_row": 0.02, "dpm": 0.2}))
    text = rr.one_relation_verdict(high)
    assert text.startswith("Mean row NMI reaches 0.1 or more") and "DPM (cstr, tr11)" in text


def test_the_crossover_is_the_first_epsilon_at_half_the_reference():
    rows = [{"n_cols": 100, "algorithm": "fast_taucc", "mode": None, "epsilon": math.nan,
             "nmi_rows": 0.8, "status": "ok"}]
    curve = {0.5: 0.1, 3.0: 0.45, 10.0: 0.3, 100.0: 0.6}  # reaches 0.4 at 3, drops, comes back
    rows += [{"n_cols": 100, "algorithm": "dpnmf", "mode": "corrected", "epsilon": e,
              "nmi_rows": v, "status": "ok"} for e, v in curve.items()]
    rows += [{"n_cols": 100, "algorithm": "dp_kmeans", "mode": "corrected", "epsilon": e,
              "nmi_rows": 0.0, "status": "ok"} for e in curve]
    table = rr.crossover(pd.DataFrame(rows)).set_index("algorithm")
    assert table.loc["dpnmf", "first_eps"] == 3.0 and table.loc["dpnmf", "stays_from"] == 100.0
    assert table.loc["dpnmf", "target"] == pytest.approx(0.4)
    assert np.isnan(table.loc["dp_kmeans", "first_eps"])
    verdict = rr.crossover_verdict(table.reset_index())
    assert "DPNMF: ε <= 3 (m = 100)." in verdict
    assert "DP-KMeans: not within the grid (m = 100)." in verdict
    lines = "\n".join(crossover_section({"row_crossover": pd.DataFrame(rows)}))
    assert "| DPNMF | 3 (stays from 100); best 0.60 at 100 |" in lines


def test_the_figure_and_the_table_need_the_row_variant_in_fig2_real():
    without = _real({"dp_kmeans": 0.03})
    assert "fig2_row_relation_corrected" not in dict(experiment_plots("fig2_real", without))
    assert row_relation_section({"fig2_real": without}) == []
    real = _real({"dp_taucc_row": 0.02, "dp_kmeans": 0.03, "dp_taucc": 0.5})
    plots = dict(experiment_plots("fig2_real", real))
    fig = plots["fig2_row_relation_corrected"]()
    labels = {t.get_text() for t in fig.legends[0].get_texts()}
    assert {"DP-τCC (row): protocol, not DP", "Fast-τCC (not DP)"} <= labels
    text = "\n".join(row_relation_section({"fig2_real": real}))
    assert "| 0.5 | cstr | 0.03 ± 0.01 | 0.04 ± 0.01 | 0.51 ± 0.01 | 0.70 |" in text
    assert "**What it shows.** Every method is near 0" in text
