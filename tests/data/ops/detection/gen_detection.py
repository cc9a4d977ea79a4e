"""Oracle cases for non_maximum_suppression (coremltools 9.0 iOS15/iOS17 tensor_operation.py).
The reference follows coremltools' own reference (tests/iOS14/test_tensor_operation.py
_ref_non_maximum_suppression): an IoU matrix of (center, size) boxes, greedy selection in
descending best-class score above score_threshold, per-class runs merged in score order, the
best box alone when nothing survives, padding 0 / index -1. Scores are distinct (no ties).
Run: /opt/ctvenv/bin/python gen_detection.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng


def iou_matrix(b):
    cx, cy, w, h = (b[:, i:i + 1] for i in range(4))
    x0, x1, y0, y1 = cx - w / 2, cx + w / 2, cy - h / 2, cy + h / 2
    iw = np.maximum(0, np.minimum(x1, x1.T) - np.maximum(x0, x0.T))
    ih = np.maximum(0, np.minimum(y1, y1.T) - np.maximum(y0, y0.T))
    inter = iw * ih
    union = w * h + (w * h).T - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0)


def nms(boxes, scores, iou_t, score_t, max_boxes, per_class):
    n, B, K = scores.shape
    ob, os_, oi, oc = np.zeros((n, max_boxes, 4)), np.zeros((n, max_boxes, K)), -np.ones((n, max_boxes)), np.zeros(n)
    for b in range(n):
        best = scores[b].max(-1)
        cls = scores[b].argmax(-1)
        m = iou_matrix(boxes[b].astype(np.float64))
        order = np.argsort(-best, kind="stable")
        keep = []
        for i in order:
            if not best[i] > score_t:
                continue
            if any(m[i, j] > iou_t and (not per_class or cls[i] == cls[j]) for j in keep):
                continue
            keep.append(i)
        if not keep:
            keep = [order[0]]
        keep = keep[:max_boxes]
        k = len(keep)
        ob[b, :k], os_[b, :k], oi[b, :k], oc[b] = boxes[b][keep], scores[b][keep], keep, k
    return ob, os_, oi, oc


def scene(n, B, K):
    centers = rng.uniform(0, 10, (n, B, 2))
    # Clusters of overlapping boxes: every other box sits near the previous one.
    centers[:, 1::2] = centers[:, 0:-1:2] + rng.uniform(-0.5, 0.5, centers[:, 1::2].shape)
    sizes = rng.uniform(1, 3, (n, B, 2))
    boxes = np.concatenate([centers, sizes], -1).astype(np.float32)
    scores = rng.permutation(n * B * K).reshape(n, B, K).astype(np.float32) / (n * B * K)
    return boxes, scores


for cid, (n, B, K), iou_t, score_t, mb, pc in (("basic", (1, 8, 1), 0.3, 0.0, 5, None),
                                                ("multi_class", (2, 10, 3), 0.2, 0.1, 6, False),
                                                ("per_class", (2, 10, 3), 0.2, 0.1, 6, True),
                                                ("pad_to_max", (1, 4, 2), 0.9, 0.0, 8, None),
                                                ("nothing_above_threshold", (1, 5, 2), 0.5, 2.0, 3, None),
                                                ("truncate", (1, 12, 1), 1.0, -1.0, 4, False)):
    boxes, scores = scene(n, B, K)
    ob, os_, oi, oc = nms(boxes, scores, iou_t, score_t, mb, bool(pc))
    inputs = {"boxes": arr(boxes, "fp32"), "scores": arr(scores, "fp32"), "iou_threshold": lit(iou_t, "fp32"),
              "score_threshold": lit(score_t, "fp32"), "max_boxes": lit(mb, "int32")}
    if pc is not None:
        inputs["per_class_suppression"] = lit(pc, "bool")
    c.add(f"nms_ios15_{cid}", "non_maximum_suppression", inputs,
          [out(ob, "fp32"), out(os_, "fp32"), out(oi, "int32"), out(oc, "int32")], precision="fp32", opset="ios16")
    if score_t <= 0:  # iOS17: no score threshold, [n, 4, B] / [n, K, B] layout, no count output
        ob7, os7, oi7, _ = nms(boxes, scores, iou_t, -np.inf, mb, bool(pc))
        inputs7 = {"boxes": arr(boxes.transpose(0, 2, 1), "fp32"), "scores": arr(scores.transpose(0, 2, 1), "fp32"),
                   "iou_threshold": lit(iou_t, "fp32"), "max_boxes": lit(mb, "int32")}
        if pc is not None:
            inputs7["per_class_suppression"] = lit(pc, "bool")
        c.add(f"nms_ios17_{cid}", "non_maximum_suppression", inputs7,
              [out(ob7.transpose(0, 2, 1), "fp32"), out(os7.transpose(0, 2, 1), "fp32"), out(oi7, "int32")],
              precision="fp32", opset="ios17")
boxes, scores = scene(1, 6, 2)
ob, os_, oi, oc = nms(boxes, scores, 0.4, 0.2, 4, False)
c.add("nms_fp16", "non_maximum_suppression",
      {"boxes": arr(boxes, "fp16"), "scores": arr(scores, "fp16"), "iou_threshold": lit(0.4, "fp16"),
       "score_threshold": lit(0.2, "fp16"), "max_boxes": lit(4, "int32")},
      [out(nms(boxes.astype(np.float16).astype(np.float64), scores.astype(np.float16).astype(np.float64),
               np.float16(0.4), np.float16(0.2), 4, False)[k], d) for k, d in enumerate(["fp16", "fp16", "int32", "int32"])],
      opset="ios16", atol=1e-3, rtol=1e-3)
c.error("nms_bad_boxes", "non_maximum_suppression",
        {"boxes": arr(np.zeros((1, 3, 5), np.float32), "fp32"), "scores": arr(np.zeros((1, 3, 1), np.float32), "fp32"),
         "iou_threshold": lit(0.5, "fp32"), "score_threshold": lit(0.0, "fp32"), "max_boxes": lit(2, "int32")},
        ["fp32", "fp32", "int32", "int32"], contains="boxes", opset="ios16")
c.error("nms_zero_max_boxes", "non_maximum_suppression",
        {"boxes": arr(np.zeros((1, 4, 3), np.float32), "fp32"), "scores": arr(np.zeros((1, 1, 3), np.float32), "fp32"),
         "iou_threshold": lit(0.5, "fp32"), "max_boxes": lit(0, "int32")}, ["fp32", "fp32", "int32"], contains="max_boxes",
        opset="ios17")
c.write()
