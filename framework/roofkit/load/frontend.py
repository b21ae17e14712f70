"""The serving frontend: the API-server process between the clients and one engine replica.

Each queue below is one serial worker, first come first served (Lindley's recursion: a job
arriving at ``x_j`` with service ``s_j`` completes at ``c_j = max(x_j, c_{j-1}) + s_j``):

- a request sent at ``send_i`` is tokenized on the tokenizer thread (``per_prompt_token x
  L_i``; serial across requests, beside the event loop), then admitted by the event loop
  (``per_request``); the engine sees it when that completes;
- a step ending at ``e_k`` in which ``n_k`` sequences emitted a token costs the event loop
  ``per_token x n_k``; those tokens reach their clients when that job completes.

The engine does not wait for the frontend (vLLM V1's engine core hands its outputs to a
queue), so the two couple only through admissions and, in a closed loop, through each client
resending on its last token as delivered. :func:`couple` runs the engine on the admissions the
frontend gives and the frontend on the steps the engine ran, until the admissions no longer
move.
"""

from __future__ import annotations

import attrs
import numpy as np

#: engine runs at most, and the largest shift of an admission (s) that counts as settled
PASSES = 8
SETTLED = 1e-4


def fifo(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Completion times of jobs arriving at ``x`` (sorted) with service ``s`` on one serial
    worker: ``c_j = S_j + max_{i <= j} (x_i - S_{i-1})`` with ``S`` the running sum of ``s``."""
    total = np.cumsum(s)
    return total + np.maximum.accumulate(x - (total - s))


@attrs.frozen
class Delivery:
    """What the frontend did for one replica's trace."""

    visible: np.ndarray  # when the engine sees each request (s)
    send: np.ndarray  # when each request's client sent it
    first: np.ndarray  # when each request's first token reached its client
    finish: np.ndarray  # when its last token did
    step: np.ndarray  # when each step's tokens reached their clients
    busy: float  # event-loop busy time (s)


def deliver(fe, trace, stream) -> Delivery:
    """The frontend ``fe`` (:class:`roofkit.schema.engine.Frontend`) in front of ``trace``,
    the engine's run of ``stream``; in a closed loop each client resends on the delivered last
    token of its previous request (plus its think time)."""
    n = len(stream)
    inp = np.asarray(trace.input_len, dtype=float)
    ends = np.asarray(trace.step_end, dtype=float)
    emitted = np.asarray(trace.step_emitted, dtype=float)
    k_first = np.minimum(np.searchsorted(ends, trace.first_token), max(len(ends) - 1, 0))
    k_last = np.minimum(np.searchsorted(ends, trace.finish), max(len(ends) - 1, 0))
    stream_cost = fe.per_token * emitted
    if stream.arrival is not None:
        send = np.asarray(stream.arrival, dtype=float)
        visible, step = _loop(fe, send, inp, ends, stream_cost)
        return Delivery(visible, send, step[k_first], step[k_last], step,
                        float(stream_cost.sum() + fe.per_request * n))
    # a closed loop: request j >= C is sent when the (j - C)-th request to finish in the
    # engine has its last token delivered (the scheduler issues ids in finishing order)
    c = min(stream.concurrency or n, n)
    think = np.zeros(n) if stream.delay is None else np.asarray(stream.delay, dtype=float)
    order = np.argsort(trace.finish, kind="stable")
    # the deliveries of steps depend on admissions only through the event loop's queue;
    # two sweeps settle the sends on the steps this trace ran
    step = _loop(fe, np.zeros(0), np.zeros(0), ends, stream_cost)[1]
    for _ in range(2):
        send = think.copy()
        if n > c:
            send[c:] += step[k_last[order[:n - c]]]
        visible, step = _loop(fe, send, inp, ends, stream_cost)
    return Delivery(visible, send, step[k_first], step[k_last], step,
                    float(stream_cost.sum() + fe.per_request * n))


def _loop(fe, send, inp, ends, stream_cost):
    """(engine-visible time per request, delivery time per step) of one frontend."""
    order = np.argsort(send, kind="stable")
    tok = np.empty(len(send))
    tok[order] = fifo(send[order], fe.per_prompt_token * inp[order])
    # the event loop: each step's streaming job, then the admissions, in time order (a step
    # ending as a request is tokenized is streamed first)
    x = np.concatenate([ends, tok])
    s = np.concatenate([stream_cost, np.full(len(tok), fe.per_request)])
    seq = np.argsort(x, kind="stable")
    done = np.empty(len(x))
    done[seq] = fifo(x[seq], s[seq])
    return done[len(ends):], done[:len(ends)]


def engine_stream(stream, trace, visible):
    """``stream`` as the engine sees it: arrivals at ``visible`` (open loop), or each
    request's delay after its predecessor's engine finish (closed loop)."""
    if stream.arrival is not None:
        return attrs.evolve(stream, arrival=visible)
    n = len(stream)
    c = min(stream.concurrency or n, n)
    delay = visible.copy()
    if n > c:
        prev = np.sort(trace.finish, kind="stable")[:n - c]
        delay[c:] = visible[c:] - prev
    return attrs.evolve(stream, delay=np.maximum(delay, 0.0))


def first_guess(fe, stream):
    """The engine's view of ``stream`` with the frontend idle but for admissions: the
    admission queue of the sends known up front (an open loop's, a closed loop's first
    round), and a later closed-loop request ``think + per_request + per_prompt_token x L``
    after its predecessor."""
    n = len(stream)
    inp = np.asarray(stream.input_len, dtype=float)
    if stream.arrival is not None:
        visible, _ = _loop(fe, np.asarray(stream.arrival, dtype=float), inp, np.zeros(0),
                           np.zeros(0))
        return attrs.evolve(stream, arrival=visible)
    c = min(stream.concurrency or n, n)
    think = np.zeros(n) if stream.delay is None else np.asarray(stream.delay, dtype=float)
    delay = think + fe.per_request + fe.per_prompt_token * inp
    delay[:c], _ = _loop(fe, think[:c], inp[:c], np.zeros(0), np.zeros(0))
    return attrs.evolve(stream, delay=delay)


def _moved(a, b) -> float:
    """The largest change between two engine views of one stream (arrivals or delays)."""
    x, y = (a.arrival, b.arrival) if a.arrival is not None else (a.delay, b.delay)
    return float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) if len(x) else 0.0


def couple(fe, stream, run_engine):
    """Run the engine (``run_engine(stream) -> Trace``) and the frontend ``fe`` to a fixed
    point: ``(trace, delivery, passes, settled)``. The engine runs on :func:`first_guess`,
    then on the admissions the frontend gives for its last run, until they move by at most
    :data:`SETTLED` (an open loop's arrivals, a closed loop's delays after each predecessor's
    finish); ``settled`` is False when they still do after :data:`PASSES` engine runs (the
    last run and its deliveries are returned)."""
    seen = first_guess(fe, stream)
    trace = run_engine(seen)
    passes, settled = 1, False
    while True:
        d = deliver(fe, trace, stream)
        nxt = engine_stream(stream, trace, d.visible)
        if _moved(nxt, seen) <= SETTLED:
            settled = True
            break
        if passes >= PASSES:
            break
        seen = nxt
        trace = run_engine(seen)
        passes += 1
    return trace, d, passes, settled


def itl(d: Delivery, trace, tokens_per_step: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Inter-token gaps as the clients see them: each step's delivery after the previous
    step's, per token (``tokens_per_step`` a sequence), weighted by the tokens that were not a
    request's first."""
    ends = np.asarray(trace.step_end, dtype=float)
    if len(ends) < 2:
        return np.zeros(0), np.zeros(0)
    k_first = np.searchsorted(ends, trace.first_token)
    firsts = np.bincount(np.minimum(k_first, len(ends) - 1), minlength=len(ends))
    w = (np.asarray(trace.step_emitted, dtype=float) - firsts)[1:] * tokens_per_step
    gap = np.diff(d.step) / tokens_per_step
    keep = w > 0
    return gap[keep], w[keep]
