"""A zero layout degree is refused, never read as 'unset' (``train --tp 0`` once trained at
tp 1; ``serve --pp 0`` was a ZeroDivisionError; ``serve --ep 0`` ran as ep 1)."""

from __future__ import annotations

import pytest
from hostile_run import kept_promises, run_cli

CASES = [
    ["train", "llama-3.1-8b", "dgx-h100", "--seq-len", "2048", "--tp", "0"],
    ["train", "llama-3.1-8b", "dgx-h100", "--seq-len", "2048", "--dp", "0"],
    ["train", "llama-3.1-8b", "dgx-h100", "--seq-len", "0"],
    ["serve", "llama-3.1-8b", "dgx-h100", "--pp", "0"],
    ["serve", "deepseek-v3", "h100", "--ep", "0"],
    ["simulate", "deepseek-v3", "h100", "--concurrency", "4", "--attention-dp", "0"],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a[:1] + a[-2:]))
def test_a_zero_layout_degree_is_refused(argv):
    o = run_cli(*argv)
    kept_promises(o)
    assert o.code == 1, o
    assert "expected an integer >= 1, got 0" in o.err
    assert o.out == ""
