"""Writes the expected outputs the model.mil reader tests compare against.

Oracles independent of the C++ reader:
  * <model>.ops.txt: the op graph of each corpus model, read with coremltools' protobuf
    classes from the .mlpackage the .mlmodelc was compiled from (same graph; runtime/format/README.md);
  * literals.txt: element bit patterns of number literals, converted by numpy from the exact
    value of the literal text (float.fromhex / float()).

Run from the repository root with /opt/ctvenv/bin/python; CI never runs it, it reads the
committed outputs.
"""
import json
import os
import sys

import numpy as np
from coremltools.proto import MIL_pb2, Model_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "corpus", "silero-vad")
MODELS = ["silero-vad-unified-v6.0.0", "unified_palette_4bit", "unified_int8"]

DTYPES = {
    MIL_pb2.BOOL: "bool", MIL_pb2.STRING: "string", MIL_pb2.FLOAT16: "fp16",
    MIL_pb2.FLOAT32: "fp32", MIL_pb2.FLOAT64: "fp64", MIL_pb2.INT8: "int8",
    MIL_pb2.INT16: "int16", MIL_pb2.INT32: "int32", MIL_pb2.INT64: "int64",
    MIL_pb2.UINT8: "uint8", MIL_pb2.UINT16: "uint16", MIL_pb2.UINT32: "uint32",
    MIL_pb2.UINT64: "uint64",
}
BYTE_DTYPES = {"fp16": np.uint16, "int8": np.int8, "uint8": np.uint8, "uint32": np.uint32}


def type_str(vt):
    which = vt.WhichOneof("type")
    if which != "tensorType":
        raise SystemExit("unexpected non-tensor type in corpus: " + which)
    tt = vt.tensorType
    dims = []
    for d in tt.dimensions:
        dims.append(str(d.constant.size) if d.WhichOneof("dimension") == "constant" else "?")
    return "%s[%s]" % (DTYPES[tt.dataType], ",".join(dims))


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def value_str(v):
    ts = type_str(v.type)
    dtype = DTYPES[v.type.tensorType.dataType]
    if v.WhichOneof("value") == "blobFileValue":
        return "%s blob %s %d" % (ts, v.blobFileValue.fileName, v.blobFileValue.offset)
    tv = v.immediateValue.tensor
    field = tv.WhichOneof("value")
    if field == "bytes":
        vals = np.frombuffer(tv.bytes.values, dtype=BYTE_DTYPES[dtype]).tolist()
    else:
        vals = list(getattr(tv, field).values)
    if dtype == "fp16":
        items = ["0x%04x" % x for x in vals]
    elif dtype == "fp32":
        items = ["0x%08x" % x for x in np.array(vals, dtype=np.float32).view(np.uint32).tolist()]
    elif dtype == "bool":
        items = ["true" if x else "false" for x in vals]
    elif dtype == "string":
        items = [quote(x) for x in vals]
    else:
        items = [str(int(x)) for x in vals]
    return " ".join([ts] + items)


def opset_text(opset):
    # Protobuf "CoreML6" is printed "ios16" in model.mil (runtime/format/README.md).
    return "ios%d" % (int(opset[len("CoreML"):]) + 10) if opset.startswith("CoreML") else opset


def dump_model(name):
    path = os.path.join(CORPUS, name + ".mlpackage", "Data", "com.apple.CoreML", "model.mlmodel")
    spec = Model_pb2.Model()
    with open(path, "rb") as f:
        spec.ParseFromString(f.read())
    lines = []
    for fname in sorted(spec.mlProgram.functions):
        fn = spec.mlProgram.functions[fname]
        lines.append("func %s %s" % (fname, opset_text(fn.opset)))
        # model.mil prints parameters sorted by name; the proto keeps declaration order.
        for inp in sorted(fn.inputs, key=lambda i: i.name):
            lines.append("param %s %s" % (inp.name, type_str(inp.type)))
        block = fn.block_specializations[fn.opset]
        for i, op in enumerate(block.operations):
            lines.append("op %d %s" % (i, op.type))
            for out in op.outputs:
                lines.append("out %s %s" % (out.name, type_str(out.type)))
            for key in sorted(op.inputs):
                names = []
                for b in op.inputs[key].arguments:
                    if b.WhichOneof("binding") != "name":
                        raise SystemExit("unexpected literal binding in corpus")
                    names.append(b.name)
                lines.append("in %s %s" % (key, " ".join(names)))
            for key in sorted(op.attributes):
                lines.append("attr %s %s" % (key, value_str(op.attributes[key])))
        lines.append("outputs " + " ".join(block.outputs))
    with open(os.path.join(HERE, name + ".ops.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


# (dtype, literal text as written in model.mil). Expected bits come from numpy.
LITERALS = [
    ("fp16", "-0x1.388p+13"), ("fp16", "0x1p-24"), ("fp16", "0x1.5p-17"), ("fp16", "0x0p+0"),
    ("fp16", "-0x0p+0"), ("fp16", "0x1p-1"), ("fp16", "-0x1.48p-1"), ("fp16", "0x1.ffcp+15"),
    ("fp16", "0x1.00200001p+0"), ("fp16", "0x1.002p+0"), ("fp16", "0x1.006p+0"),
    ("fp16", "0x1p-25"), ("fp16", "0x1.000002p-25"), ("fp16", "0.1"), ("fp16", "-2.5e-3"),
    ("fp16", "65504"), ("fp16", "1e-9"), ("fp16", "inf"), ("fp16", "-inf"), ("fp16", "nan"),
    ("fp32", "-0x1.e28358p-6"), ("fp32", "0x1.4dfed8p-4"), ("fp32", "0x1p-149"),
    ("fp32", "0x1.fffffep+127"), ("fp32", "0.1"), ("fp32", "3.14159265358979"),
    ("fp32", "-1e-3"), ("fp32", "7"), ("fp32", "inf"), ("fp32", "-inf"), ("fp32", "nan"),
    ("fp64", "0.1"), ("fp64", "-0x1.8p+1"),
    ("int8", "-128"), ("int8", "127"), ("uint8", "255"), ("int16", "-32768"),
    ("uint16", "65535"), ("int32", "-2147483648"), ("int32", "2147483647"),
    ("uint32", "4294967295"), ("int64", "-9223372036854775808"),
    ("int64", "9223372036854775807"), ("uint64", "18446744073709551615"),
]
NP_TYPES = {"fp16": (np.float16, np.uint16), "fp32": (np.float32, np.uint32),
            "fp64": (np.float64, np.uint64)}


def exact(text):
    t = text.lstrip("+-")
    v = float.fromhex(t) if t.lower().startswith("0x") else float(t)
    return -v if text.startswith("-") else v


def dump_literals():
    lines = []
    for dtype, text in LITERALS:
        if dtype in NP_TYPES:
            ftype, utype = NP_TYPES[dtype]
            # np.float16(double) rounds once, to nearest even.
            bits = int(np.array([ftype(exact(text))]).view(utype)[0])
            lines.append("%s %s 0x%x" % (dtype, text, bits))
        else:
            lines.append("%s %s %d" % (dtype, text, int(np.array([int(text)], dtype=dtype)[0])))
    with open(os.path.join(HERE, "literals.txt"), "w") as f:
        f.write("# dtype literal expected (bit pattern for floats, value for ints); numpy oracle\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    for m in MODELS:
        dump_model(m)
    dump_literals()
    print("wrote", HERE, file=sys.stderr)
