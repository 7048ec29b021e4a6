"""Tests of bench/fma_share.py's loop finding: which code loop is a kernel's hot loop.

Run:  /usr/bin/python3 -m pytest tests/models/test_fma_share.py

Hand-written instruction lists stand in for llvm-objdump's; nothing is compiled.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fma_share  # noqa: E402

FMA = fma_share.TARGETS["aarch64"][1]


def listing(*lines):
    """[(address, mnemonic, operands)], one instruction every 4 bytes from 0."""
    return [(4 * k, m, ops) for k, (m, ops) in enumerate(lines)]


# A reduction loop (two fmla and a load per iteration) nested in a loop whose own blocks hold an
# epilogue with two fmla of its own (x * a + b, as a hard-sigmoid compiles), as a conv's tile
# loop holds its reduction.
NEST = listing(
    ("mov", "w8, #0x3"),              # 0x00
    ("fmla", "v0.4s, v1.4s, v2.4s"),  # 0x04 outer header: the epilogue
    ("fmla", "v3.4s, v1.4s, v2.4s"),  # 0x08
    ("ldr", "q4, [x1]"),              # 0x0c inner header
    ("fmla", "v5.4s, v4.4s, v6.4s"),  # 0x10
    ("fmla", "v7.4s, v4.4s, v6.4s"),  # 0x14
    ("subs", "x9, x9, #0x1"),         # 0x18
    ("b.ne", "0xc <f+0xc>"),          # 0x1c back to the inner header
    ("str", "q0, [x2]"),              # 0x20
    ("subs", "x8, x8, #0x1"),         # 0x24
    ("b.ne", "0x4 <f+0x4>"),          # 0x28 back to the outer header
    ("ret", ""),                      # 0x2c
)


def test_each_loop_counts_its_own_blocks():
    found = sorted((count, size, len(blocks)) for count, size, blocks in
                   fma_share.loop_fmas(NEST, FMA))
    # The inner loop: ldr, 2 fmla, subs, b.ne; the outer's own: 2 fmla, str, subs, b.ne.
    assert [(c, s) for c, s, _ in found] == [(2, 5), (2, 5)]
    inner, outer = sorted(fma_share.loops(NEST), key=lambda l: len(l[1]))
    assert inner[1] < outer[1]
    assert [m for _, m, _ in inner[0]] == ["ldr", "fmla", "fmla", "subs", "b.ne"]


def test_a_loop_nested_in_another_with_as_many_fmas_is_the_hot_one():
    outer = ("f_compute_0", 2, 40, frozenset({1, 2, 3, 4}))
    inner = ("f_compute_0", 2, 5, frozenset({2, 3}))
    assert fma_share.hot_loop_code([outer, inner], 2) == (2, 5, True)
    # Siblings, or loops of different functions, do not run one inside the other: the least
    # dense of them stands.
    sibling = ("f_compute_0", 2, 9, frozenset({6}))
    assert fma_share.hot_loop_code([inner, sibling], 2) == (2, 9, True)
    other = ("f_compute_1", 2, 40, frozenset({1, 2, 3, 4}))
    assert fma_share.hot_loop_code([other, inner], 2) == (2, 40, True)
    # An unrolled copy (twice the FMAs) fits; nothing fitting: the most FMAs, unmatched.
    assert fma_share.hot_loop_code([("f", 4, 7, frozenset({1}))], 2) == (4, 7, True)
    assert fma_share.hot_loop_code([outer, ("f", 3, 8, frozenset({9}))], 4) == (3, 8, False)


# Loop IR of a kernel with a hot 1x1 reduction and, beside it, a loop of depthwise tiles, as
# expand_depthwise.cc writes them.
FUSED_LOOP_IR = """\
func fused_conv_clip_conv_clip(x: float32[1,1,8,8,16])
  parallel for t in [0, 4):
    for r in [0, 8):
      for et in [0, 2):
        for icb in [0, 16):
          acce0_0[0] = (<buffer load> + (<buffer load> * <buffer load>))
          acce0_1[0] = (<buffer load> + (<buffer load> * <buffer load>))
      for dt in [0, 2):
        accdm0[0] = (<buffer load> + (<buffer load> * <buffer load>))
        accdm0[0] = (<buffer load> + (<buffer load> * <buffer load>))
        accdm0[0] = (<buffer load> + (<buffer load> * <buffer load>))
"""


def test_a_loop_over_a_named_variable_can_be_asked_for(tmp_path):
    path = tmp_path / "kernels.loop.txt"
    path.write_text(FUSED_LOOP_IR)
    # The 1x1 reduction runs 2 multiply-adds 4 x 8 x 2 x 16 times; the depthwise tiles 3, 4 x 8 x 2.
    assert fma_share.hot_loops(str(path)) == {"fused_conv_clip_conv_clip": 2}
    assert fma_share.hot_loops(str(path), var="dt") == {"fused_conv_clip_conv_clip": 3}
    assert fma_share.hot_loops(str(path), var="nothing") == {}
