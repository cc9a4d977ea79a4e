"""GoldenDumpWriter: dumps the library reads back bit for bit, manifests valid under the shipped
schema, and refusals (bad position axis, duplicates, edited files)."""

import json

import numpy as np
import pytest

import shardgate


def test_written_dump_reads_back_with_kinds_layers_and_axes(tmp_path):
    rng = np.random.default_rng(1)
    hidden = [rng.standard_normal((1, 5, 16)).astype(np.float32) for _ in range(3)]
    with shardgate.GoldenDumpWriter(tmp_path / "d", model="m", prompt_token_ids=[4, 5, 6, 7, 8]) as w:
        w.add_input_ids([4, 5, 6, 7, 8])
        w.add_embed(hidden[0])
        w.add_hidden(0, hidden[1])
        w.add_logits(hidden[2])
        w.add("state.k", np.arange(6, dtype=np.int32).reshape(2, 3), "state", position_axis=None)
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    shardgate.validate(manifest, "golden-dump")
    src = shardgate.GoldenSource(str(tmp_path / "d"))
    entries = {e["name"]: e for e in src.entries}
    assert entries["input_ids"]["kind"] == "input" and entries["input_ids"]["dtype"] == "int32"
    assert entries["input_ids"]["shape"] == [1, 5] and entries["input_ids"]["position_axis"] == 1
    assert entries["embed"]["layer"] == -1 and entries["hidden.0"]["layer"] == 0
    assert entries["logits"]["kind"] == "logits" and entries["logits"]["dtype"] == "fp16"
    assert entries["state.k"]["position_axis"] is None and entries["state.k"]["layer"] is None
    # fp16 by default: the stored values are the fp16 rounding of the float32 input.
    np.testing.assert_array_equal(src.load("hidden.0"), hidden[1].astype(np.float16))
    np.testing.assert_array_equal(src.load("state.k"), np.arange(6).reshape(2, 3))
    src.verify_all()


def test_fp32_dump_and_torch_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    t = torch.randn(1, 4, 8, dtype=torch.bfloat16)
    with shardgate.GoldenDumpWriter(tmp_path, model="m", dtype="fp32") as w:
        w.add_hidden(2, t)
    got = shardgate.GoldenSource(str(tmp_path)).load("hidden.2")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, t.float().numpy())


def test_refusals(tmp_path):
    w = shardgate.GoldenDumpWriter(tmp_path, model="m")
    with pytest.raises(shardgate.Error, match="position_axis 3 is outside rank 3"):
        w.add("x", np.zeros((1, 2, 3)), "hidden", position_axis=3)
    w.add_hidden(0, np.zeros((1, 2, 3)))
    with pytest.raises(shardgate.Error, match="already added"):
        w.add_hidden(0, np.zeros((1, 2, 3)))
    with pytest.raises(shardgate.Error, match="no golden dump spelling"):
        w.add("c", np.zeros(3, dtype=np.complex64), "output")
    w.finish()
    # A file edited after the dump was written is refused by the library's reader.
    np.save(tmp_path / "hidden_0.npy", np.ones((1, 2, 3), np.float16))
    with pytest.raises(shardgate.Error, match="sha256"):
        shardgate.GoldenSource(str(tmp_path)).verify_all()


def test_manifest_violating_the_schema_is_refused(tmp_path):
    w = shardgate.GoldenDumpWriter(tmp_path, model="m")
    w.add_hidden(0, np.zeros((1, 2, 3)))
    w.entries[0]["dtype"] = "float16"  # not a manifest spelling
    with pytest.raises(shardgate.Error, match=r"tensors\[0\]\.dtype"):
        w.finish()
    assert not (tmp_path / "manifest.json").exists()
