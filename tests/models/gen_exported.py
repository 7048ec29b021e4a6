#!/usr/bin/python3
"""Write small models laid out the way exporters write them, and their suite manifest.

Usage:  gen_exported.py OUTDIR

Real pretrained models are the measure of the compiler (tests/models/zoo.tsv), but public
packages do not cover every construct exporters emit. Each model here reproduces one such
construct at a small size, with seeded weights, so the model suite (check_suite.py) can
compare Ember with ONNX Runtime on it. OUTDIR/manifest.tsv lists them in check_suite.py's
format: name, emberc arguments, tolerance, expected result, note.

Kinds:
  edge_pool_*     conv -> pool where an output extent is 1 (the blocked pool's loop of one
                  trip once left its variable unbound: "unbound variable ox")
  if_shape        PyTorch's Shape -> Gather -> Equal -> If on a dynamic input: --input-shape
                  makes the condition a constant and the If folds to one branch
  if_bound_*      an If on a sample-rate input, as silero-vad has, with a nested If inside
                  a branch and branches that read outer values; --bind sr=... folds both
  opset18_ir9,    what newer exporters write (IR 9-10, opsets 18-21, which Debian's libonnx
  opset21_ir10    does not know): Reduce* axes as an input, Split num_outputs, Pad axes,
                  Resize axes / keep_aspect_ratio_policy, GroupNormalization, LayerNormalization
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


class Model(object):
    """One model under construction: nodes, seeded initialisers, manifest fields."""

    def __init__(self, name, seed, note, emberc_args="-", tolerance="-", expect="ok",
                 opset=OPSET, ir_version=None):
        self.name = name
        self.rs = np.random.RandomState(seed)
        self.note = note
        self.emberc_args = emberc_args
        self.tolerance = tolerance
        self.expect = expect
        self.opset = opset
        self.ir_version = ir_version or (7 if opset <= 13 else 8)
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []

    def input(self, name, shape, elem=TensorProto.FLOAT):
        self.inputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def output(self, name, elem=TensorProto.FLOAT, rank=None):
        shape = None if rank is None else ["d%d" % i for i in range(rank)]
        self.outputs.append(helper.make_tensor_value_info(name, elem, shape))

    def weight(self, name, shape, scale=0.5):
        self.inits.append(numpy_helper.from_array(
            (self.rs.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def weight_values(self, name, values):
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=np.float32), name))
        return name

    def ints(self, name, values):
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def node(self, op, inputs, outputs, **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, name="%s_%d" % (op, len(
            self.nodes)), **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def save(self, outdir):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="ember gen_exported.py")
        model.ir_version = self.ir_version
        if self.ir_version <= 8 and self.opset <= onnx.defs.onnx_opset_version():
            onnx.checker.check_model(model)  # an older python3-onnx cannot judge newer models
        onnx.save(model, os.path.join(outdir, self.name + ".onnx"))
        return "\t".join([self.name, self.emberc_args, self.tolerance, self.expect, self.note])


def edge_pools():
    """Conv (which puts the data in the blocked layout) then a pool whose output is one pixel
    wide, one high, or both, for MaxPool and AveragePool."""
    models = []
    for i, (op, c, h, w) in enumerate([("MaxPool", 96, 6, 2), ("MaxPool", 16, 2, 6),
                                       ("MaxPool", 32, 3, 3), ("AveragePool", 96, 6, 2),
                                       ("AveragePool", 16, 1, 2)]):
        m = Model("edge_pool_%s_%dx%dx%d" % (op.lower(), c, h, w), 100 + i,
                  "%s 2x2 stride 2 after a conv on a %dx%dx%d plane" % (op, c, h, w))
        x = m.input("x", [1, 8, h, w])
        y = m.node("Conv", [x, m.weight("w", [c, 8, 3, 3]), m.weight("b", [c])], ["conv"],
                   pads=[1, 1, 1, 1])
        y = m.node("Relu", [y], ["relu"])
        kernel = [min(2, h), 2]
        m.node(op, [y], ["y"], kernel_shape=kernel, strides=kernel)
        m.output("y", rank=4)
        models.append(m)
    return models


def branch(name, nodes, outputs, inits=()):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(o, TensorProto.FLOAT,
                                                                             None)
                                               for o in outputs], list(inits))


def if_on_shape():
    m = Model("if_shape", 200, "Shape -> Gather -> Equal -> If (PyTorch export), folded by "
              "--input-shape", emberc_args="--input-shape x=1,4,16")
    x = m.input("x", [1, 4, "T"])
    shape = m.node("Shape", [x], ["shape"])
    t = m.node("Gather", [shape, m.ints("two", 2)], ["t"], axis=0)
    cond = m.node("Equal", [t, m.ints("sixteen", 16)], ["is16"])
    then_graph = branch("then", [helper.make_node("Relu", ["x"], ["r"], name="then_relu"),
                                 helper.make_node("Add", ["r", "x"], ["then_out"],
                                                  name="then_add")], ["then_out"])
    else_graph = branch("else", [helper.make_node("Neg", ["x"], ["else_out"], name="else_neg")],
                        ["else_out"])
    m.node("If", [cond], ["y"], then_branch=then_graph, else_branch=else_graph)
    m.output("y", rank=3)
    return m


def if_on_bound_rate(rate):
    m = Model("if_bound_%d" % rate, 300, "If on a sample-rate input (silero-vad's form) with a "
              "nested If; --bind sr=%d" % rate, emberc_args="--bind sr=%d" % rate)
    x = m.input("x", [1, 8])
    m.input("sr", [], TensorProto.INT64)
    w16, w8 = m.weight("w16", [8, 4]), m.weight("w8", [8, 4])
    cond = m.node("Equal", ["sr", m.ints("rate16k", 16000)], ["is16k"])
    # The nested If's condition is a shape test again, inside the branch.
    inner_then = branch("inner_then", [helper.make_node("Sigmoid", ["mm16"], ["inner_out"],
                                                        name="inner_sigmoid")], ["inner_out"])
    inner_else = branch("inner_else", [helper.make_node("Tanh", ["mm16"], ["inner_out2"],
                                                        name="inner_tanh")], ["inner_out2"])
    then_graph = branch("then", [
        helper.make_node("MatMul", [x, w16], ["mm16"], name="then_matmul"),
        helper.make_node("Shape", [x], ["xs"], name="then_shape"),
        helper.make_node("Constant", [], ["eight"], name="then_eight",
                         value=numpy_helper.from_array(np.array([1, 8], dtype=np.int64))),
        helper.make_node("Equal", ["xs", "eight"], ["same"], name="then_equal"),
        helper.make_node("Cast", ["same"], ["same_i"], name="then_cast", to=TensorProto.INT64),
        helper.make_node("ReduceMin", ["same_i"], ["all_same"], name="then_all", keepdims=0),
        helper.make_node("Cast", ["all_same"], ["all_b"], name="then_cast_b",
                         to=TensorProto.BOOL),
        helper.make_node("If", ["all_b"], ["then_out"], name="inner_if",
                         then_branch=inner_then, else_branch=inner_else)], ["then_out"])
    else_graph = branch("else", [helper.make_node("MatMul", [x, w8], ["mm8"], name="else_matmul"),
                                 helper.make_node("Relu", ["mm8"], ["else_out"],
                                                  name="else_relu")], ["else_out"])
    m.node("If", [cond], ["y"], then_branch=then_graph, else_branch=else_graph)
    m.output("y", rank=2)
    return m


def newer_opset(opset, ir_version):
    """The ops whose signature changed after opset 17, as a PyTorch / tf2onnx export at `opset`
    writes them: every axes list is an int64 initializer input, not an attribute."""
    m = Model("opset%d_ir%d" % (opset, ir_version), 2000 + opset,
              "opset %d, IR %d: Reduce axes input, Split num_outputs, Pad/Resize axes, "
              "GroupNormalization, LayerNormalization" % (opset, ir_version),
              opset=opset, ir_version=ir_version)
    x = m.input("x", [1, 8, 6, 6])
    mean = m.node("ReduceMean", [x, m.ints("hw", [2, 3])], ["mean"], keepdims=1)
    peak = m.node("ReduceMax", [x, m.ints("c_axis", [-3])], ["peak"], keepdims=0)
    centred = m.node("Sub", [x, mean], ["centred"])
    parts = m.node("Split", [centred], ["s0", "s1", "s2"], axis=1, num_outputs=3)  # 3, 3, 2
    pad_mode = "constant" if opset < 21 else "reflect"
    pad_in = [parts[0], m.ints("pads", [1, 2, 2, 1])]
    pad_in.append(m.weight("pad_value", [], 1.0) if pad_mode == "constant" else "")
    m.node("Pad", pad_in + [m.ints("pad_axes", [-1, 2])], ["padded"], mode=pad_mode)
    if opset < 21:
        # 12 x 9 asked, one scale kept: 1.5 -> 9 x 9
        m.node("Resize", [parts[1], "", "", m.ints("sizes", [12, 9])], ["resized"],
               axes=[2, 3], keep_aspect_ratio_policy="not_larger", mode="linear")
    else:
        m.node("Resize", [parts[1], "", m.weight_values("scales", [2.0, 0.5])], ["resized"],
               axes=[3, 2], mode="nearest")
        # opset 19's half_pixel_symmetric, where 6 * 0.7 rounds down to 4
        m.node("Resize", [parts[1], "", m.weight_values("scales_sym", [0.7])], ["resized_sym"],
               axes=[2], mode="linear", coordinate_transformation_mode="half_pixel_symmetric")
        m.output("resized_sym", rank=4)
        # opset 19's wrap: circular padding, and a negative pad that crops
        m.node("Pad", [parts[2], m.ints("wrap_pads", [2, 0, 3, -1]), "", m.ints("hw2", [2, 3])],
               ["wrapped"], mode="wrap")
        m.output("wrapped", rank=4)
    groups = 4 if opset < 21 else 8  # opset 18 scales each group, 21 each channel
    gn = m.node("GroupNormalization", [x, m.weight("gn_scale", [groups]),
                                       m.weight("gn_bias", [groups])], ["gn"],
                num_groups=4, epsilon=1e-5)
    m.node("LayerNormalization", [gn, m.weight("ln_scale", [6]), m.weight("ln_bias", [6])],
           ["ln"], axis=-1, epsilon=1e-5)
    for name in ["peak", "s2", "padded", "resized", "ln"]:
        m.output(name, rank=3 if name == "peak" else 4)
    return m


def newer_opsets():
    return [newer_opset(18, 9), newer_opset(21, 10)]


def all_models():
    return edge_pools() + [if_on_shape(), if_on_bound_rate(16000),
                           if_on_bound_rate(8000)] + newer_opsets()


def main(argv):
    if len(argv) != 1:
        sys.exit(__doc__)
    outdir = argv[0]
    os.makedirs(outdir, exist_ok=True)
    lines = [m.save(outdir) for m in all_models()]
    with open(os.path.join(outdir, "manifest.tsv"), "w") as f:
        f.write("# Written by tests/models/gen_exported.py: name, emberc arguments, tolerance, "
                "expected result, note\n")
        f.write("\n".join(lines) + "\n")
    print("gen_exported.py: %d models in %s" % (len(lines), outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
