#!/usr/bin/env python3
"""Seeds for fuzz_exec: each op's first oracle cases (tests/data/ops/*/cases.json) as a MIL program.

    tests/fuzz/cases_to_mil.py OUT_DIR [--per-op N]

The hand-written exec seeds reach a handful of ops; these give the fuzzer a running program for
every op the oracle cases cover (156 when written; the script prints the count), so its
mutations start inside pooling, resize, recurrent, scatter, list and detection kernels instead
of having to find their names and parameters by chance. Each program is one op: small tensors (at most K_INLINE elements) and every
literal parameter become `const` ops, larger tensors function inputs (the fuzz target feeds them
seeded values), the outputs are declared with the shapes and types numpy wrote. Cases expected to
fail, cases with state inputs and values MIL text cannot spell (non-finite floats) are skipped.

Standard library only (make_seeds.sh runs it in CI before any Python package is installed): the
.npy headers and data are read here, not by numpy.
"""
import argparse
import ast
import json
import math
import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
K_INLINE = 64  # tensors up to this many elements are written as const literals

# npy descr -> (MIL dtype, struct format)
NPY_TYPES = {
    "<f2": ("fp16", "e"), "<f4": ("fp32", "f"), "<f8": ("fp64", "d"),
    "<i4": ("int32", "i"), "<i8": ("int64", "q"), "<i2": ("int16", "h"), "|i1": ("int8", "b"),
    "<u2": ("uint16", "H"), "<u4": ("uint32", "I"), "|u1": ("uint8", "B"), "|b1": ("bool", "?"),
}


def read_npy(path):
    """(MIL dtype, shape, flat values) of a little-endian C-order .npy file."""
    data = path.read_bytes()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not an npy file")
    major = data[6]
    hlen_size = 2 if major == 1 else 4
    hlen = int.from_bytes(data[8:8 + hlen_size], "little")
    start = 8 + hlen_size
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["fortran_order"] or header["descr"] not in NPY_TYPES:
        raise ValueError(f"{path}: unsupported layout {header}")
    dtype, fmt = NPY_TYPES[header["descr"]]
    shape = list(header["shape"])
    count = math.prod(shape)
    values = list(struct.unpack_from(f"<{count}{fmt}", data, start + hlen))
    return dtype, shape, values


def type_text(dtype, shape):
    return dtype if not shape and dtype != "string" else f"tensor<{dtype}, [{', '.join(map(str, shape))}]>"


def scalar_text(dtype, v):
    if dtype == "bool":
        return "true" if v else "false"
    if dtype == "string":
        return json.dumps(v)
    if dtype.startswith("fp"):
        if not math.isfinite(v):
            raise ValueError("non-finite literal")
        return float(v).hex()
    return str(int(v))


def nested(dtype, shape, flat):
    if not shape:
        return scalar_text(dtype, flat[0])
    step = math.prod(shape[1:])
    return "[" + ", ".join(nested(dtype, shape[1:], flat[i * step:(i + 1) * step]) for i in range(shape[0])) + "]"


def literal(dtype, shape, flat):
    """The text of a const's value: int32(3), tensor<fp16, [2]>([0x1p+0, ...])."""
    if not shape:
        return f"{dtype}({scalar_text(dtype, flat[0])})"
    return f"{type_text(dtype, shape)}({nested(dtype, shape, flat)})"


def value_of(spec):
    """(dtype, shape, flat) of a "value" entry: a scalar or nested lists."""
    dtype, v = spec["dtype"], spec["value"]
    shape = []
    probe = v
    while isinstance(probe, list):
        shape.append(len(probe))
        probe = probe[0] if probe else None
    flat = v
    for _ in range(len(shape) - 1):
        flat = [e for row in flat for e in row]
    return dtype, shape, flat if shape else [v]


class Program:
    def __init__(self, opset):
        self.opset = opset
        self.inputs = []  # "type name"
        self.lines = []

    def bind(self, name, spec, case_dir):
        """A name holding spec's tensor: a const, or a function input when large."""
        if "npy" in spec:
            _, shape, flat = read_npy(case_dir / spec["npy"])
            dtype = spec["dtype"]  # the declared type (an fp16 parameter may be stored as fp32 npy)
            if len(flat) > K_INLINE:
                self.inputs.append(f"{type_text(dtype, shape)} {name}")
                return name
        else:
            dtype, shape, flat = value_of(spec)
        self.lines.append(f'{type_text(dtype, shape)} {name} = const()[name = string("{name}"), val = {literal(dtype, shape, flat)}];')
        return name

    def text(self, outputs):
        body = "\n".join("        " + line for line in self.lines)
        return (f"program(1.3)\n{{\n    func main<{self.opset}>({', '.join(self.inputs)}) {{\n"
                f"{body}\n    }} -> ({', '.join(outputs)});\n}}\n")


def program_of(case, case_dir):
    if case.get("expect_error") or "states_out" in case:
        return None
    prog = Program(case.get("opset", "ios18"))
    args = []
    for pname, spec in case["inputs"].items():
        if "state" in spec:
            return None
        if "tuple" in spec:
            names = [prog.bind(f"{pname}_{i}", e, case_dir) for i, e in enumerate(spec["tuple"])]
            args.append(f"{pname} = ({', '.join(names)})")
        else:
            args.append(f"{pname} = {prog.bind('in_' + pname, spec, case_dir)}")
    outs = []
    for i, o in enumerate(case["outputs"]):
        if "npy" not in o:
            return None
        dtype, shape, _ = read_npy(case_dir / o["npy"])
        outs.append((f"out{i}", type_text(o.get("dtype", dtype), shape)))
    lhs = ", ".join(f"{t} {n}" for n, t in outs)  # several outputs: comma separated, no parentheses
    prog.lines.append(f'{lhs} = {case["op"]}({", ".join(args)})[name = string("op")];')
    return prog.text([n for n, _ in outs])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--per-op", type=int, default=2, help="cases per op (default 2)")
    ap.add_argument("--min-ops", type=int, default=150, help="fail below this many ops (default 150)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    written, per_op = 0, {}
    for cases_file in sorted((ROOT / "tests/data/ops").glob("*/cases.json")):
        for case in json.loads(cases_file.read_text())["cases"]:
            if per_op.get(case["op"], 0) >= a.per_op:
                continue
            try:
                text = program_of(case, cases_file.parent)
            except (ValueError, KeyError, struct.error):
                continue
            if text is None:
                continue
            (a.out / f"case_{case['id']}.mil").write_text(text)
            per_op[case["op"]] = per_op.get(case["op"], 0) + 1
            written += 1
    print(f"{written} programs for {len(per_op)} ops in {a.out}")
    # Fewer ops than the cases held when this was written (156) means programs stopped being
    # written: a format change in cases.json or in what is skipped, not a smaller corpus to accept.
    if len(per_op) < a.min_ops:
        print(f"cases_to_mil.py: only {len(per_op)} ops written, expected at least {a.min_ops}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
