"""``roofkit.sweep``: a design space in array passes.

    rows = device x precision x tp x context (seq_len) x batch_size

``mode="engine"`` evaluates the ``Engine.solve`` equation (inference, or training with
``training=True`` where ``seq_lens`` is an axis); ``mode="decode"`` and ``mode="prefill"``
the circuit's per-node roofline estimates of a decode step at a KV context, or of prefilling
a prompt of ``contexts`` tokens, on one of ``tp`` tensor-parallel devices. Each (device,
precision, tp) group is one numpy pass over its context x batch rows; the numbers equal the
scalar paths (``Engine.solve``, ``roofkit.decode``/``roofkit.prefill``) to rounding.
"""

from __future__ import annotations

from ..engine import validation
from ..errors import SpecError
from .grid import MODES, Grid, int_axis, name_axis
from .table import SweepTable

_ENGINE_DEFAULT_PRECISION = "fp16"  # Engine.solve's default


def sweep(workload, devices, precisions=None, batch_sizes=None, seq_lens=None, *,
          contexts=None, tp=None, mode: str = "engine", efficiency: float = 0.5,
          training: bool = False, zero_stage: int = 0, dp_size: int = 1, lora: bool = False,
          recompute: bool = False, kv_cache_dtype: str | None = None,
          basis: str | None = None, cost_model: str | None = None, formats=None,
          ssm_h_dtype: str | None = None, head: bool | None = None, executor=None,
          chunk_size: int | None = None, where=(), feasible_only: bool = False,
          pareto=None, best_by=None, registry=None) -> SweepTable:
    """Evaluate ``workload`` over every device x precision x tp x context x batch size.

    :param workload: a workload key, alias, TOML path or spec.
    :param devices: device keys, aliases, TOML paths or specs (one or a list).
    :param precisions: precision names; default ``["fp16"]`` (engine) or the circuit's
        default (decode, prefill).
    :param batch_sizes: integers >= 1 (a list, range or numpy array); default ``[1]``.
    :param seq_lens: tokens per training sequence (engine, ``training=True``); ``contexts``
        is the same axis under its decode/prefill name (KV context of a decode step, prompt
        length of a prefill). Pass one of the two.
    :param tp: tensor-parallel degrees (decode, prefill: the circuit's shard of one of tp
        devices, with its all-reduces; a tp the device's interconnect or the model's heads
        cannot take gives infeasible rows with the reason); the engine is one device.
    :param mode: ``"engine"``, ``"decode"`` or ``"prefill"``.
    :param efficiency: the engine's declared compute efficiency in [1e-9, 1].
    :param training, zero_stage, dp_size, lora, recompute: engine training settings, as in
        ``Engine.solve``.
    :param kv_cache_dtype, basis, cost_model, formats, ssm_h_dtype: decode/prefill settings,
        as in ``roofkit.decode`` (``basis="auto"`` unless given: each device on its default
        basis, calibrated where it has a calibration, else datasheet, named in the ``basis``
        column; the cost model defaults by basis: ``roofline``, or ``roofline_calibrated`` on
        the calibrated basis).
    :param head: prefill only, as in ``roofkit.prefill``: False (default) costs the layers
        at the causal half-context; True adds the embedding gather and the LM head of the
        first token (a time to first token's full device work).
    :param executor: any ``concurrent.futures.Executor``: the grid is split into chunks of
        ``chunk_size`` rows evaluated by its workers and concatenated in order.
    :param chunk_size: rows per chunk (with no executor: evaluate in chunks in-process).
    :param where, feasible_only, pareto, best_by: keep only the rows satisfying every
        ``where`` condition, then (``feasible_only``) those that fit, then the Pareto front
        of the ``pareto`` column pair, then the best row per ``best_by = (group, column[,
        direction])``; applied in each chunk's worker before its rows travel back, so an
        executor returns only what is kept (same rows as filtering the whole table).
    :param registry: a Registry, :class:`RegistrySettings`, or None for the default. With
        an executor in other processes (a process pool, Dask, Ray) pass
        :class:`RegistrySettings` (a Registry does not travel); a thread-based executor
        (``ThreadPoolExecutor``) shares the Registry object itself.
    :returns: a :class:`SweepTable` with every input and output column, ``feasible`` and
        ``reason`` on every row.
    """
    if mode not in MODES:
        raise SpecError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if seq_lens is not None and contexts is not None:
        raise SpecError("pass seq_lens or contexts, not both (they are the same axis)")
    axis = seq_lens if seq_lens is not None else contexts
    devices = name_axis("devices", devices, [])
    batches = int_axis("batch_sizes", batch_sizes, [1])
    if chunk_size is not None:
        chunk_size = validation.positive_int("chunk_size", chunk_size)

    if basis in (None, "auto") and mode != "engine":
        groups = _by_default_basis(devices, registry)
        if len(groups) == 1:
            basis = next(iter(groups))
        else:  # each device on its own default basis: one sweep per basis, rows joined
            from .reduce import Reduce, combine

            kw = dict(precisions=precisions, batch_sizes=batch_sizes, seq_lens=seq_lens,
                      contexts=contexts, tp=tp, mode=mode, efficiency=efficiency,
                      training=training, zero_stage=zero_stage, dp_size=dp_size, lora=lora,
                      recompute=recompute, kv_cache_dtype=kv_cache_dtype,
                      cost_model=cost_model, formats=formats, ssm_h_dtype=ssm_h_dtype,
                      head=head, executor=executor, chunk_size=chunk_size, where=where,
                      feasible_only=feasible_only, pareto=pareto, best_by=best_by,
                      registry=registry)
            tables = [sweep(workload, devs, basis=b, **kw) for b, devs in groups.items()]
            return combine(tables, Reduce(where, feasible_only, pareto, best_by))

    options = {"kv_cache_dtype": kv_cache_dtype, "basis": basis, "cost_model": cost_model,
               "formats": formats, "ssm_h_dtype": ssm_h_dtype, "head": head}
    if mode == "engine":
        given = [k for k, v in options.items() if v is not None]
        if given:
            raise SpecError(f"{', '.join(given)} set(s) the circuit's decode/prefill estimate; "
                            "mode='engine' is the Engine.solve equation (pass mode='decode' "
                            "or 'prefill')")
        settings = {
            "efficiency": validation.efficiency(efficiency),
            "training": validation.flag("training", training),
            "zero_stage": validation.zero_stage(zero_stage),
            "dp_size": validation.positive_int("dp_size", dp_size),
            "lora": validation.flag("lora", lora),
            "recompute": validation.flag("recompute", recompute),
        }
        if tp is not None and list(int_axis("tp", tp, [1])) != [1]:
            raise SpecError("mode='engine' is the single-device equation of Engine.solve; "
                            "tensor parallelism (tp > 1) needs mode='decode' or 'prefill'")
        if settings["training"]:
            ctx = int_axis("seq_lens", axis, [2048])
        elif axis is not None:
            raise SpecError("the Engine's inference equation has no context term, so "
                            "seq_lens/contexts would only repeat rows; pass training=True "
                            "for training sequences, or mode='decode'/'prefill' for a KV "
                            "context or prompt length")
        else:
            ctx = int_axis("seq_lens", None, [2048])  # Engine.solve's default; not a column
        precs = name_axis("precisions", precisions, [_ENGINE_DEFAULT_PRECISION])
        tps = [1]
    else:
        from .circuit_pass import circuit_settings

        settings, precs, ctx, tps = circuit_settings(
            mode, precisions=precisions, contexts=axis, tp=tp, training=training,
            efficiency=efficiency, options=options)
    grid = Grid(mode, workload, devices, precs, tps, ctx, batches, settings)
    from .reduce import Reduce, combine

    reduce = Reduce(where, feasible_only, pareto, best_by)

    if executor is not None:
        from .distribute import run

        return run(grid, executor, chunk_size, registry, reduce)

    from .distribute import _evaluate_reduced, local_registry
    from .evaluate import make_pass

    reg = local_registry(registry)
    ev = make_pass(grid, reg)
    n = len(grid)
    if chunk_size is None or chunk_size >= n:
        return combine([_evaluate_reduced(grid, 0, n, reg, ev, None)], reduce)
    return combine([_evaluate_reduced(grid, s, e, reg, ev, reduce)
                    for s, e in grid.chunks(chunk_size)], reduce)


def _by_default_basis(devices, registry) -> dict[str, list]:
    """Devices grouped by their default basis (calibrated where a calibration exists, else
    datasheet), in order of first appearance."""
    from ..circuit.roofline import resolve_basis
    from .distribute import local_registry

    reg = local_registry(registry)
    groups: dict[str, list] = {}
    for d in devices:
        groups.setdefault(resolve_basis("auto", d, reg), []).append(d)
    return groups
