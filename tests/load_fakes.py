"""Stand-ins for the load simulator's step costs, for scheduler tests worked by hand."""

from __future__ import annotations

PREFILL, DECODE = 0.030, 0.010  # seconds: every prefill step, every decode step


class _Attn:
    def __init__(self, dense):
        self.dense = dense
        self.t = [[0.0, 0.0]] * (dense + 1)


class ConstantCosts:
    """Constant step times: a prefill step PREFILL, a decode step DECODE; decode runs of up
    to ``dense`` sequences take the scheduler's vectorised path."""

    verify = 1
    max_seqs = 16

    def __init__(self, dense: int = 0):
        self.attn_decode = _Attn(dense)
        self.ctx_grid = [0.0, 1e6]
        self.decode_fixed = [DECODE] * 17

    def device_time(self, n_decode, mean_context, chunks=(), samples=None, pad=None):
        return PREFILL

    def decode_time(self, n, c, pad):
        return DECODE
