"""The mutant generator: each operator, stable ids, byte-exact edits, the paper-mode flag."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dptaucc.auditscore.mutants import population, stratified_sample
from dptaucc.auditscore.mutate import OPERATORS, mutants_of
from dptaucc.auditscore.targets import GROUPS, group_of, is_release_function

REPO = Path(__file__).resolve().parents[2]

SOURCE = '''\
import numpy as np


def release(x, sampler, ledger, paper):
    """ε-DP."""
    label = "ε"; scale = 2.0 / 0.5
    noisy = discrete_laplace_mechanism(x, epsilon=1.0, sensitivity=1, sampler=sampler,
                                       ledger=ledger, step="s")
    pick = exponential_mechanism(x, epsilon=0.5, sensitivity=2.0, sampler=sampler,
                                 ledger=ledger, step="c")
    if paper:
        noisy = noisy + sampler.rng.laplace(0.0, scale, size=x.shape)
    e1 = sampler.rng.random(3)
    e2 = sampler.rng.random(3)
    both = np.floor(sampler.rng.random(4)) - sampler.rng.random(4)
    total = min(noisy.sum(), 10) if scale >= 1 and label else -scale
    total += 1
    return noisy, pick, e1, e2, both, total
'''


def _by(op):
    return [m for m in mutants_of("dptaucc/privacy/x.py", SOURCE) if m.operator == op]


def test_every_operator_fires_and_every_mutant_parses():
    ms = mutants_of("dptaucc/privacy/x.py", SOURCE)
    assert {m.operator for m in ms} == set(OPERATORS)
    original = ast.dump(ast.parse(SOURCE))
    for m in ms:
        mutated = m.apply(SOURCE)
        assert ast.dump(ast.parse(mutated)) != original, m
        # every byte outside the edits is kept: the line count never changes
        assert mutated.count("\n") == SOURCE.count("\n")
    assert len({m.id for m in ms}) == len(ms)


def test_constants_doubled_halved_and_shifted_next_to_multibyte_text():
    line = '    label = "ε"; scale = 2.0 / 0.5'
    got = {m.operator: m.apply(SOURCE).splitlines()[5] for m in ms_at(6) if m.original == "0.5"}
    assert got == {"x2": line.replace("0.5", "1.0"), "half": line.replace("0.5", "0.25"),
                   "plus1": line.replace("0.5", "1.5"), "minus1": line.replace("0.5", "-0.5")}


def ms_at(line):
    return [m for m in mutants_of("dptaucc/privacy/x.py", SOURCE) if m.line == line]


def test_operators_swapped():
    texts = {m.apply(SOURCE).splitlines()[m.line - 1].strip() for m in _by("op")}
    assert 'label = "ε"; scale = 2.0 * 0.5' in texts
    assert "total -= 1" in texts
    assert "total = max(noisy.sum(), 10) if scale >= 1 and label else -scale" in texts
    assert "total = min(noisy.sum(), 10) if scale > 1 and label else -scale" in texts
    assert "total = min(noisy.sum(), 10) if scale >= 1 or label else -scale" in texts
    assert "total = min(noisy.sum(), 10) if scale >= 1 and label else (scale)" in texts


def test_arguments_swapped_but_not_the_ledger_or_strings():
    swaps = [m.apply(SOURCE).splitlines()[6].strip() for m in _by("args") if m.line == 7]
    assert "noisy = discrete_laplace_mechanism(x, epsilon=1, sensitivity=1.0, sampler=sampler," \
        in swaps
    assert not any("ledger=sampler" in s for s in swaps)
    # max(a, b) -> max(b, a) is no mutant
    assert not [m for m in _by("args") if m.line == 16]


def test_noisy_value_replaced_by_its_exact_input():
    exact = {m.line: m for m in _by("exact")}
    assert set(exact) == {7, 9, 12}
    code = exact[7].apply(SOURCE)
    assert "(discrete_laplace_mechanism(x, " in code and "ledger=ledger, step=\"s\"), x)[1]" in code
    assert "argmax(axis=1)" in exact[9].apply(SOURCE)  # a choice: the exact argmax
    assert exact[12].apply(SOURCE).splitlines()[11].strip() == "noisy = (noisy)"
    assert exact[12].paper_only and not exact[7].paper_only


def test_draw_reused_in_a_later_statement_and_in_the_same_one():
    reuse = _by("reuse")
    lines = sorted(m.line for m in reuse)
    assert lines == [14, 15]  # e2 reuses e1; the second random(4) reuses the first
    later = next(m for m in reuse if m.line == 14).apply(SOURCE).splitlines()
    assert later[12].strip() == "e1 = (_mutant_draw := sampler.rng.random(3))"
    assert later[13].strip() == "e2 = _mutant_draw"
    same = next(m for m in reuse if m.line == 15).apply(SOURCE).splitlines()[14].strip()
    assert same == "both = np.floor((_mutant_draw := sampler.rng.random(4))) - _mutant_draw"


def test_ids_survive_edits_elsewhere_in_the_file():
    before = {m.id: m.description for m in mutants_of("dptaucc/privacy/x.py", SOURCE)}
    shifted = SOURCE.replace("import numpy as np\n", "import numpy as np\nimport math\n\n")
    after = {m.id: m.description for m in mutants_of("dptaucc/privacy/x.py", shifted)}
    assert before == after


def test_release_functions_only():
    assert is_release_function("DPTauCC.fit") and is_release_function("_noisy_table")
    assert not is_release_function("DPKMeans.predict")
    assert not is_release_function("ColoredNoiseKMeans.evaluation_clustering_loss.cost")


def test_every_target_file_exists_and_parses():
    for group in GROUPS:
        for rel in group.files:
            assert (REPO / rel).is_file(), rel
            assert group_of(rel) is group
        for test in group.tests:
            assert (REPO / test).exists(), test


def test_population_and_sample_are_seeded_and_stratified():
    groups = [g for g in GROUPS if g.name == "dp_taucc"]
    pop = population(REPO, groups)
    assert pop == population(REPO, groups) and len(pop) > 100
    a, b = stratified_sample(pop, 20, 3), stratified_sample(pop, 20, 3)
    assert a == b and stratified_sample(pop, 20, 4) != a
    ops = {m.operator for m in pop}
    assert {m.operator for m in a} == ops  # every stratum represented
    assert len(a) == max(20, len(ops))
    assert stratified_sample(pop, None, 0) == sorted(pop, key=lambda m: m.id)


@pytest.mark.parametrize("rel", ["dptaucc/privacy/mechanisms.py", "dptaucc/dp_taucc.py"])
def test_the_noise_of_the_real_mechanisms_can_be_removed(rel):
    ms = [m for m in mutants_of(rel, (REPO / rel).read_text(encoding="utf-8"))
          if m.operator == "exact"]
    assert ms, f"no exact-release mutant in {rel}"
