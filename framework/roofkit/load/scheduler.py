"""The engine loop: continuous batching of a request stream, one step at a time.

Each iteration forms a step from the engine's policy, costs it with the circuit's step
tables (:mod:`.steps`) plus the engine's host time (:mod:`.host`), and advances the clock:

- ``decode-first`` (vLLM V1, TensorRT-LLM in-flight): every running sequence decodes;
  the token budget left (``max_num_batched_tokens - decode rows``) goes to prompts, first
  the one being chunked, then waiting requests in arrival order while ``max_num_seqs`` and
  the KV cache allow. Without chunked prefill a prompt enters only whole.
- ``prefill-first`` (vLLM V0, SGLang): when a prompt can be admitted the step prefills
  (decode rows join it only with ``mixed_batches``); otherwise the running sequences decode.

KV cache (bytes of one device): ``weights + n_seqs * (state + kv_token * (block - 1) / 2)
+ kv_token * tokens held``, within the usable memory. ``grow`` admission holds each
sequence's tokens as they are written; when a decode step finds no room the most recently
admitted sequence is preempted and recomputed later (its prompt and generated tokens are
prefilled again). ``reserve`` admits a request only with room for all of its tokens.
``peak`` (SGLang with requests that ignore EOS and the radix cache off) holds tokens as
``grow`` does but admits a request only if the cache never runs out while every admitted
request generates all of its tokens, finishing ones freeing theirs (:func:`peak_fits`); a
refused head of the queue is tried again only after a sequence finishes. A declared
prefix-cache hit rate skips that share of each new prompt's prefill (whole blocks).

An overlapped host (SGLang's zero-overhead scheduler) forms step ``k`` while step ``k - 1``
runs, from the requests it has received when step ``k - 2`` returned: a request arriving
during step ``k - 1`` joins step ``k + 1`` at the earliest (``arrival <= start of step
k - 1``), one step later than a serial host lets it. An idle engine takes a request at once.
A decode pool of disaggregated serving streams a request's first token (sampled by the
prefill pool) when it takes the request in: at the first step boundary after the KV
landed, ``max(arrival, start of the step taking it - the step before it, when overlapped)``.

A closed loop's client sends its next request on its last one's final token, after the
engine has formed the step that follows: that request joins the step after it at the
earliest (TensorRT-LLM's ``executionLoop`` fetches new requests and launches step ``k + 1``
as it returns step ``k``'s tokens; vLLM V1's busy loop likewise; docs/load.md).

The loop keeps O(1) work per step: decode sequences are a heap of their finishing step,
the running contexts a sum, so a step costs a few float operations and one table lookup
per term. Speculative decoding generates ``tokens_per_step`` tokens per sequence per step
(the expected accepted drafts plus one).
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import attrs
import numpy as np

from ..errors import OOMError
from .steps import startup


@attrs.frozen
class EngineConfig:
    """What the loop needs of an engine and a deployment."""

    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    mixed_batches: bool
    policy: str
    block_size: int
    admission: str
    graph_sizes: tuple[int, ...]
    kv_capacity: float  # bytes free for KV and state on one device after the weights
    kv_token: float  # KV bytes one token of one sequence holds on one device
    state_seq: float  # recurrent state bytes per sequence on one device
    prefix_hit: float = 0.0
    tokens_per_step: float = 1.0  # tokens a decode step yields per sequence (spec decode)
    draft_time: object = None  # callable(n_decode, mean_context) -> s, or None
    decode_only: bool = False  # a decode pool of disaggregated serving: prompts arrive prefilled


@attrs.frozen(eq=False)
class Trace:
    """What one engine did: per request and per step."""

    arrival: np.ndarray
    first_token: np.ndarray
    finish: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    itl: np.ndarray  # inter-token gaps (s), one entry per group of equal gaps
    itl_weight: np.ndarray  # tokens each gap stands for
    step_end: np.ndarray  # clock at the end of each step
    step_time: np.ndarray
    step_seqs: np.ndarray  # sequences in each step
    step_tokens: np.ndarray  # token rows of each step
    step_emitted: np.ndarray  # sequences that emitted a token in each step
    step_kv: np.ndarray  # KV bytes held after each step
    preemptions: int
    host_batches: tuple[int, int]  # the smallest and largest sequence count of any step
    prefill_tokens: int


def _graph_size(sizes, n):
    """The captured size a decode batch of n pads to (None: beyond the largest)."""
    if not sizes or n > sizes[-1]:
        return None
    import bisect

    return sizes[bisect.bisect_left(sizes, n)]


def run(stream, cfg: EngineConfig, costs, host) -> Trace:
    """Simulate ``stream`` on one engine instance (see the module docstring)."""
    n = len(stream)
    inp = [int(x) for x in stream.input_len]
    out = [int(x) for x in stream.output_len]
    closed = stream.arrival is None
    if not closed and not np.all(np.isfinite(stream.arrival)):
        raise ValueError("request arrival times must be finite seconds")
    arrival = [0.0] * n if closed else [float(x) for x in stream.arrival]
    conc = stream.concurrency or n
    first = [math.nan] * n
    finish = [math.nan] * n
    cap = cfg.kv_capacity
    b_tok = cfg.kv_token
    b_seq = cfg.state_seq + cfg.kv_token * (cfg.block_size - 1) / 2.0
    E = cfg.tokens_per_step
    verify = costs.verify
    budget_max = cfg.max_num_batched_tokens
    max_seqs = cfg.max_num_seqs
    sizes = tuple(cfg.graph_sizes)
    eager, graph = host.eager, host.graph
    overlap = host.overlap
    hit = cfg.prefix_hit
    block = cfg.block_size
    reserve = cfg.admission == "reserve"
    peak = cfg.admission == "peak"
    draft = cfg.draft_time
    dev_time = costs.device_time
    dec_time = costs.decode_time
    attn = costs.attn_decode
    dense = attn.dense
    attn_rows = [np.asarray(row) for row in attn.t[:dense + 1]]
    ctx_grid = np.asarray(costs.ctx_grid, dtype=float)
    fixed_of = costs.decode_fixed
    # the device startup of the step's kernels (launch.graph_node each)
    start_graph, start_eager = startup(getattr(costs, "graph_step", 0.0), overlap)
    pad_of = [_graph_size(sizes, k) for k in range(min(max_seqs, costs.max_seqs) + 1)]
    longest = max(inp) + max(out)
    if cfg.decode_only:
        per = b_seq + b_tok * longest
    else:
        per = b_seq + b_tok * (longest if reserve or peak else min(max(inp), budget_max))
    if cap < per:
        raise OOMError(f"the KV cache holds {max(cap, 0) / 1e9:.2f} GB per device after the "
                       "weights (and the engine's profiling peak, where it sizes its cache "
                       f"after one): not one request of {max(inp)} + {max(out)} tokens fits",
                       required=per, available=max(cap, 0.0))

    # request state
    next_req = 0  # next request not yet arrived (open loop) or issued (closed loop)
    issued = 0
    waiting: deque = deque()
    prefilling: list = []  # [rid, done, total, resumed]
    heap: list = []  # (finish_D, rid, version)
    version = [0] * n
    join_D = [0] * n
    join_ctx = [0.0] * n
    prompt = list(inp)  # tokens to prefill (grows by the generated ones after preemption)
    remaining = list(out)  # tokens still to generate
    reserved = [0.0] * n
    last_token = [0.0] * n
    running_order: list = []  # decode sequences in admission order (lazy: finished skipped)
    in_decode = [False] * n
    n_dec = 0
    sum_ctx = 0.0
    kv_used = 0.0
    D = 0
    t = 0.0
    preempt = 0
    prefill_tokens = 0
    done = 0
    gaps, gap_w = [], []
    ends, times, seqs_l, toks_l, kv_l, emit_l = [], [], [], [], [], []
    lo_b, hi_b = 10**9, 0
    stall = 0.0
    joined_in_stall = 0
    lag = 0.0  # overlapped host: the step now running, which its arrivals cannot join
    # peak admission: the decoding sequences (numpy mirrors of their join state for the
    # vectorized check) and whether the head of the queue was refused (no new prompt is
    # tried again until a sequence finishes or is preempted: SGLang's batch_is_full)
    dec_set: set = set()
    np_rem = np.zeros(n)
    np_jD = np.zeros(n)
    np_jc = np.zeros(n)
    blocked = False
    # a closed loop's requests wait in ``pending`` (arrival, rid) for their client delay
    delay = [0.0] * n if stream.delay is None else [float(x) for x in stream.delay]
    pending: list = []
    # the successors sent when a step's requests finish: the engine forms its next step as
    # that step ends, before a client can take its last token and send again, so they reach
    # ``pending`` only after that step is formed (they join the one after it at the earliest)
    resent: list = []
    if closed:
        for _ in range(min(conc, n)):
            arrival[issued] = delay[issued]
            heapq.heappush(pending, (delay[issued], issued))
            issued += 1
        next_req = n

    def admit_cost(rid):
        if reserve:
            return b_seq + b_tok * (prompt[rid] + remaining[rid])
        return b_seq

    def peak_ok(rid):
        """SGLang's admission of a request that ignores EOS: it fits if the KV cache never
        runs out while every admitted request generates all its tokens (see
        :func:`peak_fits`)."""
        if b_tok <= 0:
            return True
        idx = np.fromiter(dec_set, dtype=np.int64, count=len(dec_set))
        done_ = (D - np_jD[idx]) * E
        left = [np.array([float(remaining[rid])]), np_rem[idx] - done_]
        held = [np.array([float(prompt[rid])]), np_jc[idx] - 1.0 + done_]
        if prefilling:
            left.append(np.array([float(remaining[it[0]]) for it in prefilling]))
            held.append(np.array([float(it[2]) for it in prefilling]))
        free = (cap - kv_used - b_seq) / b_tok - prompt[rid]
        return peak_fits(free, np.concatenate(left), np.concatenate(held))

    while done < n:
        # arrivals up to now (to the start of the step running, for an overlapped host)
        seen = t - lag
        while next_req < n and arrival[next_req] <= seen:
            waiting.append(next_req)
            next_req += 1
        while pending and pending[0][0] <= seen:
            waiting.append(heapq.heappop(pending)[1])
        for item in resent:
            heapq.heappush(pending, item)
        resent.clear()
        nxt = arrival[next_req] if next_req < n else (pending[0][0] if pending else None)
        if not waiting and not prefilling and n_dec == 0:
            if nxt is not None:
                t = max(t, nxt)
                lag = 0.0
                continue
            break
        if cfg.decode_only:
            # a decode pool: arrived requests join the batch with their KV transferred
            while waiting and n_dec < max_seqs:
                rid = waiting[0]
                need = b_seq + b_tok * (prompt[rid] + (remaining[rid] if reserve else 0))
                if kv_used + need > cap:
                    break
                waiting.popleft()
                kv_used += need
                reserved[rid] = need if reserve else b_seq
                if math.isnan(first[rid]):
                    # its first token (sampled by the prefill pool) is streamed when the
                    # decode server takes it in, at the first step boundary after its KV
                    # landed: the end of the step that ran then (``t - lag``; SGLang's
                    # decode loop streams a prebuilt batch's token when it forms it)
                    first[rid] = max(arrival[rid], t - lag)
                in_decode[rid] = True
                n_dec += 1
                ctx0 = prompt[rid] + 1.0
                join_D[rid], join_ctx[rid] = D, ctx0
                sum_ctx += ctx0
                heapq.heappush(heap, (D + math.ceil(remaining[rid] / E), rid, version[rid]))
                running_order.append(rid)
            chunks = []
            decode_rows = n_dec
        elif not prefilling and (not waiting or (peak and blocked and n_dec > 0)):
            # only decoding: until the next finish, arrival or KV overflow nothing changes
            # but the contexts, so a run of steps is costed at once (a refused queue waits
            # for the next finish whatever arrives)
            if waiting:
                nxt = None
            if draft is None and stall == 0.0 and n_dec <= dense and heap:
                m = heap[0][0] - D - 1
                if not reserve and b_tok > 0:
                    m = min(m, int((cap - kv_used) // (b_tok * n_dec * E)))
                if m >= 8:  # shorter runs: the scalar step is cheaper than the arrays
                    nd = n_dec
                    pad = pad_of[nd] if nd < len(pad_of) else None
                    b = nd if nd < len(eager) else len(eager) - 1
                    h = graph[b] if pad is not None else eager[b]
                    c = (sum_ctx + np.arange(m) * (nd * E)) / nd
                    dev = fixed_of[nd if pad is None else pad] + np.interp(c, ctx_grid,
                                                                           attn_rows[nd])
                    dev = dev + (start_graph if pad is not None else start_eager)
                    dts = np.maximum(dev, h) if overlap else dev + h
                    end = t + np.cumsum(dts)
                    if nxt is not None:
                        # a step may start only before the next arrival is seen: at a
                        # step's end (serial host), at its start (overlapped host)
                        edge = end - dts if overlap else end
                        m = min(m, 1 + int(np.searchsorted(edge[:m - 1], nxt)))
                        end, dts = end[:m], dts[:m]
                    if m >= 2:
                        t = float(end[-1])
                        lag = float(dts[-1]) if overlap else 0.0
                        D += m
                        sum_ctx += m * nd * E
                        kv0 = kv_used
                        if not reserve:
                            kv_used += m * b_tok * nd * E
                        gaps.extend((dts / E).tolist())
                        gap_w.extend([nd * E] * m)
                        ends.extend(end.tolist())
                        times.extend(dts.tolist())
                        seqs_l.extend([nd] * m)
                        toks_l.extend([nd * verify] * m)
                        emit_l.extend([nd] * m)
                        kv_l.extend((kv0 + np.arange(1, m + 1) * (0.0 if reserve else
                                                                   b_tok * nd * E)).tolist())
                        continue
            chunks = []
            decode_rows = n_dec
        else:
            # form the step
            n_seqs = n_dec + len(prefilling)
            want_prefill = bool(prefilling) or bool(waiting)
            decode_rows = n_dec
            prefill_step = True
            if cfg.policy == "prefill-first" or not cfg.mixed_batches:
                prefill_step = want_prefill and _can_admit(
                    prefilling, waiting, n_seqs, max_seqs, kv_used, cap, admit_cost, b_tok,
                    prompt, budget_max, cfg.chunked_prefill)
                if peak and prefill_step and not prefilling and (
                        blocked or not peak_ok(waiting[0])):
                    blocked = True
                    prefill_step = False
                if prefill_step and not cfg.mixed_batches:
                    decode_rows = 0
                elif not prefill_step:
                    decode_rows = n_dec
            budget = budget_max - decode_rows * verify if prefill_step else 0
            chunks = []
            if budget > 0:
                for item in prefilling:
                    if budget <= 0:
                        break
                    rid, dn, tot = item[0], item[1], item[2]
                    take = min(tot - dn, budget) if cfg.chunked_prefill else (
                        tot - dn if tot - dn <= budget else 0)
                    if take <= 0 or (not reserve and kv_used + b_tok * take > cap):
                        break
                    chunks.append((item, take))
                    budget -= take
                    kv_used += 0.0 if reserve else b_tok * take
                while budget > 0 and waiting and n_seqs < max_seqs:
                    rid = waiting[0]
                    if peak and (blocked or not peak_ok(rid)):
                        blocked = True
                        break
                    need = admit_cost(rid)
                    tot = prompt[rid]
                    cached = 0
                    if hit > 0 and version[rid] == 0:
                        cached = min(int(tot * hit) // block * block, tot - 1)
                    left = tot - cached
                    take = min(left, budget) if cfg.chunked_prefill else (
                        left if left <= budget else 0)
                    if take <= 0:
                        break
                    extra = 0.0 if reserve else b_tok * (take + cached)
                    if kv_used + need + extra > cap:
                        break
                    waiting.popleft()
                    kv_used += need + extra
                    reserved[rid] = need
                    item = [rid, cached, tot]
                    prefilling.append(item)
                    chunks.append((item, take))
                    budget -= take
                    n_seqs += 1
            if not chunks and decode_rows == 0:
                decode_rows = n_dec
                if n_dec == 0:
                    # nothing fits: the oldest waiting request cannot be admitted
                    if nxt is not None and not waiting:
                        t = max(t, nxt)
                        lag = 0.0
                        continue
                    raise OOMError("the KV cache cannot admit the next request even with "
                                   "nothing running", required=per, available=cap)

        # cost the step
        samples = decode_rows * verify
        ch = []
        finishing = []
        for item, take in chunks:
            ch.append((take, item[1]))
            if item[1] + take >= item[2]:
                samples += 1
                finishing.append(item)
        pad = None
        mean_ctx = sum_ctx / n_dec if decode_rows else 0.0
        if not ch and decode_rows:
            pad = pad_of[decode_rows] if decode_rows < len(pad_of) else None
            dev = dec_time(decode_rows, mean_ctx, decode_rows if pad is None else pad)
            dev += start_graph if pad is not None else start_eager
        else:
            dev = dev_time(decode_rows, mean_ctx, ch, samples, pad) + start_eager
        if draft is not None and decode_rows:
            dev += draft(decode_rows, mean_ctx)
        b = decode_rows + len(ch)
        if b > len(eager) - 1:
            b = len(eager) - 1
        h = graph[b] if pad is not None else eager[b]
        dt = max(dev, h) if overlap else dev + h
        t += dt
        lag = dt if overlap else 0.0

        # prompts advanced by this step
        step_prefill = 0
        for item, take in chunks:
            item[1] += take
            step_prefill += take
        prefill_tokens += step_prefill
        # decode rows advanced
        if decode_rows:
            D += 1
            sum_ctx += decode_rows * E
            if not reserve:
                kv_used += b_tok * decode_rows * E
            old = decode_rows - joined_in_stall
            if old > 0:
                gaps.append((dt + stall) / E)
                gap_w.append(old * E)
            if joined_in_stall:
                gaps.append(dt / E)
                gap_w.append(joined_in_stall * E)
            stall = 0.0
            joined_in_stall = 0
            while heap and heap[0][0] <= D:
                _, rid, ver = heapq.heappop(heap)
                if ver != version[rid] or not in_decode[rid]:
                    continue
                in_decode[rid] = False
                dec_set.discard(rid)
                blocked = False
                n_dec -= 1
                sum_ctx -= join_ctx[rid] + (D - join_D[rid]) * E
                held = join_ctx[rid] - 1 + (D - join_D[rid]) * E
                kv_used -= reserved[rid] + (0.0 if reserve else b_tok * held)
                finish[rid] = t
                done += 1
                if closed and issued < n:
                    arrival[issued] = t + delay[issued]
                    resent.append((arrival[issued], issued))
                    issued += 1
            # preemption by recompute when the cache overflows
            while not reserve and kv_used > cap and n_dec > 1:
                rid = running_order.pop()
                if not in_decode[rid]:
                    continue
                gen = min(round((D - join_D[rid]) * E), remaining[rid] - 1)
                in_decode[rid] = False
                dec_set.discard(rid)
                blocked = False
                n_dec -= 1
                sum_ctx -= join_ctx[rid] + (D - join_D[rid]) * E
                kv_used -= reserved[rid] + b_tok * (join_ctx[rid] - 1 + (D - join_D[rid]) * E)
                version[rid] += 1
                prompt[rid] += gen + 1
                remaining[rid] -= gen
                last_token[rid] = t
                waiting.appendleft(rid)
                preempt += 1
        elif chunks:
            stall += dt
        # prompts that finished: their next token now
        for item in finishing:
            rid = item[0]
            prefilling.remove(item)
            if math.isnan(first[rid]):
                first[rid] = t
            else:
                gaps.append(t - last_token[rid])
                gap_w.append(1.0)
            remaining[rid] -= 1
            if remaining[rid] <= 0:
                kv_used -= reserved[rid] + (0.0 if reserve else b_tok * item[2])
                finish[rid] = t
                done += 1
                blocked = False
                if closed and issued < n:
                    arrival[issued] = t + delay[issued]
                    resent.append((arrival[issued], issued))
                    issued += 1
                continue
            in_decode[rid] = True
            n_dec += 1
            if decode_rows == 0:
                joined_in_stall += 1
            ctx0 = item[2] + 1.0
            join_D[rid], join_ctx[rid] = D, ctx0
            sum_ctx += ctx0
            heapq.heappush(heap, (D + math.ceil(remaining[rid] / E), rid, version[rid]))
            running_order.append(rid)
            if peak:
                dec_set.add(rid)
                np_rem[rid], np_jD[rid], np_jc[rid] = remaining[rid], D, ctx0
        ends.append(t)
        times.append(dt)
        seqs_l.append(b)
        toks_l.append(decode_rows * verify + step_prefill)
        emit_l.append(decode_rows + len(finishing))
        kv_l.append(kv_used)

    if seqs_l:
        lo_b, hi_b = min(seqs_l), max(seqs_l)
    return Trace(
        arrival=np.asarray(arrival), first_token=np.asarray(first), finish=np.asarray(finish),
        input_len=np.asarray(inp), output_len=np.asarray(out), itl=np.asarray(gaps),
        itl_weight=np.asarray(gap_w), step_end=np.asarray(ends), step_time=np.asarray(times),
        step_seqs=np.asarray(seqs_l), step_tokens=np.asarray(toks_l),
        step_emitted=np.asarray(emit_l, dtype=float),
        step_kv=np.asarray(kv_l), preemptions=preempt,
        host_batches=(lo_b if hi_b else 0, hi_b), prefill_tokens=prefill_tokens)


def peak_fits(free: float, left, held) -> bool:
    """SGLang's KV check for admitting a request that ignores EOS with the radix cache off
    (``PrefillAdder.add_one_req_ignore_eos``, python/sglang/srt/managers/schedule_policy.py
    of v0.4.0): ``free`` tokens stay after the new request's prompt; ``left`` and ``held``
    are, per request (the new one, the decoding ones, the ones prefilling), the tokens it
    has still to generate and the tokens it holds. Sorted by ``left``, request ``i`` of
    ``k`` is checked with ``k - i`` requests decoding for the next one's ``left`` steps
    (its own for the last) after the ``i`` before it have freed what they hold:

        free + sum_{j<i} held_j - left_{i+1} * (k - i) > 0     for every i

    Requests with nothing left to generate take no part."""
    left = np.asarray(left, dtype=float)
    held = np.asarray(held, dtype=float)
    keep = left > 0
    left, held = left[keep], held[keep]
    k = len(left)
    if k == 0:
        return free > 0
    order = np.argsort(left, kind="stable")
    left, held = left[order], held[order]
    steps = np.empty(k)
    steps[:-1] = left[1:]
    steps[-1] = left[-1]
    freed = np.concatenate(([0.0], np.cumsum(held)[:-1]))
    return bool(np.all(free + freed - steps * (k - np.arange(k)) > 0))


def _can_admit(prefilling, waiting, n_seqs, max_seqs, kv_used, cap, admit_cost, b_tok, prompt,
               budget, chunked) -> bool:
    """Whether a prefill step has work: a prompt being chunked, or the first waiting request
    admissible now."""
    if prefilling:
        return True
    if not waiting or n_seqs >= max_seqs:
        return False
    rid = waiting[0]
    first = min(prompt[rid], budget) if chunked else prompt[rid]
    if not chunked and prompt[rid] > budget:
        return False
    return kv_used + admit_cost(rid) + b_tok * first <= cap
