"""The experiment engine's Hydra configs, installed as ``dptaucc.conf`` (read with ``pkg://``)."""
