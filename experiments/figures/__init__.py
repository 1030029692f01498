"""Figures and tables, drawn from stored records or summaries alone (never from memory).

* :mod:`.paper` — the JMLR paper's figures and tables and the figures of the experiments beyond it
  (``scripts/make_figures.py``); its :func:`~.paper.save` and scale label are the one style the
  other modules use;
* :mod:`.peers` — the peers comparison (``scripts/plot_peers.py``);
* :mod:`.calibration` — the paper-versus-tight calibration comparison (``scripts/plot_calibration.py``).
"""
