"""Workload specs: a transformer by its architecture dims, or a generic declared workload."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from .common import (
    check_key,
    check_symbol,
    identity_problems,
    is_number,
    provenance_problems,
    sourced_paths,
    symbol_from,
    table,
)
from .fields import Range, count, nonnegative, number, numbers, positive, quantity

#: 1e16 parameters: ~6,000x the largest published model (Switch-C, 1.6T; Fedus et al. 2021)
MAX_PARAMS = 1e16
#: 100,000 layers: ~800x the deepest published LLM (Llama 3.1 405B's config.json,
#: num_hidden_layers = 126)
MAX_LAYERS = 100_000
LAYERS = Range(1, MAX_LAYERS)
#: the largest architecture dim (hidden, vocab, experts...): sizes stay exact in a float
MAX_DIM = 1e15

Domain = Literal["language", "vision", "speech", "audio", "tiny", "multimodal"]


@attrs.frozen
class Generic:
    """A workload without a circuit template: declared parameters and forward FLOPs."""

    params: float = number(positive(MAX_PARAMS))
    flops_per_sample: float = quantity("compute")
    layers: int = count(maximum=MAX_LAYERS)
    sample: str = attrs.field(default="sample", kw_only=True)


@attrs.frozen
class Published:
    """Publisher-stated counts, kept only to check the derived ones."""

    params: float | None = number(positive(MAX_PARAMS), default=None)
    active_params: float | None = number(positive(MAX_PARAMS), default=None)


@attrs.frozen
class Workload:
    """A workload spec. Template workloads derive parameters and FLOPs from ``dims``."""

    name: str = attrs.field(validator=check_key)
    display_name: str
    domain: Domain
    sources: dict[str, str]
    provenance: dict[str, str]
    aliases: tuple[str, ...] = ()
    symbol: str | None = attrs.field(default=None, validator=check_symbol)
    template: str | None = None
    dims: dict[str, float] = numbers(nonnegative(MAX_DIM), limits={"layers": LAYERS})
    formats: dict[str, str] = attrs.field(factory=dict)
    generic: Generic | None = None
    published: Published = Published()
    notes: str = ""

    @property
    def attr_name(self) -> str:
        return self.symbol or symbol_from(self.name)

    @property
    def is_template(self) -> bool:
        return self.template is not None

    def dim(self, key: str, default: float | None = None) -> float:
        v = self.dims.get(key, default)
        if v is None:
            raise KeyError(key)
        return v

    #: the tables whose numbers each need a source in [provenance]
    SOURCED = ("dims", "generic", "published")

    @classmethod
    def sourced_paths(cls, data: Mapping) -> list[str]:
        """Key paths of every number the raw spec sets (each needs a provenance entry)."""
        return sourced_paths(data, cls, cls.SOURCED)

    @classmethod
    def raw_problems(cls, data: Mapping) -> list[tuple[str, str]]:
        """Checks on the raw TOML table, run whether or not it structured: key formats, a
        template or a generic table, dims, and provenance."""
        out = identity_problems(data)
        has_template = data.get("template") is not None
        if has_template == ("generic" in data):
            out.append(("template", "give either `template` with [dims] (a transformer) or a "
                        "[generic] table (declared params and FLOPs), not both or neither"))
        dims = table(data, "dims")
        if not has_template and dims:
            out.append(("dims", "[dims] needs a `template` that reads them"))
        for k, v in dims.items():
            if is_number(v) and v < 0:
                out.append((f"dims.{k}", f"dims must be nonnegative, got {v}"))
        params = table(data, "generic").get("params")
        if is_number(params) and params <= 0:
            out.append(("generic.params", "params must be positive"))
        out += provenance_problems(data, cls.sourced_paths(data))
        return out
