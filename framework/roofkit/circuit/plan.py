"""A cost plan: every node of a model precompiled for one device, cost model and mode.

Building a plan resolves, once, each node's op rule into one generated function
``f(rows, context, seqs) -> (flops, weight, act, kv_read, kv_write, state_read,
state_write)`` with the node's dims and element sizes folded in as constants, and its
compute peak from its operand formats. Running a plan is float (or numpy) arithmetic only:
no pint, no hooks, no dict lookups by name.

Per node instance, with the cost model's ``node_time``:

    t = node_time(flops, bytes, peak, bandwidth, launch),  bytes = Σ of the six byte terms

and the node's time is ``count * t`` (one instance per layer that runs it).
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import SpecError
from . import expr as _expr
from .formats import operand_precision
from .ir import Node
from .model import Model, mode_rule, node_trees
from .roofline import DeviceRoofline

MODES = ("decode", "prefill")


@attrs.frozen(eq=False)
class NodePlan:
    """One node, compiled: its functions, peak and the slot it runs at."""

    node: Node
    count: int
    scalar: object
    vector: object
    slot: str
    peak: float
    compute: str  # matrix | vector
    precision: str  # the format the node computes at ("" for vector ops)


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

    @property
    def basis(self) -> str:
        """The roofline's basis, with every fallback-slot substitution named."""
        return "; ".join((self.roofline.basis, *self.fallbacks))

    def run(self, rows, context, seqs, head_rows=None):
        """Per node: (flops, bytes tuple, time, t_mem, t_cmp), totals over its ``count``.

        ``head_rows`` replaces ``rows`` for the head section (prefill computes logits for the
        last token of each sequence only).
        """
        vec = isinstance(rows, np.ndarray) or isinstance(context, np.ndarray) or \
            isinstance(seqs, np.ndarray)
        bw = self.roofline.bandwidth
        launch = self.roofline.launch
        node_time = self.cost_model.node_time
        out = []
        for p in self.nodes:
            fn = p.vector if vec else p.scalar
            r = head_rows if (head_rows is not None and p.node.section == "head") else rows
            v = fn(r, context, seqs)
            flops = v[0]
            nbytes = v[1] + v[2] + v[3] + v[4] + v[5] + v[6]
            t = node_time(flops, nbytes, p.peak, bw, launch)
            c = p.count
            out.append((p, flops * c, tuple(x * c for x in v[1:]), t * c,
                        nbytes / bw * c, flops / p.peak * c))
        return out


def _compute_kind(rule, mode: str) -> str:
    m = mode_rule(rule, mode)
    return m.compute or rule.compute


def build_plan(model: Model, roofline: DeviceRoofline, cost_model, mode: str,
               sections=("embed", "main", "head")) -> Plan:
    """Compile ``model`` for ``roofline`` in ``mode`` over ``sections``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    fm = model.formats
    notes: dict[str, None] = {}
    fallbacks: dict[str, None] = {}
    nodes = []
    for n in model.nodes:
        if n.section not in sections:
            continue
        rule = model.rules[n.op.lower()]
        env = model.memory[n.id].env
        trees = node_trees(rule, mode, env)
        scalar = _expr.compile_function(("rows", "context", "seqs"), trees)
        vector = _expr.compile_function(("rows", "context", "seqs"), trees, vector=True)
        kind = _compute_kind(rule, mode)
        if kind == "matrix":
            if model.kinds[n.op.lower()].role == "attention":
                prec = operand_precision(fm.kv, fm.activation)  # Q against the cached K/V
            else:
                prec = operand_precision(fm.weight(n.role) if n.format else None,
                                         fm.activation)
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
        nodes.append(NodePlan(node=n, count=n.count, scalar=scalar, vector=vector, slot=slot,
                              peak=peak, compute=kind, precision=pname))
    if any(p.compute == "vector" for p in nodes):
        notes[f"vector ops (norms, activations, recurrences) at the {roofline.vector_slot} "
              "peak"] = None
    return Plan(model=model, roofline=roofline, cost_model=cost_model, mode=mode,
                nodes=tuple(nodes), notes=tuple(notes), fallbacks=tuple(fallbacks))
