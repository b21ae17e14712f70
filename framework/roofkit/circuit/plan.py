"""A cost plan: every node of a model precompiled for one device, cost model and mode.

Building a plan resolves, once, each node's op rule into one generated function
``f(rows, context, seqs) -> (flops, weight, act, kv_read, kv_write, state_read,
state_write, gemms, link_bytes, link_steps)`` with the node's dims and element sizes folded
in as constants, its compute peak from its operand formats, and its cost model's timer.
Running a plan is float (or numpy) arithmetic only: no pint, no hooks, no dict lookups by
name.

Per node instance, ``bytes`` the sum of the six byte terms:

    t = node_time(flops, bytes, peak, bandwidth, launch)        (a plain cost model)
    t = time(flops, bytes, gemms)                               (one that binds per node)
    t += min over link algorithms (link_steps * alpha + link_bytes / beta)   (collectives)

and the node's time is ``count * t`` (one instance per layer that runs it). The link terms
come from the device roofline's interconnect at the model's tensor-parallel group size
(:mod:`roofkit.circuit.collective`).
"""

from __future__ import annotations

import ast

import attrs
import numpy as np

from ..errors import PluginError, RoofkitError, SpecError, cut
from .collective import fastest
from .formats import operand_precision
from .ir import Node
from .model import Model, mode_rule
from .roofline import DeviceRoofline

MODES = ("decode", "prefill")


@attrs.frozen
class NodeContext:
    """What a cost model's ``bind`` is told about one node when a plan is compiled.

    ``op`` and ``role`` are the op kind's name and role (``attention``, ``weight``...),
    ``compute`` is ``matrix`` or ``vector``, ``mode`` ``decode`` or ``prefill``; ``slot`` and
    ``peak`` the compute slot the node's operand formats select and its FLOP/s;
    ``roofline`` the :class:`~roofkit.circuit.roofline.DeviceRoofline` (bandwidth, curves,
    overlap, attention throughput...).
    """

    node: Node
    op: str
    role: str
    compute: str
    mode: str
    slot: str
    peak: float
    precision: str
    roofline: DeviceRoofline


@attrs.frozen(eq=False)
class NodePlan:
    """One node, compiled: its functions, peak, the slot it runs at and its timer."""

    node: Node
    count: int
    scalar: object
    vector: object
    slot: str
    peak: float
    compute: str  # matrix | vector
    precision: str  # the format the node computes at ("" for vector ops)
    timer: object = None  # the cost model's bound time(flops, bytes, gemms), or None
    link: bool = False  # a collective: its link terms are costed on the interconnect
    kernel: str = ""  # the engine kernel that covers the node ("" : the roofline's)
    bandwidth: float = 0.0  # the kernel's memory bandwidth (0: the roofline's)
    kv_factor: float = 1.0  # reads of the KV cache per KV head (the kernel's re-reads)


@attrs.frozen(eq=False)
class Plan:
    """A model compiled for one device roofline, cost model and mode."""

    model: Model
    roofline: DeviceRoofline
    cost_model: object
    mode: str
    nodes: tuple[NodePlan, ...]
    notes: tuple[str, ...]
    fallbacks: tuple[str, ...] = ()  # precisions run at a fallback slot, for the basis
    rings: tuple = ()  # the link's ring models at the model's tp (collectives only)
    provider: str = ""  # the plugin that registered the cost model (named in its errors)
    #: the engine kernels the plan uses: (name, smallest, largest measured GEMM rows), a
    #: kernel without a measured range left out
    kernel_ranges: tuple = ()

    @property
    def kernels(self) -> int:
        """Node instances of one step: each is one kernel launch."""
        return sum(p.count for p in self.nodes)

    @property
    def basis(self) -> str:
        """The roofline's basis, with every fallback-slot substitution named."""
        return "; ".join((self.roofline.basis, *self.fallbacks))

    def run(self, rows, context, seqs, head_rows=None):
        """Per node: (node plan, flops, byte terms, time, t_mem, t_cmp, t_link, link bytes),
        totals over its ``count``.

        ``head_rows`` replaces ``rows`` for the head section (prefill computes logits for the
        last token of each sequence only). An arithmetic failure inside a compiled rule
        (division by zero, overflow, a non-finite result) is a SpecError naming the
        workload, the node, its op rule and the field, never a traceback.
        """
        vec = isinstance(rows, np.ndarray) or isinstance(context, np.ndarray) or \
            isinstance(seqs, np.ndarray)
        try:
            if vec:
                with np.errstate(divide="raise", over="raise", invalid="raise"):
                    out = self._run(vec, rows, context, seqs, head_rows)
            else:
                out = self._run(vec, rows, context, seqs, head_rows)
        except RoofkitError:
            raise
        except Exception as exc:  # a rule's arithmetic, or the cost model's own failure
            raise self.arithmetic_error(rows, context, seqs, head_rows, exc) from None
        return out

    def arithmetic_error(self, rows, context, seqs, head_rows=None, exc=None) -> SpecError:
        """The SpecError for a run that failed or gave a non-finite time: which node, rule
        and field, found by evaluating each field alone."""
        from . import expr as _expr
        from .model import RUNTIME
        from .spec import COST_FIELDS

        model = self.model
        what = f"{type(exc).__name__} ({cut(exc, 300)})" if exc is not None else \
            "a non-finite value"
        at = f"rows={_show(rows)}, context={_show(context)}, seqs={_show(seqs)}"
        for p in self.nodes:
            n = p.node
            r = head_rows if (head_rows is not None and n.section == "head") else rows
            trees = model.node_functions(n, self.mode)[0]
            for field, tree in zip(COST_FIELDS, trees, strict=True):
                fn = _expr.compile_function(RUNTIME, [tree], vector=True)
                try:
                    with np.errstate(divide="raise", over="raise", invalid="raise"):
                        v = np.asarray(fn(np.asarray(r, dtype=float),
                                          np.asarray(context, dtype=float),
                                          np.asarray(seqs, dtype=float))[0])
                    bad = np.iscomplexobj(v) or not np.all(np.isfinite(v))
                    why = f"gives {_show(v)}" if bad else ""
                except (ArithmeticError, ValueError, TypeError) as e:
                    bad, why = True, f"fails: {type(e).__name__} ({e})"
                if bad:
                    rule = model.rules[n.op.lower()]
                    return SpecError(
                        f"{model.workload.name}: node {n.id!r}, op rule {rule.name!r} "
                        f"{self.mode}.{field} {why} at {at}; check the workload's dims and "
                        "the rule")
        who = f"cost model {self.cost_model.name!r}"
        if self.provider and not self.provider.startswith("roofkit_builtins"):
            return PluginError(f"{model.workload.name}: the {self.mode} estimate at {at} failed "
                               f"with {what} in {who} of plugin {self.provider!r} (every op "
                               "rule evaluates; the cost model's node time is at fault: it "
                               "must return finite seconds, floats or numpy arrays)")
        return SpecError(f"{model.workload.name}: the {self.mode} estimate at {at} failed "
                         f"with {what} in {who}")

    def _run(self, vec, rows, context, seqs, head_rows):
        bw = self.roofline.bandwidth
        launch = self.roofline.launch
        node_time = self.cost_model.node_time
        rings = self.rings
        out = []
        for p in self.nodes:
            fn = p.vector if vec else p.scalar
            r = head_rows if (head_rows is not None and p.node.section == "head") else rows
            v = fn(r, context, seqs)
            if p.kv_factor != 1.0:  # the kernel reads the KV cache once per query head
                v = (v[0], v[1], v[2], v[3] * p.kv_factor, *v[4:])
            flops = v[0]
            nbytes = v[1] + v[2] + v[3] + v[4] + v[5] + v[6]
            if p.timer is None:
                t = node_time(flops, nbytes, p.peak, bw, launch)
                t_cmp = flops / p.peak
            else:
                t, t_cmp = p.timer(flops, nbytes, v[7])
            c = p.count
            bwn = p.bandwidth or bw
            if p.link:
                t_link = fastest(rings, v[8], v[9])
                t = t + t_link
                out.append((p, flops * c, tuple(x * c for x in v[1:7]), t * c,
                            nbytes / bwn * c, t_cmp * c, t_link * c, v[8] * c))
            else:
                out.append((p, flops * c, tuple(x * c for x in v[1:7]), t * c,
                            nbytes / bwn * c, t_cmp * c, 0.0, 0.0))
        return out


def _show(v) -> str:
    a = np.asarray(v)
    if a.ndim == 0:
        return f"{a.item():g}" if not np.iscomplexobj(a) else str(a.item())
    return f"array of {a.size} ({np.min(a.real):g} .. {np.max(a.real):g})"


def _compute_kind(rule, mode: str) -> str:
    m = mode_rule(rule, mode)
    return m.compute or rule.compute


def _is_zero(tree) -> bool:
    return isinstance(tree, ast.Constant) and tree.value == 0


#: (rows, context, seqs) at which a plan checks every node's costs once, when it compiles:
#: one token, and a batch at a long context
PROBES = ((1.0, 1.0, 1.0), (64.0, 8192.0, 64.0))


def _real(v) -> bool:
    """A finite, non-negative real number (a float, an int, a numpy real scalar)."""
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        return False
    return bool(np.isfinite(v)) and v >= 0


def _cost_problem(model: Model, n: Node, rule, mode: str, scalar) -> SpecError | None:
    """A SpecError when the node's rule gives a negative or non-finite cost at a probe."""
    from .spec import COST_FIELDS

    for rows, context, seqs in PROBES:
        try:
            values = scalar(rows, context, seqs)
        except (ArithmeticError, ValueError, TypeError):
            return None  # a failure is reported, located, when a run reaches it
        for field, v in zip(COST_FIELDS, values, strict=True):
            if not _real(v):
                return SpecError(
                    f"{model.workload.name}: node {n.id!r}, op rule {rule.name!r} "
                    f"{mode}.{field} gives {v!r} at rows={rows:g}, context={context:g}, "
                    f"seqs={seqs:g}; a cost is a finite number >= 0: fix the rule or the "
                    "workload's dims")
    return None


def _timer_problem(cost_model, origin: str, n: Node, probe, peak, bandwidth, launch,
                   timer, arrays: bool = True) -> PluginError | None:
    """A PluginError when the cost model's time for node ``n`` at the probe costs ``probe``
    (flops, bytes, gemms) is not a finite non-negative number, on floats (and on arrays
    when ``arrays``)."""
    flops, nbytes, gemms = probe
    who = f"cost model {cost_model.name!r}" + (f" of plugin {origin!r}" if origin else "")
    for vec in (False, True) if arrays else (False,):
        f, b, g = (np.array([flops, flops]), np.array([nbytes, nbytes]),
                   np.array([gemms, gemms])) if vec else (flops, nbytes, gemms)
        try:
            out = cost_model.node_time(f, b, peak, bandwidth, launch) if timer is None \
                else timer(f, b, g)
        except Exception as exc:
            return PluginError(f"{who} raised {type(exc).__name__} ({exc}) on node {n.id!r}")
        parts = (out,) if timer is None else (out if isinstance(out, tuple) and len(out) == 2
                                              else None)
        if parts is None:
            return PluginError(f"{who}: the bound time of node {n.id!r} returned {out!r}; it "
                               "must return (seconds, compute seconds)")
        for part in parts:
            if isinstance(part, np.ndarray):
                ok = vec and part.dtype.kind in "fiu" and bool(np.all(np.isfinite(part))) \
                    and bool(np.all(part >= 0))
            else:
                ok = _real(part)
            if not ok:
                shown = repr(part)[:80]
                return PluginError(f"{who} returned {shown} for node {n.id!r}"
                                   f"{' on arrays' if vec else ''}: a time must be a finite "
                                   "number of seconds >= 0")
    return None


def _kernel_for(kernels, op_kind, kind: str, mode: str, stored) -> object:
    """The engine kernel covering a matrix node (a weight GEMM or the attention), chosen by
    the format it reads (``stored``: the weights', or the KV cache's)."""
    if kernels is None or kind != "matrix" or stored is None:
        return None
    op = {"weight": "gemm", "attention": "attention"}.get(op_kind.role)
    return None if op is None else kernels.for_node(op, mode, stored.name)


def build_plan(model: Model, roofline: DeviceRoofline, cost_model, mode: str,
               sections=("embed", "main", "head"), origin: str = "", kernels=None) -> Plan:
    """Compile ``model`` for ``roofline`` in ``mode`` over ``sections``.

    ``kernels`` (:class:`roofkit.circuit.kernels.Kernels`): the engine kernels that cost
    the nodes they cover instead of the cost model (:mod:`roofkit.circuit.kernels`).

    Each node's rule is evaluated once at :data:`PROBES` and a negative or non-finite cost
    refused (SpecError naming the workload, node and rule); the cost model's time is checked
    once per node on those costs (PluginError naming it and ``origin``, its plugin)."""
    if mode not in MODES:
        from ..errors import ArgumentError, shown

        raise ArgumentError(f"mode must be one of {', '.join(MODES)}, got {shown(mode, 80)}")
    fm = model.formats
    notes: dict[str, None] = {}
    fallbacks: dict[str, None] = {}
    nodes = []
    bind = getattr(cost_model, "bind", None)
    links = False
    used: dict[str, object] = {}  # the engine kernels that cover a node
    for n in model.nodes:
        if n.section not in sections:
            continue
        rule = model.rules[n.op.lower()]
        trees, scalar, vector = model.node_functions(n, mode)
        kind = _compute_kind(rule, mode)
        op_kind = model.kinds[n.op.lower()]
        stored = None  # the format a kernel is chosen by: the weights', or the KV cache's
        if kind == "matrix":
            if op_kind.role == "attention":
                stored = fm.kv
                prec = operand_precision(fm.kv, fm.activation)  # Q against the cached K/V
            else:
                stored = fm.weight(n.role) if n.format else None
                prec = operand_precision(stored, fm.activation)
            slot, peak, note = roofline.slot_for(prec)
            if note:
                fallbacks[note] = None
            pname = prec.name
        else:
            slot = roofline.vector_slot
            peak = roofline.vector_peak()
            pname = ""
        if not peak > 0:
            raise SpecError(f"device {roofline.device!r}: peak of slot {slot!r} is not positive")
        timer = None
        kern = _kernel_for(kernels, op_kind, kind, mode, stored)
        k_bw, k_kv = 0.0, 1.0
        if kern is not None and (kern.slot or slot) not in roofline.peaks:
            notes[f"kernel {kern.name} ({kernels.label}) runs on the {kern.slot} slot, which "
                  f"{roofline.device} does not list: its nodes keep the roofline"] = None
            kern = None
        if kern is not None:
            from .kernels import node_timer

            slot = kern.slot or slot
            peak = roofline.peaks[slot] * kern.compute_efficiency
            k_bw = roofline.bandwidth * kern.memory_efficiency
            if op_kind.role == "attention" and kern.kv_reads == "per_query_head":
                k_kv = float(kernels.group)
            timer = node_timer(peak, k_bw, roofline.overlap)
            used[kern.name] = kern
        elif bind is not None:
            timer = bind(NodeContext(node=n, op=op_kind.name, role=op_kind.role, compute=kind,
                                     mode=mode, slot=slot, peak=peak, precision=pname,
                                     roofline=roofline))
        bad = _cost_problem(model, n, rule, mode, scalar)
        if bad is not None:
            raise bad
        try:
            v = scalar(*PROBES[0])
            probe = (float(v[0]), float(sum(v[1:7])), float(v[7]))
        except (ArithmeticError, ValueError, TypeError):
            probe = None
        if probe is not None:
            bad = _timer_problem(cost_model, origin, n, probe, peak, roofline.bandwidth,
                                 roofline.launch, timer, arrays=not nodes)
            if bad is not None:
                raise bad
        link = not (_is_zero(trees[-2]) and _is_zero(trees[-1]))
        links = links or link
        nodes.append(NodePlan(node=n, count=n.count, scalar=scalar, vector=vector, slot=slot,
                              peak=peak, compute=kind, precision=pname, timer=timer,
                              link=link, kernel=kern.name if kern is not None else "",
                              bandwidth=k_bw, kv_factor=k_kv))
    rings = ()
    if links:
        if roofline.link is None:
            raise SpecError(f"{roofline.device} has no [interconnect]: the collectives of "
                            f"tp={model.tp} need a device-to-device link")
        rings = roofline.link.rings(model.tp)
        kind = "measured" if roofline.link.basis == "calibrated" else "datasheet"
        each = ", ".join(f"{r.name} alpha {r.alpha * 1e6:.3g} us, beta {r.beta / 1e9:.4g} GB/s"
                         for r in rings)
        notes[f"collectives over {model.tp} devices on the {kind} link, the fastest of: "
              f"{each}"] = None
    if any(p.compute == "vector" for p in nodes):
        notes[f"vector ops (norms, activations, recurrences) at the {roofline.vector_slot} "
              "peak"] = None
    for k in used.values():
        reads = (f", the KV cache read once per query head ({kernels.group} per KV head)"
                 if k.kv_reads == "per_query_head" and kernels.group > 1 else "")
        notes[f"kernel {k.name} ({kernels.label}) for the {k.op} nodes: {k.slot or 'own'} slot "
              f"at {k.compute_efficiency:.3g} of its peak, {k.memory_efficiency:.3g} of the "
              f"memory bandwidth{reads} ({k.source})"] = None
    ranges = tuple((k.name, k.batch_range[0], k.batch_range[1]) for k in used.values()
                   if k.batch_range)
    if used:
        fallbacks[f"engine kernels of {kernels.label}: {', '.join(used)}"] = None
    return Plan(model=model, roofline=roofline, cost_model=cost_model, mode=mode,
                nodes=tuple(nodes), notes=tuple(notes), fallbacks=tuple(fallbacks),
                rings=rings, kernel_ranges=ranges)
