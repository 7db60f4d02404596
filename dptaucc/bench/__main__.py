"""``python -m dptaucc.bench``: the Hydra entry point (one job, or a sweep with ``-m``).

Exit codes: 0 done; 1 a job failed; 2 refused (an unknown choice or key on the command line,
an invalid config, a single run off its experiment's grid, the store locked by another sweep);
130 interrupted (Ctrl-C: finished records are kept, rerunning the same command resumes).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from dptaucc.bench import cores_launcher, slurm_launcher
from dptaucc.bench.configs import CONFIG_MODULE, UnknownChoiceError, check_choices
from dptaucc.bench.hydra_sweep import task
from dptaucc.bench.overrides import UnknownKeyError, check_overrides

cores_launcher.register()
slurm_launcher.register()


@hydra.main(version_base="1.3", config_path=f"pkg://{CONFIG_MODULE}", config_name="config")
def main(cfg: DictConfig) -> None:
    task(cfg)


def cli() -> int:
    try:
        check_choices(sys.argv[1:])
        check_overrides(sys.argv[1:])
    except (UnknownChoiceError, UnknownKeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        main()
    except KeyboardInterrupt:
        print("\ninterrupted: finished jobs are stored; run the same command again to resume",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
