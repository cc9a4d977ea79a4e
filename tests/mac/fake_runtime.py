"""A stand-in for validators/mac/apple_runtime.AppleRuntime on Linux (no Core ML here).

It replaces only the four Apple calls; what it hands back are coremltools' REAL classes
(MLComputePlan, MLModelStructure*, MLComputePlanDeviceUsage, MLComputePlanCost, the
MLComputeDevice subclasses), built the way the native proxy would build them:

- compile_model: raises `compile_error` when given one (Core ML's proxy raises RuntimeError for
  a model it cannot compile); for a package with an Apple-compiled twin beside it (the corpus pairs
  tests/data/corpus/silero-vad/X.mlpackage + X.mlmodelc) it copies that real .mlmodelc; for any
  other package (fixture-generator packages) it writes a placeholder .mlmodelc (a model.mil
  that says it is fake, plus the package's weight files) -- the compiled identity recorded from
  it is then not a real build's.
- load_compute_plan: the model structure comes from the source package's protobuf (ops,
  outputs, nested blocks as Core ML lists them); devices come from a small table (compile-time
  ops: no usage; `CPU_OPS`: CPU; everything else: ANE), cost 1/N. `drop_functions` leaves
  functions out of the plan, as a plan that lost a function would; `compiled_extra_ops` adds ops
  to the plan that the package lacks, as ops the compiler inserted would be.
- load_model: predicts by running golden-validator exec (our CPU interpreter) on the shard, so
  the capture logic sees real tensors of the right names, shapes and dtypes.
- host: says it is fake.
"""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
from coremltools.models import compute_plan as cp
from coremltools.models.compute_device import (MLCPUComputeDevice, MLGPUComputeDevice,
                                               MLNeuralEngineComputeDevice)

from dump_compute_plan import load_package_spec

CPU_OPS = {"lstm", "topk", "argsort"}


def _device(cls):
    device = object.__new__(cls)  # the native proxy is absent on Linux
    device.__proxy__ = None
    return device


def _structure_from_package(package, drop_functions):
    spec = load_package_spec(package)  # read-only (ct.utils.load_spec rewrites Manifest.json)

    def value_type():
        return cp.MLModelStructureProgramValueType()

    def block(b):
        operations = []
        for op in b.operations:
            inputs = {
                name: cp.MLModelStructureProgramArgument(bindings=[
                    cp.MLModelStructureProgramBinding(
                        name=binding.name if binding.WhichOneof("binding") == "name" else None,
                        value=None if binding.WhichOneof("binding") == "name"
                        else cp.MLModelStructureProgramValue())
                    for binding in arg.arguments])
                for name, arg in op.inputs.items()}
            operations.append(cp.MLModelStructureProgramOperation(
                inputs=inputs, operator_name=op.type,
                outputs=[cp.MLModelStructureProgramNamedValueType(name=o.name, type=value_type())
                         for o in op.outputs],
                blocks=[block(nested) for nested in op.blocks], __proxy__=None))
        return cp.MLModelStructureProgramBlock(
            inputs=[cp.MLModelStructureProgramNamedValueType(name=i.name, type=value_type())
                    for i in b.inputs],
            operations=operations, output_names=list(b.outputs))

    functions = {}
    for name, function in spec.mlProgram.functions.items():
        if name in drop_functions:
            continue
        functions[name] = cp.MLModelStructureProgramFunction(
            inputs=[cp.MLModelStructureProgramNamedValueType(name=i.name, type=value_type())
                    for i in function.inputs],
            block=block(function.block_specializations[function.opset]))
    return cp.MLModelStructure(neuralnetwork=None,
                               program=cp.MLModelStructureProgram(functions=functions),
                               pipeline=None)


class _PlanProxy:
    """What libcoremlpython's _MLComputePlanProxy answers, from a table."""

    def __init__(self, structure):
        self.model_structure = structure
        ops = []

        def walk(b):
            for op in b.operations:
                ops.append(op)
                for nested in op.blocks:
                    walk(nested)

        for function in structure.program.functions.values():
            walk(function.block)
        self._compute = [op for op in ops if not _compile_time(op.operator_name)]

    def get_compute_device_usage_for_mlprogram_operation(self, op):
        if _compile_time(op.operator_name):
            return None
        ane, cpu, gpu = (_device(MLNeuralEngineComputeDevice), _device(MLCPUComputeDevice),
                         _device(MLGPUComputeDevice))
        if op.operator_name.split(".")[-1] in CPU_OPS:
            return cp.MLComputePlanDeviceUsage(preferred_compute_device=cpu,
                                               supported_compute_devices=[cpu])
        return cp.MLComputePlanDeviceUsage(preferred_compute_device=ane,
                                           supported_compute_devices=[cpu, gpu, ane])

    def get_estimated_cost_for_mlprogram_operation(self, op):
        if _compile_time(op.operator_name):
            return None
        return cp.MLComputePlanCost(weight=1.0 / len(self._compute))


def _compile_time(operator):
    operator = operator.split(".")[-1]
    return operator == "const" or operator.startswith("constexpr_")


class FakeModel:
    """predict() through golden-validator exec: the shard runs on our CPU interpreter."""

    def __init__(self, golden_validator, path, function):
        self.golden_validator, self.path, self.function = golden_validator, path, function
        self.calls = []

    def make_state(self):
        raise NotImplementedError("the fake runtime does not carry Core ML state")

    def predict(self, inputs, state=None):
        if state is not None:
            raise NotImplementedError("the fake runtime does not carry Core ML state")
        self.calls.append(sorted(inputs))
        with tempfile.TemporaryDirectory(prefix="sg_fake_predict_") as tmp:
            args = [self.golden_validator, "exec", self.path, "--function", self.function,
                    "--out", os.path.join(tmp, "out"), "-q"]
            for name, value in inputs.items():
                file = os.path.join(tmp, f"in_{name}.npy")
                np.save(file, value)
                args += ["--input", f"{name}={file}"]
            subprocess.run(args, check=True, capture_output=True, text=True)
            out_dir = os.path.join(tmp, "out")
            return {f[:-4]: np.load(os.path.join(out_dir, f)) for f in os.listdir(out_dir)
                    if f.endswith(".npy")}


class FakeRuntime:
    note = ("FAKE runtime (tests/mac/fake_runtime.py): no Mac ran this; devices come from a "
            "table, not from Core ML")

    def __init__(self, golden_validator=None, drop_functions=(), compile_error=None,
                 compiled_extra_ops=()):
        self.golden_validator = golden_validator
        self.drop_functions = set(drop_functions)
        # (function, operator, output): ops the "compiler" adds at the end of the function's
        # block, present in the plan but not in the package (as a compiler-inserted cast would be)
        self.compiled_extra_ops = list(compiled_extra_ops)
        self.compile_error = compile_error  # raised by compile_model, as Core ML's proxy does
        self._source = {}  # compiled path -> package it stands for
        self.compiled = []
        self.models = []

    def compile_model(self, package, destination):
        if self.compile_error:
            raise self.compile_error
        package = package.rstrip("/")
        twin = package[:-len(".mlpackage")] + ".mlmodelc"
        if os.path.isdir(twin):
            shutil.copytree(twin, destination)
        else:
            os.makedirs(destination)
            with open(os.path.join(destination, "model.mil"), "w") as f:
                f.write(f"// FAKE compile of {os.path.basename(package)} by "
                        "tests/mac/fake_runtime.py: not a real model.mil\n")
            weights = os.path.join(package, "Data", "com.apple.CoreML", "weights")
            if os.path.isdir(weights):
                shutil.copytree(weights, os.path.join(destination, "weights"))
        self._source[destination] = package
        self.compiled.append((package, destination))
        return destination

    def load_compute_plan(self, compiled, compute_units):
        assert compute_units in ("CPU_AND_NE", "ALL", "CPU_AND_GPU", "CPU_ONLY")
        package = self._source.get(compiled)
        if package is None:
            package = compiled.rstrip("/")[:-len(".mlmodelc")] + ".mlpackage"
            if not os.path.isdir(package):
                raise FileNotFoundError(f"fake runtime: no package beside {compiled} to read "
                                        "the structure from")
        plan = object.__new__(cp.MLComputePlan)  # the native proxy is absent on Linux
        structure = _structure_from_package(package, self.drop_functions)
        for function, operator, output in self.compiled_extra_ops:
            structure.program.functions[function].block.operations.append(
                cp.MLModelStructureProgramOperation(
                    inputs={}, operator_name=operator, blocks=[], __proxy__=None,
                    outputs=[cp.MLModelStructureProgramNamedValueType(
                        name=output, type=cp.MLModelStructureProgramValueType())]))
        plan.__proxy__ = _PlanProxy(structure)
        return plan

    def load_model(self, path, compute_units, function):
        assert compute_units == "CPU_AND_NE"
        model = FakeModel(self.golden_validator, path, function)
        self.models.append(model)
        return model

    def host(self):
        return {"os": "Linux (fake)", "chip": "none: tests/mac/fake_runtime.py",
                "ane_total_cores": None, "target": "fake"}


def load_json(path):
    with open(path) as f:
        return json.load(f)
