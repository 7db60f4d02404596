"""A user's study (the README's own-method sweep, corrected mode): the report's headline is
about their sweep (no paper verdict), every method once, a method's DP series declared by
``row_labels_private_`` or its release kinds; its figures show its modes, ε axis from the data.
"""

from __future__ import annotations

import pandas as pd

from dptaucc.bench import figures
from dptaucc.bench.headline import headline_section
from dptaucc.bench.published import published_values
from dptaucc.bench.run import row_labels_declared_private


def user_sweep() -> pd.DataFrame:
    """The README's sweep, corrected mode: DP-τCC and a method of yours that declares its row
    labels DP (no evaluation protocol: its protocol score is its DP labels' score)."""
    rows = []
    for alg in ("dp_taucc", "random_rows"):
        for ds in ("cstr", "mydata"):
            for e in (0.5, 1.0):
                for seed in range(2):
                    dp = 0.1 * e + 0.01 * seed
                    rows.append({
                        "algorithm": alg, "dataset": ds, "mode": "corrected", "epsilon": e,
                        "seed": seed, "status": "ok", "private": True,
                        "nmi_rows": dp + (0.2 if alg == "dp_taucc" else 0.0),
                        "nmi_rows_private": dp, "ari_rows": 0.0, "ari_rows_private": 0.0,
                        "row_labels_private": True, "end_to_end_dp": True,
                        "epsilon_spent": e, "n_cols": 10})
    return pd.DataFrame(rows)


def test_a_user_study_headline_is_about_the_users_sweep(tmp_path):
    lines = headline_section({"fig2_real": user_sweep()}, tmp_path, published_values())
    text = "\n".join(lines)
    assert "it holds your method random_rows and your dataset mydata." in text
    assert "Does each paper figure reproduce" not in text and "reproduces?" not in text
    rows = [line for line in lines if line.startswith("| random_rows")]
    assert len(rows) == 2  # one per ε: the method once
    assert "its DP row labels (DP)" in rows[0]
    assert "| mydata (yours) |" in next(line for line in lines if line.startswith("| method"))


def test_a_users_method_with_dp_labels_is_one_series():
    d = user_sweep()
    mine = figures.row_series(d[d["algorithm"] == "random_rows"], "random_rows", "corrected",
                              "nmi_rows")
    assert [name for _, _, name in mine] == ["random_rows: its DP row labels (DP)"]
    ours = figures.row_series(d[d["algorithm"] == "dp_taucc"], "dp_taucc", "corrected",
                              "nmi_rows")
    assert len(ours) == 2  # DP-τCC's protocol scores other labels than its DP ones


def test_a_users_figures_show_its_modes_and_data_only():
    plots = dict(figures.real_data_plots(user_sweep()))
    assert "fig2_nmi_paper" not in plots  # no paper-mode runs: no paper-mode figure
    fig = plots["fig2_nmi_corrected"]()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend.count("random_rows: its DP row labels (DP)") == 1
    assert not any("paper's Fig. 2" in t for t in legend)
    for ax in fig.axes:
        if ax.get_visible():
            assert ax.get_xlim()[1] < 1.5  # the axis ends near the data's ε = 1, not at 3


def test_release_kinds_declare_dp_row_labels():
    class Declared:
        def release_kinds(self):
            return {"row_labels_": "dp"}

    class ReadsData:
        def release_kinds(self):
            return {"row_labels_": "non-private"}

    assert row_labels_declared_private(Declared())
    assert not row_labels_declared_private(ReadsData())


def test_the_suites_own_experiments_are_not_a_users_study():
    """Every experiment the suite ships (the crossover too) is the suite's: a results folder
    holding them gets the paper's verdict, not the report about a user's study."""
    from dptaucc.bench.configs import EXPERIMENTS
    from dptaucc.bench.study import SUITE_EXPERIMENTS, study

    assert set(EXPERIMENTS) == set(SUITE_EXPERIMENTS)
    table = pd.DataFrame({"algorithm": ["dp_taucc_row"], "dataset": ["biclusters"]})
    assert study({exp: table for exp in EXPERIMENTS}).is_paper
