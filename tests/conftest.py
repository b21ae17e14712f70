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


def _dist_asked(config) -> str:
    """The ``--dist`` mode the run was given (addopts, then the command line; last wins)."""
    mode = ""
    args = [*config.getini("addopts"), *map(str, config.invocation_params.args)]
    for k, a in enumerate(args):
        if a == "--dist" and k + 1 < len(args):
            mode = args[k + 1]
        elif a.startswith("--dist="):
            mode = a.split("=", 1)[1]
    return mode


def pytest_configure(config):
    """pytest 9 with pytest-xdist 3.8 runs ``--dist loadgroup`` without its groups (the
    workers lose the mode, so no ``@group`` suffix reaches a node id), and every worker would
    score the whole serving suite: stop, naming the fix, rather than run twice as long."""
    if _dist_asked(config) != "loadgroup" or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    try:
        import xdist
    except ImportError:
        return
    version = tuple(int(x) for x in pytest.__version__.split(".")[:1])
    if version >= (9,) and tuple(int(x) for x in xdist.__version__.split(".")[:2]) <= (3, 8):
        raise pytest.UsageError(
            f"pytest {pytest.__version__} with pytest-xdist {xdist.__version__} does not keep "
            "the xdist_group tests on one worker under --dist loadgroup: install the test "
            "extra's pytest (pip install 'pytest>=7.4,<9')")
