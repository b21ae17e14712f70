import pytest

import roofkit


@pytest.fixture(scope="session")
def registry():
    """The builtin registry (immutable, so one per session is safe for read-only tests)."""
    return roofkit.build_registry(entry_points=False)
