"""Cost of the result convention against the estimate it describes.

    python benchmarks/bench_results.py

Prints the median time of one Engine.solve and one decode step (Llama-3.1-8B, H100, batch
32, warm caches), and of the convention's views of each: a headline Quantity (``.q``),
``to_dict()``, ``repr`` and ``_repr_html_``, with each view's ratio to the estimate. The
estimate itself never builds a Quantity or a string, so its time is unchanged by the
convention; the views are paid only when asked for. Nothing here is asserted.
"""

from __future__ import annotations

from _timing import median_seconds


def main() -> int:
    import roofkit

    solve = lambda: roofkit.Engine.solve("llama-3.1-8b", "h100", batch_size=32)  # noqa: E731
    step = lambda: roofkit.decode("llama-3.1-8b", "h100", batch=32, context=2048)  # noqa: E731
    for name, make, headline in (("Engine.solve", solve, "latency"),
                                 ("decode", step, "time")):
        base = median_seconds(make, 7, number=200)
        result = make()
        print(f"{name:<14} {base * 1e6:9.1f} us")
        views = {"q." + headline: lambda r=result, h=headline: getattr(r.q, h),
                 "to_dict()": result.to_dict, "repr": lambda r=result: repr(r),
                 "_repr_html_": result._repr_html_}
        for view, fn in views.items():
            t = median_seconds(fn, 7, number=200)
            print(f"  {view:<12} {t * 1e6:9.1f} us  ({t / base:.2f} x the {name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
