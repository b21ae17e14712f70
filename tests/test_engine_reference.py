"""The Engine reference's two examples, verbatim with only the import changed."""

from __future__ import annotations

import doctest

SOLVE_EXAMPLE = """
>>> from roofkit import Engine, Hardware, Models
>>> result = Engine.solve(Models.Vision.ResNet50, Hardware.Cloud.H100)
>>> result.feasible
True
>>> result.latency >= max(result.latency_compute, result.latency_memory)
True
"""

SWEEP_EXAMPLE = """
>>> from roofkit import Engine, Hardware, Models
>>> rows = Engine.sweep(Models.Vision.ResNet50, [Hardware.Cloud.H100], [1, 2])
>>> [row['batch_size'] for row in rows]
[1, 2]
>>> all(row['profile'].feasible for row in rows)
True
"""


def _run(text: str, name: str) -> doctest.TestResults:
    test = doctest.DocTestParser().get_doctest(text, {}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    return runner.summarize(verbose=False)


def test_solve_example():
    result = _run(SOLVE_EXAMPLE, "Engine.solve")
    assert result.failed == 0 and result.attempted == 4


def test_sweep_example():
    result = _run(SWEEP_EXAMPLE, "Engine.sweep")
    assert result.failed == 0 and result.attempted == 4
