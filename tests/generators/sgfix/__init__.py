"""Generator of the LLM-style Core ML test shards, their numpy oracles and the sample chain.

Entry point: tests/generators/generate_fixtures.py. Every module here has one job:
config (model sizes), weights (seeded weights), reference (numpy forward passes),
shards (MIL builder programs), compress (coremltools compression and numpy decoding),
package (saving .mlpackage files reproducibly), npyio (deterministic .npy + sha256),
llm_fixtures (tests/data/fixtures/llm), sample_chain (goldens/sample), full (benchmark shards).
"""
