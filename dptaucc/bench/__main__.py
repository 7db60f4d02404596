"""``python -m dptaucc.bench``: the Hydra entry point (one job, or a sweep with ``-m``)."""

from __future__ import annotations

import logging

import hydra
from omegaconf import DictConfig

from dptaucc.bench.configs import CONFIG_MODULE
from dptaucc.bench.run import run_job, summarize, to_plain

log = logging.getLogger("dptaucc.bench")


@hydra.main(version_base="1.3", config_path=f"pkg://{CONFIG_MODULE}", config_name="config")
def main(cfg: DictConfig) -> None:
    outcome, rec = run_job(to_plain(cfg))
    log.info("%s: %s", outcome, summarize(rec))


if __name__ == "__main__":
    main()
