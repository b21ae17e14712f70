"""A third-party roofkit plugin: registers the OCP FP6 E2M3 format (6 bits, fp6 slot)."""

from roofkit import Precision, hookimpl


@hookimpl
def roofkit_register_precisions():
    return [Precision("fp6-e2m3", 6, "fp6", ("fp8", "bf16", "fp16", "fp32"),
                      description="OCP FP6 E2M3, no block scale")]
