"""Figures and tables, drawn from stored records or summaries alone (never from memory).

* :mod:`.style` — how every figure looks and is written: the mechanisms' colours, markers and
  labels, legend orders, the guarantee and scale labels, and :func:`~.style.save`;
* :mod:`.paper` — the JMLR paper's figures (1-5 and the classification figure);
* :mod:`.tables` — the JMLR paper's tables (Table 1, Table 2, footnote 1);
* :mod:`.extras` — the figures of the experiments beyond the paper (dimension scaling, online
  regret);
* :mod:`.cli` — ``scripts/make_figures.py``: draws all of the above into one output directory, and
  knows the curated (committed) directories;
* :mod:`.peers` — the peers comparison (``scripts/plot_peers.py``);
* :mod:`.calibration` — the paper-versus-tight calibration comparison (``scripts/plot_calibration.py``).
"""
