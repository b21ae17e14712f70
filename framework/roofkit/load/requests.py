"""Request streams: arrivals (Poisson rate, closed-loop concurrency, a JSON-lines trace) and
prompt/output length distributions, drawn from one seeded generator."""

from __future__ import annotations

import json
import math
from pathlib import Path

import attrs
import numpy as np

from ..errors import RoofkitError, SpecError

DISTRIBUTIONS = ("fixed", "uniform", "normal", "histogram")


@attrs.frozen
class Lengths:
    """A token-length distribution: ``fixed`` (a), ``uniform`` (a..b inclusive), ``normal``
    (mean a, standard deviation b, rounded, at least 1) or ``histogram`` (lengths and their
    weights, e.g. read from a two-column CSV file)."""

    kind: str = "fixed"
    a: float = 128
    b: float = 0
    values: tuple = ()
    weights: tuple = ()

    def __attrs_post_init__(self):
        if self.kind not in DISTRIBUTIONS:
            raise SpecError(f"length distribution {self.kind!r}: one of "
                            f"{', '.join(DISTRIBUTIONS)}")
        if self.kind == "histogram":
            if not self.values or len(self.values) != len(self.weights) or \
                    min(self.values) < 1 or not all(0 <= w < math.inf for w in self.weights) \
                    or sum(self.weights) <= 0:
                raise SpecError("a length histogram needs lengths >= 1 with finite weights "
                                ">= 0 that sum above 0")
        elif not (math.isfinite(self.a) and math.isfinite(self.b)):
            raise SpecError(f"length distribution {self.kind} {self.a:g}:{self.b:g}: lengths "
                            "must be finite numbers")
        elif self.a < 1 or (self.kind == "uniform" and self.b < self.a) or self.b < 0:
            raise SpecError(f"length distribution {self.describe()}: lengths must be >= 1 "
                            "(uniform: low <= high; normal: std >= 0)")

    @property
    def high(self) -> int:
        """The longest length it draws (normal: mean + 6 std)."""
        if self.kind == "fixed":
            return int(self.a)
        if self.kind == "uniform":
            return int(self.b)
        if self.kind == "normal":
            return round(self.a + 6 * self.b)
        return int(max(self.values))

    @property
    def mean(self) -> float:
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        if self.kind == "histogram":
            w = np.asarray(self.weights, dtype=float)
            return float(np.dot(self.values, w) / w.sum())
        return float(self.a)

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{int(self.a)}"
        if self.kind == "uniform":
            return f"uniform {int(self.a)}..{int(self.b)}"
        if self.kind == "normal":
            return f"normal(mean {self.a:g}, std {self.b:g})"
        return f"histogram of {len(self.values)} lengths (mean {self.mean:.0f})"

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "fixed":
            return np.full(n, int(self.a), dtype=np.int64)
        if self.kind == "uniform":
            return rng.integers(int(self.a), int(self.b) + 1, size=n)
        if self.kind == "normal":
            x = np.rint(rng.normal(self.a, self.b, size=n))
            return np.clip(x, 1, self.high).astype(np.int64)
        w = np.asarray(self.weights, dtype=float)
        return rng.choice(np.asarray(self.values, dtype=np.int64), size=n, p=w / w.sum())


def lengths(spec) -> Lengths:
    """A :class:`Lengths` from an int (fixed), a Lengths, a tuple ``("uniform", 512, 1536)``
    or a string: ``1024``, ``uniform:512:1536``, ``normal:1024:128``, ``hist:FILE.csv``
    (rows ``length,weight``)."""
    if isinstance(spec, Lengths):
        return spec
    if isinstance(spec, bool):
        raise SpecError(f"a length is a whole number >= 1 or a distribution, got {spec!r}")
    if isinstance(spec, int | np.integer):
        return Lengths("fixed", int(spec))
    if isinstance(spec, tuple | list):
        kind, *args = spec
        return Lengths(kind, *map(float, args))
    text = str(spec).strip()
    if text.isdigit():
        return Lengths("fixed", int(text))
    kind, _, rest = text.partition(":")
    if kind in ("hist", "histogram"):
        return histogram_file(rest)
    try:
        args = [float(x) for x in rest.split(":")] if rest else []
    except ValueError:
        args = None
    if kind not in DISTRIBUTIONS or args is None or len(args) != 2:
        raise SpecError(f"length {text!r}: write N, uniform:LOW:HIGH, normal:MEAN:STD or "
                        "hist:FILE.csv")
    return Lengths(kind, *args)


def histogram_file(path) -> Lengths:
    """A histogram from a CSV file of ``length,weight`` rows (a header line is skipped)."""
    p = Path(path)
    values, weights = [], []
    for i, line in enumerate(_text_of(p, "length histogram", "CSV rows 'length,weight'")
                             .splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [x.strip() for x in line.split(",")]
        try:
            v, w = int(parts[0]), float(parts[1])
        except (ValueError, IndexError):
            if i == 1:
                continue  # a header
            raise SpecError(f"{p}:{i}: expected 'length,weight', got {line!r}") from None
        values.append(v)
        weights.append(w)
    return Lengths("histogram", values=tuple(values), weights=tuple(weights))


@attrs.frozen(eq=False)
class Stream:
    """Requests to serve: ``arrival`` times in s (None: a closed loop of ``concurrency``
    clients, each sending its next request when the last one finished), prompt and output
    lengths."""

    input_len: np.ndarray
    output_len: np.ndarray
    arrival: np.ndarray | None = None
    concurrency: int | None = None
    rate: float | None = None
    describe: str = ""
    #: a closed loop's client delay before each request (s): the time from the previous
    #: request's last token to this one reaching the scheduler (None: none)
    delay: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.input_len)

    def take(self, idx) -> Stream:
        """The requests at ``idx`` (a data-parallel replica's share)."""
        return attrs.evolve(self, input_len=self.input_len[idx],
                            output_len=self.output_len[idx],
                            arrival=None if self.arrival is None else self.arrival[idx],
                            delay=None if self.delay is None else self.delay[idx])


#: the longest think time (s): a day between a user's requests; beyond it a run's clock
#: would mostly stand idle (and absurd values overflow it)
MAX_THINK = 86400.0


def _seconds(text: str, what: str) -> float:
    t = text.strip().lower()
    scale = 1e-3 if t.endswith("ms") else 1.0
    t = t[:-2] if t.endswith("ms") else t[:-1] if t.endswith("s") else t
    try:
        v = float(t) * scale
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and 0 <= v <= MAX_THINK):
        raise SpecError(f"{what} {text!r}: a time from 0 to {MAX_THINK:g} s (a day) such as "
                        "0.5, 500ms or 2s")
    return v


def think_times(spec, rng: np.random.Generator, n: int) -> np.ndarray | None:
    """A closed loop's think time per request (s): a client waits this long after its last
    request's final token before sending the next (its first request too). ``spec``: a number
    or ``"500ms"`` (fixed), ``"exp:MEAN"`` (exponential, as interactive users are modelled),
    ``"uniform:LO:HI"``; None or 0: none.
    Closed-loop throughput then follows the interactive response time law
    ``X = C / (R + Z)`` (R the mean E2E latency, Z the mean think time)."""
    if spec is None:
        return None
    if isinstance(spec, bool):
        raise SpecError(f"think time {spec!r}: a time >= 0 such as 0.5, 500ms or exp:2s")
    if isinstance(spec, int | float):
        spec = str(spec)
    text = str(spec).strip()
    kind, _, rest = text.partition(":")
    if kind == "exp" and rest:
        mean = _seconds(rest, "think time mean")
        return rng.exponential(mean, size=n) if mean > 0 else None
    if kind == "uniform" and rest.count(":") == 1:
        lo, hi = (_seconds(x, "think time bound") for x in rest.split(":"))
        if hi < lo:
            raise SpecError(f"think time {text!r}: uniform:LOW:HIGH with LOW <= HIGH")
        return rng.uniform(lo, hi, size=n)
    if rest:
        raise SpecError(f"think time {text!r}: write a time (0.5, 500ms), exp:MEAN or "
                        "uniform:LOW:HIGH")
    v = _seconds(text, "think time")
    return np.full(n, v) if v > 0 else None


def stream(*, requests=None, concurrency=None, rate=None, trace=None, input_len=128,
           output_len=128, seed=0, think_time=None) -> Stream:
    """The request stream of a simulation: exactly one of ``concurrency``, ``rate`` (QPS,
    Poisson arrivals) or ``trace`` (a JSON-lines file, one request a line: ``arrival`` s,
    ``input_len``, ``output_len``). ``think_time`` (closed loops only): see
    :func:`think_times`."""
    given = [x is not None for x in (concurrency, rate, trace)]
    if sum(given) != 1:
        raise RoofkitError("give exactly one of concurrency, rate or trace")
    if think_time is not None and concurrency is None:
        raise RoofkitError("a think time applies to a closed loop: give it with concurrency")
    if trace is not None:
        return read_trace(trace)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise RoofkitError(f"seed must be a whole number >= 0, got {seed!r}")
    rng = np.random.default_rng(seed)
    if concurrency is not None:
        _count("concurrency", concurrency)
    if requests is None:
        requests = max(8 * concurrency, 200) if concurrency else 1000
    n = _count("requests", requests)
    li, lo = lengths(input_len), lengths(output_len)
    from .. import bounds

    bounds.check_int("input_len", li.high)
    bounds.check_int("output_len", lo.high)
    inp = li.sample(rng, n)
    out = lo.sample(rng, n)
    if concurrency is not None:
        if isinstance(concurrency, bool) or int(concurrency) != concurrency or concurrency < 1:
            raise RoofkitError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
        think = think_times(think_time, np.random.default_rng([seed, 1]), n)
        extra = "" if think is None else f", think time {think_time} (mean {think.mean():.3g} s)"
        return Stream(inp, out, None, int(concurrency), None,
                      f"closed loop of {int(concurrency)} clients, {n} requests, input "
                      f"{li.describe()}, output {lo.describe()}{extra}", delay=think)
    if not 0 < rate < math.inf:
        raise RoofkitError(f"rate must be a finite number > 0 requests/s, got {rate!r}")
    with np.errstate(over="ignore"):  # an overflow to inf is refused just below
        arrival = np.cumsum(rng.exponential(1.0 / rate, size=n))
    if not np.isfinite(arrival[-1]):
        raise RoofkitError(f"rate {rate!r} requests/s spreads {n} requests past the largest "
                           "float time; give a larger rate")
    arrival -= arrival[0]
    return Stream(inp, out, arrival, None, float(rate),
                  f"Poisson arrivals at {rate:g} requests/s, {n} requests, input "
                  f"{li.describe()}, output {lo.describe()}")


def _count(name: str, value) -> int:
    """A whole number >= 1 within its bound (:mod:`roofkit.bounds`): 10**8 requests are
    refused, not simulated for days."""
    from .. import bounds
    from ..errors import ArgumentError, shown

    if isinstance(value, bool) or not isinstance(value, int | np.integer | float) or \
            (isinstance(value, float) and not value.is_integer()):
        raise ArgumentError(f"{name} must be a whole number >= 1, got {shown(value, 80)}")
    if value < 1:
        raise ArgumentError(f"{name} must be a whole number >= 1, got {shown(value, 80)}")
    return bounds.check_int(name, int(value))


#: the largest trace file read: MAX_REQUESTS lines of a few hundred bytes each
MAX_TRACE_BYTES = 256 * 1024 * 1024

#: the keys of one trace line, each with the alias it may go by
_TRACE_KEYS = (("arrival", "timestamp"), ("input_len", "input_tokens"),
               ("output_len", "output_tokens"))


def _text_of(p: Path, role: str, form: str) -> str:
    """The text of the ``role`` file ``p`` (a trace, a length histogram): a regular UTF-8
    file within MAX_TRACE_BYTES; SpecError naming the file and ``form`` otherwise."""
    from ..files import kind_of_path, read_spec_bytes

    what = kind_of_path(p)
    if what != "file":
        said = {"missing": "no such file", "dir": "a folder, not a file",
                "loop": "a symlink loop"}.get(what, f"{what}, not a regular file")
        raise SpecError(f"{role} {str(p)!r}: {said} (give a file of {form})")
    try:
        return read_spec_bytes(p, MAX_TRACE_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{role} {str(p)!r}: not UTF-8 text (byte {exc.start}); give a file "
                        f"of {form}") from None


def _trace_value(where: str, rec: dict, keys: tuple[str, str], whole: bool):
    """``rec``'s value of ``keys`` (a name and its alias): a finite number >= 0 (arrival) or
    a whole number >= 1 within its bound (lengths); SpecError naming the line and key."""
    from .. import bounds
    from ..errors import cut

    def shown(value, limit):  # as the trace spells it: true, NaN, "12"
        return cut(json.dumps(value), limit)

    key = next((k for k in keys if rec.get(k) is not None), None)
    if key is None:
        raise SpecError(f"{where}: missing {keys[0]!r} (or {keys[1]!r}); each line is a JSON "
                        'object such as {"arrival": 0.12, "input_len": 812, "output_len": 95}')
    v = rec[key]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise SpecError(f"{where}: {key} = {shown(v, 60)} is not a number; write it without "
                        "quotes")
    if not whole:
        if not (0 <= v < float("inf")):
            raise SpecError(f"{where}: {key} = {shown(v, 60)}; an arrival is a finite time "
                            ">= 0 in seconds")
        return float(v)
    if (isinstance(v, float) and not v.is_integer()) or v < 1:
        raise SpecError(f"{where}: {key} = {shown(v, 60)}; a length is a whole number of "
                        "tokens >= 1")
    name = keys[0]
    if v > bounds.bound_of(name):
        raise SpecError(f"{where}: {key} must be {bounds.describe(name, bounds.bound_of(name))}"
                        f", got {shown(v, 60)}")
    return int(v)


def read_trace(path) -> Stream:
    """A JSON-lines trace: ``{"arrival": 0.12, "input_len": 812, "output_len": 95}`` a line
    (``timestamp`` for ``arrival``, ``input_tokens``/``output_tokens`` also read). Arrivals
    are seconds (finite, >= 0), lengths whole tokens >= 1 within :mod:`roofkit.bounds`."""
    from .. import bounds

    p = Path(path)
    arr, inp, out = [], [], []
    text = _text_of(p, "trace", "JSON lines of arrival, input_len, output_len")
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{p}:{i}"
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise SpecError(f"{where}: not JSON ({exc}); each line is one JSON object of "
                            "arrival, input_len and output_len") from None
        if not isinstance(rec, dict):
            raise SpecError(f"{where}: expected a JSON object with arrival, input_len and "
                            f"output_len, got a {type(rec).__name__}")
        arr.append(_trace_value(where, rec, _TRACE_KEYS[0], whole=False))
        inp.append(_trace_value(where, rec, _TRACE_KEYS[1], whole=True))
        out.append(_trace_value(where, rec, _TRACE_KEYS[2], whole=True))
        if len(arr) > bounds.MAX_REQUESTS:
            raise SpecError(f"{p}: more than {bounds.describe('requests', bounds.MAX_REQUESTS)}"
                            " requests; cut the trace")
    if not arr:
        raise SpecError(f"{p}: the trace holds no requests")
    order = np.argsort(np.asarray(arr), kind="stable")
    a = np.asarray(arr)[order]
    return Stream(np.asarray(inp)[order], np.asarray(out)[order], a - a[0], None, None,
                  f"trace {p.name}: {len(a)} requests over {a[-1] - a[0]:.1f} s")
