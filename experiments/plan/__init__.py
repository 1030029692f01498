"""The reproduction as a plan of independent jobs (:mod:`.plan`) dispatched on Dask (:mod:`.engine`);
its command line is ``scripts/plan.py`` (:mod:`.cli`)."""
