"""The one seam between the Mac scripts and Apple's runtime.

Everything dump_compute_plan.py and capture_device_outputs.py do goes through coremltools' own
classes (the package protobuf, MLComputePlan, MLModelStructure*, MLComputePlanDeviceUsage,
the MLComputeDevice classes) EXCEPT the calls below, which need Core ML itself (macOS only):

  compile_model(package, destination)        -> path of the compiled .mlmodelc
  load_compute_plan(compiled, compute_units) -> coremltools.models.compute_plan.MLComputePlan
  load_model(path, compute_units, function)  -> an object with predict(inputs, state) and
                                                make_state() (coremltools MLModel / CompiledMLModel)
  host()                                     -> {"os", "chip", "ane_total_cores", "target"}

On a Mac the scripts use AppleRuntime. The Linux tests (tests/mac/) hand the scripts a fake
runtime with the same four methods; what the fake does and what that leaves unexercised is
written in validators/mac/README.md.
"""
import os
import platform
import subprocess
import sys


class AppleRuntime:
    """Core ML on this Mac (macOS 14.4+ for MLComputePlan; coremltools >= 8.1)."""

    def __init__(self):
        if sys.platform != "darwin":
            raise SystemExit("Core ML (MLComputePlan, on-device prediction) exists only on macOS "
                             "14.4+; run this on a Mac")
        import coremltools as ct  # noqa: F401  (fails early when coremltools is missing)

    def compile_model(self, package, destination):
        import coremltools as ct
        return str(ct.utils.compile_model(package, destination))

    def load_compute_plan(self, compiled, compute_units):
        import coremltools as ct
        from coremltools.models.compute_plan import MLComputePlan
        return MLComputePlan.load_from_path(path=compiled,
                                            compute_units=getattr(ct.ComputeUnit, compute_units))

    def load_model(self, path, compute_units, function):
        import coremltools as ct
        units = getattr(ct.ComputeUnit, compute_units)
        if path.rstrip("/").endswith(".mlmodelc"):
            return ct.models.CompiledMLModel(path, compute_units=units, function_name=function)
        return ct.models.MLModel(path, compute_units=units, function_name=function)

    def host(self):
        from coremltools.models.compute_device import (MLComputeDevice,
                                                       MLNeuralEngineComputeDevice)
        cores = None
        for device in MLComputeDevice.get_all_compute_devices():
            if isinstance(device, MLNeuralEngineComputeDevice):
                cores = device.total_core_count
        try:
            chip = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            chip = platform.machine()
        try:
            build = subprocess.run(["sw_vers", "-buildVersion"], capture_output=True, text=True,
                                   check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            build = None
        return {"os": mac_os_name(platform.mac_ver()[0], build), "chip": chip,
                "ane_total_cores": cores, "target": "local"}


def mac_os_name(version, build):
    """"macOS 15.2 (24C101)": the build as well as the version, since placement can change
    between builds of one version (a plan describes the chip and the OS build it ran on)."""
    return f"macOS {version} ({build})" if build else f"macOS {version}"


def core_ml_call(error, where, what, call, *args):
    """call(*args), its failure re-raised as error("WHERE: Core ML could not WHAT: ...").

    Core ML's native proxy reports a model it cannot compile, plan, load or run as a bare
    RuntimeError/Exception; uncaught, that ends a script with a traceback (exit 1) that does not
    say which shard. The scripts turn `error` (their InputError) into exit 2 naming it.
    """
    try:
        return call(*args)
    except Exception as e:  # noqa: BLE001 -- whatever the native proxy raises
        raise error(f"{where}: Core ML could not {what}: {type(e).__name__}: {e}") from e


def shard_name(path):
    return os.path.basename(path.rstrip("/"))
