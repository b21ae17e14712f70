import os

import pytest

import roofkit

# each pytest-xdist worker keeps a spec cache of its own, so no worker rewrites the cache
# another is reading (the cache is per process safe, not a shared test fixture)
if os.environ.get("PYTEST_XDIST_WORKER"):
    _base = os.environ.get("ROOFKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "roofkit")
    _own = os.path.join(_base, f"xdist-{os.environ['PYTEST_XDIST_WORKER']}")
    os.makedirs(_own, mode=0o700, exist_ok=True)
    os.environ["ROOFKIT_CACHE_DIR"] = _own


@pytest.fixture(scope="session")
def registry():
    """The builtin registry (immutable, so one per session is safe for read-only tests)."""
    return roofkit.build_registry(entry_points=False)


@pytest.fixture(scope="session")
def serving_suite(registry):
    """The whole serving validation set scored once per session (static and load cases)."""
    from roofkit.serving.suite import run

    return run(registry=registry)
