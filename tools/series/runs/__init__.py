"""Running things on trees: tests now, benchmarks next.

* :mod:`~series.runs.plan`, :mod:`~series.runs.schedule`: which test runs, and running them;
* :mod:`~series.runs.slots`: the reusable work trees runs happen in;
* :mod:`~series.runs.pytest_run`: one pytest run and what it found;
* :mod:`~series.runs.cache`: results keyed by tree, selection and environment;
* :mod:`~series.runs.report`: statuses, tables, JSON and JUnit;
* :mod:`~series.runs.lint`: ruff on the files each patch touches;
* ``harness/``: the pytest plugin that makes the tests import the tree under test.
"""
