"""The machinery: units, symbols, formula objects and their unit check, evaluation, the solver, sheets and
their rendering, input validation. It imports no content (no formula, model, accelerator or question):
tests/test_layering.py holds the direction, formulas/ and the model description build on it, the
derivations on those, then the API and the CLI.
"""
