#!/usr/bin/env python3
"""Regenerates the LLM-style Core ML fixtures of shardgate (see README.md next to this file).

  generate_fixtures.py                 # tests/data/fixtures/llm + goldens/sample (committed)
  generate_fixtures.py --only llm      # just one of them (llm | sample | advised)
  generate_fixtures.py --only advised  # the INT8 sample re-converted as goldens/sample/advice_int8.json says
  generate_fixtures.py --full OUTDIR   # benchmark-size shards, never committed
"""
import argparse
import dataclasses
import os
import sys
import time

os.environ.setdefault("TQDM_DISABLE", "1")  # coremltools' pass progress bars

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from sgfix import config, full, llm_fixtures, sample_chain  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["llm", "sample", "advised"])
    ap.add_argument("--full", metavar="OUTDIR", help="write benchmark-size shards to OUTDIR")
    ap.add_argument("--full-variants", default="fp16,lut4,int4blk",
                    help="comma list of fp16, int8 (per tensor), int8pc (per channel), lut4, int4blk")
    ap.add_argument("--full-seq", type=int, default=config.FULL.seq,
                    help="tokens of the benchmark shards' input (many-token GEMM benchmarks)")
    args = ap.parse_args()
    t0 = time.time()
    if args.full:
        cfg = dataclasses.replace(config.FULL, seq=args.full_seq)
        full.generate(cfg, args.full, args.full_variants.split(","))
    else:
        if args.only in (None, "llm"):
            print("== tests/data/fixtures/llm")
            llm_fixtures.generate(config.SMALL, os.path.join(REPO, "tests/data/fixtures/llm"))
        if args.only in (None, "sample"):
            print("== goldens/sample")
            sample_chain.generate(config.SMALL, os.path.join(REPO, "goldens/sample"))
        if args.only in (None, "sample", "advised"):
            print("== goldens/sample (INT8 as advised)")
            sample_chain.generate_advised(config.SMALL, os.path.join(REPO, "goldens/sample"))
    print(f"done in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
