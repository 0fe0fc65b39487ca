"""Collection settings for the whole suite.

``--doctest-modules`` (pyproject) runs the docstring examples of ``src``; the helper modules of
the tests and the fixture generators under ``tests/data`` are not doctest material (some import
optional harnesses), so they are left out of collection here.
"""

collect_ignore_glob = ["harness/_*.py", "data/*"]
