"""The circuit IR: what a workload lowers to, and what the estimator costs.

A :class:`Circuit` is a list of :class:`Node` (an op kind with numeric dims, a weight role
and format, input and output :class:`Edge` names), grouped into sections ``embed``,
``main`` (the layers), ``head`` and ``draft`` (speculative heads). A main-section node
stands for every layer that uses its part: ``count`` is how many; :attr:`Circuit.blocks`
records the per-layer pattern (which parts each group of layers runs).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs


@attrs.frozen
class Edge:
    """A tensor between nodes: its width per row (``dim``) and its element format."""

    name: str
    dim: float
    format: str


@attrs.frozen
class Node:
    """One costed node. ``dims`` are numbers (the op kind's params); ``count`` instances."""

    id: str
    op: str
    section: str
    dims: Mapping[str, float]
    count: int = 1
    part: str = ""
    role: str = ""
    format: str = ""  # weight precision name ("" for nodes without weights)
    tied_to: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@attrs.frozen
class Block:
    """A run of layers with the same parts: ``parts`` per slot, repeated ``repeat`` times."""

    parts: tuple[str, ...]
    repeat: int
    layers: tuple[int, ...] = ()


@attrs.frozen
class Circuit:
    """A lowered workload: nodes, edges, the resolved dims and the layer pattern."""

    workload: str
    template: str
    dims: Mapping[str, float]
    nodes: tuple[Node, ...]
    edges: Mapping[str, Edge]
    blocks: tuple[Block, ...]
    decoder: bool = True
    activation_format: str = "bf16"
    settings: Mapping[str, str] = attrs.field(factory=dict)  # kv_cache_dtype, ssm_h_dtype...

    def section(self, name: str) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.section == name)

    def node(self, node_id: str) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        from ..errors import UnknownNameError

        raise UnknownNameError("node", node_id, [n.id for n in self.nodes])

    def activation_of(self, node: Node) -> str:
        """The format of a node's first input edge (the circuit's activation format else)."""
        if node.inputs and node.inputs[0] in self.edges:
            return self.edges[node.inputs[0]].format
        return self.activation_format

    @property
    def layers(self) -> int:
        return int(self.dims.get("layers", 0))

    @property
    def tp(self) -> int:
        """Tensor-parallel devices: the nodes are one device's shard (1: the whole model)."""
        return int(self.dims.get("tp", 1))

    def pattern(self) -> str:
        """The per-layer pattern in words: ``36 x (gdn, moe) + 12 x (attention, moe)``."""
        return " + ".join(f"{b.repeat} x ({', '.join(b.parts)})" for b in self.blocks)
