"""The research harness: data, the results store, the runners, the audit, the figures, and the command
line (:mod:`experiments.app`).

Importing a module imports only what that module needs: Hydra loads with the command line, and
whatever composes a config registers what ``conf/`` names first
(:func:`experiments.app.schema.register_schema`).
"""
