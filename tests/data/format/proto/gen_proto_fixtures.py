"""Writes the fixtures and expected dumps the protobuf reader tests compare against.

Oracle: Google's protobuf runtime with coremltools' generated classes (Model_pb2, MIL_pb2,
FeatureTypes_pb2), independent of our C++ wire reader.

  * <corpus model>.dump.txt: the program and model description of each corpus .mlpackage,
    printed in the dump format below;
  * features.mlmodel + features.dump.txt: a small hand-built model exercising what the corpus
    lacks (every TensorValue field, narrowed int16/uint16, packed sub-byte bytes, tuple / list /
    dict immediates, literal and variadic bindings, a nested block, state, list and dict types,
    unknown dims and rank, two functions with CoreML8/CoreML7 opsets, function and program
    attributes, multifunction descriptions with states and enumerated/range flexibility).

Dump format (one fact per line; see tests/support/program_dump.cpp, its C++ twin):
  spec N | info <input|output|state> <function> <name> <dtype> <shape> flex=F range=R
  info default <name> | program <version> | pattr <key> = <value>
  func <name> <opset> | fattr <key> = <value> | param <name> <type> (proto order)
  op <index> <type> | in <key> <tuple|single> <binding>... | out <name> <type>
  attr <key> = <value> | block <i> | binput <name> <type> | outputs <names>
Nested blocks indent by two spaces. Values: "<type> <payload>", payload "blob(<path>, <offset>)",
"[elements]" (fp16/fp32/fp64 as hex bit patterns, ints in decimal, bools true/false, strings
quoted, sub-byte types as the packed bytes "packed 0x.."), "(v, v)" for tuples and lists,
"{k: v, k: v}" for dicts.

Run from anywhere with /opt/ctvenv/bin/python; CI never runs it, it reads the committed files.
"""
import os
import sys

import numpy as np
from coremltools.proto import FeatureTypes_pb2, MIL_pb2, Model_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "corpus", "silero-vad")
MODELS = ["silero-vad-unified-v6.0.0", "unified_palette_4bit", "unified_int8"]

DT = MIL_pb2
DTYPES = {
    DT.BOOL: "bool", DT.STRING: "string", DT.FLOAT16: "fp16", DT.FLOAT32: "fp32",
    DT.FLOAT64: "fp64", DT.BFLOAT16: "bf16", DT.INT8: "int8", DT.INT16: "int16",
    DT.INT32: "int32", DT.INT64: "int64", DT.INT4: "int4", DT.UINT8: "uint8",
    DT.UINT16: "uint16", DT.UINT32: "uint32", DT.UINT64: "uint64", DT.UINT4: "uint4",
    DT.UINT2: "uint2", DT.UINT1: "uint1", DT.UINT6: "uint6", DT.UINT3: "uint3",
}
SUBBYTE = {"int4", "uint1", "uint2", "uint3", "uint4", "uint6"}
BYTE_NP = {"fp16": np.uint16, "bf16": np.uint16, "int8": np.int8, "uint8": np.uint8,
           "uint32": np.uint32}
ARRAY_DTYPES = {FeatureTypes_pb2.ArrayFeatureType.FLOAT16: "fp16",
                FeatureTypes_pb2.ArrayFeatureType.FLOAT32: "fp32",
                FeatureTypes_pb2.ArrayFeatureType.DOUBLE: "fp64",
                FeatureTypes_pb2.ArrayFeatureType.INT32: "int32"}


# --- dump ---------------------------------------------------------------------------------

def opset_text(opset):
    if opset.startswith("CoreML"):
        n = int(opset[len("CoreML"):])
        return "ios26" if n == 9 else "ios%d" % (n + 10)
    return opset


def op_type_text(t):
    return t.split(".", 1)[1] if t.startswith("ios") and "." in t else t


def dim_text(d):
    return str(d.constant.size) if d.WhichOneof("dimension") == "constant" else "?"


def type_str(vt):
    which = vt.WhichOneof("type")
    if which == "tensorType":
        tt = vt.tensorType
        if tt.rank == -1 or any(d.WhichOneof("dimension") == "unknown" and d.unknown.variadic
                                for d in tt.dimensions):
            shape = "[*]"
        else:
            shape = "[" + ", ".join(dim_text(d) for d in tt.dimensions) + "]"
        return "tensor<%s, %s>" % (DTYPES[tt.dataType], shape)
    if which == "stateType":
        return "state<%s>" % type_str(vt.stateType.wrappedType)
    if which == "listType":
        n = dim_text(vt.listType.length) if vt.listType.HasField("length") else "?"
        return "list<%s, %s>" % (type_str(vt.listType.type), n)
    if which == "tupleType":
        return "tuple<%s>" % ", ".join(type_str(t) for t in vt.tupleType.types)
    if which == "dictionaryType":
        return "dict<%s, %s>" % (type_str(vt.dictionaryType.keyType),
                                 type_str(vt.dictionaryType.valueType))
    raise SystemExit("no type")


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def tensor_items(dtype, tv):
    field = tv.WhichOneof("value")
    if field is None:
        return []
    if field == "bytes":
        raw = tv.bytes.values
        if dtype in SUBBYTE:
            return ["packed"] + ["0x%02x" % b for b in raw]
        vals = np.frombuffer(raw, dtype=BYTE_NP[dtype]).tolist()
    else:
        vals = list(getattr(tv, field).values)
    if dtype in ("fp16", "bf16"):
        return ["0x%04x" % x for x in vals]
    if dtype == "fp32":
        return ["0x%08x" % x for x in np.array(vals, dtype=np.float32).view(np.uint32).tolist()]
    if dtype == "fp64":
        return ["0x%016x" % x for x in np.array(vals, dtype=np.float64).view(np.uint64).tolist()]
    if dtype == "bool":
        return ["true" if x else "false" for x in vals]
    if dtype == "string":
        return [quote(x) for x in vals]
    if dtype == "uint64":
        return [str(int(x) & 0xFFFFFFFFFFFFFFFF) for x in vals]
    return [str(int(x)) for x in vals]


def value_str(v):
    ts = type_str(v.type)
    if v.WhichOneof("value") == "blobFileValue":
        return "%s blob(%s, %d)" % (ts, v.blobFileValue.fileName, v.blobFileValue.offset)
    iv = v.immediateValue
    which = iv.WhichOneof("value")
    if which == "tensor":
        return "%s [%s]" % (ts, " ".join(tensor_items(DTYPES[v.type.tensorType.dataType],
                                                       iv.tensor)))
    if which in ("tuple", "list"):
        return "%s (%s)" % (ts, ", ".join(value_str(e) for e in getattr(iv, which).values))
    if which == "dictionary":
        return "%s {%s}" % (ts, ", ".join("%s: %s" % (value_str(p.key), value_str(p.value))
                                         for p in iv.dictionary.values))
    raise SystemExit("empty immediate")


def dump_block(block, indent, lines):
    pad = "  " * indent
    for inp in block.inputs:
        lines.append("%sbinput %s %s" % (pad, inp.name, type_str(inp.type)))
    for i, op in enumerate(block.operations):
        lines.append("%sop %d %s" % (pad, i, op_type_text(op.type)))
        for key in sorted(op.inputs):
            args = op.inputs[key].arguments
            items = []
            for b in args:
                if b.WhichOneof("binding") == "name":
                    items.append("%" + b.name)
                else:
                    items.append("<" + value_str(b.value) + ">")
            lines.append("%s  in %s %s %s" % (pad, key, "tuple" if len(args) > 1 else "single",
                                             " ".join(items)))
        for out in op.outputs:
            lines.append("%s  out %s %s" % (pad, out.name, type_str(out.type)))
        for key in sorted(op.attributes):
            lines.append("%s  attr %s = %s" % (pad, key, value_str(op.attributes[key])))
        for j, b in enumerate(op.blocks):
            lines.append("%s  block %d" % (pad, j))
            dump_block(b, indent + 2, lines)
    lines.append("%soutputs %s" % (pad, " ".join(block.outputs)))


def feature_lines(kind, fn, feats, lines):
    for f in feats:
        t = f.type
        which = t.WhichOneof("Type")
        flex = rng = 0
        if which == "stateType":
            arr = t.stateType.arrayType
        elif which == "multiArrayType":
            arr = t.multiArrayType
        else:
            raise SystemExit("unexpected feature type " + str(which))
        shape = list(arr.shape)
        flexw = arr.WhichOneof("ShapeFlexibility")
        if flexw == "enumeratedShapes":
            flex = 1
            shapes = [list(s.shape) for s in arr.enumeratedShapes.shapes]
            base = shape if shape else shapes[0]
            shape = [d if all(s[i] == d for s in shapes) else -1 for i, d in enumerate(base)]
        elif flexw == "shapeRange":
            flex = rng = 1
            shape = [r.lowerBound if r.lowerBound == r.upperBound else -1
                     for r in arr.shapeRange.sizeRanges]
        dims = ", ".join("?" if d < 0 else str(d) for d in shape)
        lines.append("info %s %s %s %s [%s] flex=%d range=%d" % (
            kind, fn or "-", f.name, ARRAY_DTYPES[arr.dataType], dims, flex, rng))


def dump_model(spec):
    lines = ["spec %d" % spec.specificationVersion]
    d = spec.description
    feature_lines("input", "", d.input, lines)
    feature_lines("output", "", d.output, lines)
    feature_lines("state", "", d.state, lines)
    for fd in d.functions:
        feature_lines("input", fd.name, fd.input, lines)
        feature_lines("output", fd.name, fd.output, lines)
        feature_lines("state", fd.name, fd.state, lines)
    if d.defaultFunctionName:
        lines.append("info default %s" % d.defaultFunctionName)
    p = spec.mlProgram
    lines.append("program %d" % p.version)
    for key in sorted(p.attributes):
        lines.append("pattr %s = %s" % (key, value_str(p.attributes[key])))
    for name in sorted(p.functions):
        fn = p.functions[name]
        lines.append("func %s %s" % (name, opset_text(fn.opset)))
        for key in sorted(fn.attributes):
            lines.append("fattr %s = %s" % (key, value_str(fn.attributes[key])))
        for inp in fn.inputs:
            lines.append("param %s %s" % (inp.name, type_str(inp.type)))
        dump_block(fn.block_specializations[fn.opset], 0, lines)
    return "\n".join(lines) + "\n"


# --- the hand-built model -----------------------------------------------------------------

def tensor_type(vt, dtype, dims, rank=None):
    tt = vt.tensorType
    tt.dataType = dtype
    for d in dims:
        dim = tt.dimensions.add()
        if d is None:
            dim.unknown.variadic = False
        else:
            dim.constant.size = d
    tt.rank = len(dims) if rank is None else rank
    return vt


def tensor_value(v, dtype, dims, field, values):
    tensor_type(v.type, dtype, dims)
    tv = v.immediateValue.tensor
    tv.SetInParent()
    if field == "bytes":
        tv.bytes.values = values
    else:
        getattr(tv, field).values.extend(values)
    return v


def string_value(v, s):
    return tensor_value(v, DT.STRING, [], "strings", [s])


def add_const(block, name, dtype, dims, field, values):
    op = block.operations.add()
    op.type = "const"
    tensor_type(op.outputs.add().type, dtype, dims).SetInParent()
    op.outputs[0].name = name
    string_value(op.attributes["name"], name)
    tensor_value(op.attributes["val"], dtype, dims, field, values)
    return op


def ref(arg, *names):
    for n in names:
        arg.arguments.add().name = n


def build_features():
    spec = Model_pb2.Model()
    spec.specificationVersion = 9
    d = spec.description
    for fname, n in (("main", 8), ("prefill", 64)):
        fd = d.functions.add()
        fd.name = fname
        i = fd.input.add()
        i.name = "x"
        arr = i.type.multiArrayType
        arr.dataType = FeatureTypes_pb2.ArrayFeatureType.FLOAT16
        arr.shape.extend([1, n])
        if fname == "main":
            for s in ([1, 8], [1, 16], [1, 32]):
                arr.enumeratedShapes.shapes.add().shape.extend(s)
        else:
            r = arr.shapeRange.sizeRanges.add()
            r.lowerBound, r.upperBound = 1, 1
            r = arr.shapeRange.sizeRanges.add()
            r.lowerBound, r.upperBound = 1, -1
        st = fd.state.add()
        st.name = "kv"
        sa = st.type.stateType.arrayType
        sa.dataType = FeatureTypes_pb2.ArrayFeatureType.FLOAT16
        sa.shape.extend([2, 4])
        o = fd.output.add()
        o.name = "y"
        o.type.multiArrayType.dataType = FeatureTypes_pb2.ArrayFeatureType.FLOAT32
        o.type.multiArrayType.shape.extend([1, 4])
    d.defaultFunctionName = "main"

    p = spec.mlProgram
    p.version = 1
    bi = p.attributes["buildInfo"]
    dt = bi.type.dictionaryType
    tensor_type(dt.keyType, DT.STRING, [])
    tensor_type(dt.valueType, DT.STRING, [])
    for k, v in (("zeta", "1"), ("alpha", "two")):
        pair = bi.immediateValue.dictionary.values.add()
        string_value(pair.key, k)
        string_value(pair.value, v)

    # Function "prefill" (CoreML7, serialized first) with every immediate dtype.
    fn = p.functions["prefill"]
    fn.opset = "CoreML7"
    inp = fn.inputs.add()
    inp.name = "x"
    tensor_type(inp.type, DT.FLOAT16, [1, None])
    inp = fn.inputs.add()
    inp.name = "any_rank"
    tensor_type(inp.type, DT.FLOAT32, [], rank=-1)
    other = fn.block_specializations["CoreML6"]  # not the function's opset: must be ignored
    other.outputs.append("ignored")
    b = fn.block_specializations["CoreML7"]
    fp16 = np.array([1.0, -2.5, 65504.0, np.inf], dtype=np.float16).tobytes()
    add_const(b, "c_fp16", DT.FLOAT16, [2, 2], "bytes", fp16)
    add_const(b, "c_fp32", DT.FLOAT32, [3], "floats", [0.1, -0.0, 3.4e38])
    add_const(b, "c_fp64", DT.FLOAT64, [2], "doubles", [0.1, -1e300])
    add_const(b, "c_int8", DT.INT8, [3], "bytes", np.array([-128, 0, 127], np.int8).tobytes())
    add_const(b, "c_uint8", DT.UINT8, [2], "bytes", bytes([0, 255]))
    add_const(b, "c_int16", DT.INT16, [2], "ints", [-32768, 32767])
    add_const(b, "c_uint16", DT.UINT16, [2], "ints", [0, 65535])
    add_const(b, "c_int32", DT.INT32, [3], "ints", [-2147483648, 2147483647, -1])
    add_const(b, "c_uint32", DT.UINT32, [2], "bytes", np.array([1, 4294967295], np.uint32).tobytes())
    add_const(b, "c_int64", DT.INT64, [2], "longInts", [-9223372036854775808, 42])
    add_const(b, "c_uint64", DT.UINT64, [1], "longInts", [-1])  # all bits set: 2**64 - 1
    add_const(b, "c_bool", DT.BOOL, [3], "bools", [True, False, True])
    add_const(b, "c_str", DT.STRING, [2], "strings", ["a\"b", ""])
    add_const(b, "c_uint4", DT.UINT4, [3], "bytes", bytes([0x21, 0x03]))
    add_const(b, "c_int4", DT.INT4, [2], "bytes", bytes([0x8f]))
    add_const(b, "c_uint3", DT.UINT3, [3], "bytes", bytes([0xd1, 0x01]))
    add_const(b, "c_empty", DT.FLOAT32, [0], "floats", [])
    add_const(b, "c_bf16", DT.BFLOAT16, [1], "bytes", bytes([0x80, 0x3f]))
    add_const(b, "c_blob", DT.FLOAT16, [4, 8], "bytes", b"")
    blob = b.operations[-1].attributes["val"]
    blob.ClearField("immediateValue")
    blob.blobFileValue.fileName = "@model_path/weights/weight.bin"
    blob.blobFileValue.offset = 128

    # concat with a variadic input and an inline literal binding.
    op = b.operations.add()
    op.type = "concat"
    ref(op.inputs["values"], "x", "c_fp16")
    ax = op.inputs["axis"].arguments.add()
    tensor_value(ax.value, DT.INT32, [], "ints", [-1])
    ref(op.inputs["interleave"], "c_bool")
    o = op.outputs.add()
    o.name = "cat"
    tensor_type(o.type, DT.FLOAT16, [1, None])
    string_value(op.attributes["name"], "cat")

    # an op with tuple, list and dict attributes and multi-output (list/dict/tuple typed).
    op = b.operations.add()
    op.type = "ios17.custom_attrs"
    t = op.attributes["tup"]
    tt = t.type.tupleType
    tensor_type(tt.types.add(), DT.STRING, [])
    tensor_type(tt.types.add(), DT.INT32, [2])
    string_value(t.immediateValue.tuple.values.add(), "DefaultShapes")
    tensor_value(t.immediateValue.tuple.values.add(), DT.INT32, [2], "ints", [1, 266])
    lv = op.attributes["lst"]
    tensor_type(lv.type.listType.type, DT.INT32, [2])
    lv.type.listType.length.unknown.variadic = False
    for pair in ([1, 1], [2, 4000]):
        tensor_value(lv.immediateValue.list.values.add(), DT.INT32, [2], "ints", pair)
    string_value(op.attributes["name"], "custom")
    o = op.outputs.add()
    o.name = "l_out"
    tensor_type(o.type.listType.type, DT.FLOAT16, [4])
    o.type.listType.length.constant.size = 3
    o = op.outputs.add()
    o.name = "d_out"
    tensor_type(o.type.dictionaryType.keyType, DT.STRING, [])
    tensor_type(o.type.dictionaryType.valueType, DT.FLOAT32, [None, 2])
    b.outputs.append("cat")

    # Function "main" (CoreML8 -> ios18): state input, cond with two nested blocks.
    fn = p.functions["main"]
    fn.opset = "CoreML8"
    inp = fn.inputs.add()
    inp.name = "x"
    tensor_type(inp.type, DT.FLOAT16, [1, 8])
    inp = fn.inputs.add()
    inp.name = "kv"
    tensor_type(inp.type.stateType.wrappedType, DT.FLOAT16, [2, 4])
    inp = fn.inputs.add()
    inp.name = "flag"
    tensor_type(inp.type, DT.BOOL, [])
    fa = fn.attributes["note"]
    string_value(fa, "fn-attr")
    b = fn.block_specializations["CoreML8"]
    op = b.operations.add()
    op.type = "read_state"
    ref(op.inputs["input"], "kv")
    o = op.outputs.add()
    o.name = "kv_now"
    tensor_type(o.type, DT.FLOAT16, [2, 4])
    string_value(op.attributes["name"], "read")
    op = b.operations.add()
    op.type = "cond"
    ref(op.inputs["pred"], "flag")
    o = op.outputs.add()
    o.name = "picked"
    tensor_type(o.type, DT.FLOAT16, [1, 8])
    string_value(op.attributes["name"], "cond_0")
    for branch, fn_name in (("t", "relu"), ("f", "sigmoid")):
        nb = op.blocks.add()
        inner = nb.operations.add()
        inner.type = fn_name
        ref(inner.inputs["x"], "x")
        io = inner.outputs.add()
        io.name = "%s_out" % branch
        tensor_type(io.type, DT.FLOAT16, [1, 8])
        string_value(inner.attributes["name"], "%s_op" % branch)
        nb.outputs.append(io.name)
    op = b.operations.add()
    op.type = "write_state"
    ref(op.inputs["input"], "kv")
    ref(op.inputs["data"], "kv_now")
    string_value(op.attributes["name"], "write")
    b.outputs.append("picked")
    return spec


def main():
    for m in MODELS:
        path = os.path.join(CORPUS, m + ".mlpackage", "Data", "com.apple.CoreML", "model.mlmodel")
        spec = Model_pb2.Model()
        with open(path, "rb") as f:
            spec.ParseFromString(f.read())
        with open(os.path.join(HERE, m + ".dump.txt"), "w") as f:
            f.write(dump_model(spec))
    spec = build_features()
    data = spec.SerializeToString(deterministic=True)
    with open(os.path.join(HERE, "features.mlmodel"), "wb") as f:
        f.write(data)
    check = Model_pb2.Model()
    check.ParseFromString(data)
    with open(os.path.join(HERE, "features.dump.txt"), "w") as f:
        f.write(dump_model(check))
    print("wrote", HERE, file=sys.stderr)


if __name__ == "__main__":
    main()
