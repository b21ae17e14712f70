import pytest

import roofkit


@pytest.fixture(scope="session")
def registry():
    """The builtin registry (immutable, so one per session is safe for read-only tests)."""
    return roofkit.build_registry(entry_points=False)


@pytest.fixture(scope="session")
def serving_suite(registry):
    """The whole serving validation set scored once per session (static and load cases)."""
    from roofkit.serving.suite import run

    return run(registry=registry)
