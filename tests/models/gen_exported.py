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
  if_data_*       Ifs decided by data (a wake-word verifier behind a score threshold, taken and
                  skipped; nested Ifs reading values of both scopes): one kernel runs the
                  taken branch
  qoperator_*     ONNX Runtime's QOperator int8 layout, com.microsoft ops included
  qdq_*           ONNX Runtime's default QDQ layout: Quantize/DequantizeLinear around float Convs
  loop_*          a Loop whose trip count is a constant or a shape, carrying a state and
                  scanning it: unrolled
  scan_*          Scan as keras2onnx wrote RNNs (two states, scan axes and directions, outer
                  weights) and opset 8's batched Scan with sequence_lens: unrolled
  tf_computed_*   tf2onnx's NHWC input and attributes computed from shapes (Pad's pads through
                  Shape -> Slice -> Mod -> Split -> Clip -> Concat, Reshape's shape through
                  Gather/Unsqueeze/Concat, a mask through Size/Range/Equal/Not): all must fold
  lstm_*, gru_*,  recurrent layers with the attributes exporters set: both directions,
  rnn_*           sequence_lens, initial states, peepholes, clip, input_forget,
                  linear_before_reset, non-default activations; every output compared
  opset18_ir9,    what newer exporters write (IR 9-10, opsets 18-21, which Debian's libonnx
  opset21_ir10    does not know): Reduce* axes as an input, Split num_outputs, Pad axes,
                  Resize axes / keep_aspect_ratio_policy, GroupNormalization, LayerNormalization
  encoder_opset*  a transformer encoder layer as exporters write it at opsets 22-26 (IR 10-13):
                  Shape-computed head reshapes, masked attention, Gelu, LayerNormalization or
                  opset 23's RMSNormalization, opset 24's Swish
  rotary_opset23  opset 23's RotaryEmbedding as exporters write it for a decoder's queries and
                  keys: 4-D heads with position_ids, a 3-D hidden state (num_heads) rotated in
                  interleaved pairs over part of each head, caches given per token
  attention_*     opset 23-24's Attention as exporters write a decoder step: 4-D heads after
                  RotaryEmbedding with a past key/value cache, causal, grouped-query heads, the
                  present cache out; 3-D packed heads with a padding mask (a row masked whole),
                  causal with the mask (24), softcap and the scores out; a long causal one
                  (8 heads of 512 tokens) whose batched products take the dense tiles
  kv_cache_*      opset 24's static KV cache step: TensorScatter at per-batch write indices,
                  Attention with nonpad_kv_seqlen and is_causal (ending at each batch's last key)
  quantizers_*    opset 21's quantizer forms: output_dtype without a zero point, blocked
                  scales and zero points (block_size), a weight dequantized by blocks for a
                  MatMul, float16 scales (the output in float16)
  convt_*         ConvTranspose (compiled as a Conv over its phases and a PhaseInterleave):
                  DBNet's head (2x2 stride 2, bias Add, BatchNormalization, Relu, Sigmoid),
                  kernels longer and shorter than the stride, pads, output_padding, unequal
                  strides, groups, depthwise, dilations, stride 1, auto_pad, output_shape, and an
                  interleave read twice (nothing may move past it)
  blocked_se_*    what PP-OCR's backbone and neck do between convs, which should all stay in
                  the blocked layout: per-channel Mul/Add constants, a squeeze-excite Mul by a
                  computed [1,C,1,1], nearest Resize, channel Concat, HardSigmoid, HardSwish
  dilated_*       dilated convs as segmentation networks write them: IS-Net's RSU-4F (3x3
                  dilated 2/4/8, pads = dilation), DeepLab's dilated depthwise convs and ASPP
                  (a window wider than the plane), a strided dilated conv, and the U^2-Net
                  upsampling (a bilinear Resize given by sizes)
  attention_*     a decoder's attention as exporters write it with Einsum (scores and context),
                  a Trilu causal mask, CumSum position ids and TopK over the scores; GPT-2's
                  (masked_fill: a constant triangle sliced to the sequence's length, a Where)
  gather_scatter  GatherElements, GatherND (batch_dims 0 and 1), ScatterND and ScatterElements
                  with reductions, OneHot of an ArgMax, EyeLike, int64 CumSum of token ids
  grid_sample     GridSample in every mode, padding mode and align_corners, the grid reaching
                  past the image (deformable attention and warping layers)
  spatial_transformer_opset20  AffineGrid from a localization net, GridSample, CenterCropPad,
                  Col2Im of a conv's columns (nn.Fold), opset 18's bitwise ops on int64
  roi_heads_opset16  a detector's box head: RoiAlign (avg and max, both coordinate modes) of
                  a conv feature map for boxes the graph computes, some past the image
  deformable_conv_opset19  DCN v2 (offsets and mask from convs, groups, offset groups, bias)
                  and a strided, dilated DCN v1: DeformConv as detectors export it; a DCN v2
                  layer alone (16 channels of 32x32), where the sampling is the cost
  einsum_forms    Einsum with three operands, a broadcasting ellipsis, implicit outputs, sums
  mvn_window      MeanVarianceNormalization and a Hann window over a signal (opset 17)
  lp_norms        LpNormalization (p 1, 2: embedding heads), GlobalLpPool and LpPool (p 2, 3)
  unpool_reverse  SegNet's MaxPool indices into MaxUnpool, and
                  ReverseSequence with lengths given at run time (tf2onnx's bidirectional RNNs)
  spectral        STFT with a folded Hann window and with a window given at run time, DFT real
                  onesided with dft_length and complex inverse (torch.stft and torch.fft exports)
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
        domains = {n.domain for n in self.nodes if n.domain}
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)] +
                                  [helper.make_opsetid(d, 1) for d in sorted(domains)],
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


def if_on_data(name, seed, threshold):
    """openWakeWord's verifier form: a score from a small head, GreaterOrEqual -> Cast -> If whose
    then_branch is a 3-Gemm verifier and whose else_branch passes the score through (an outer
    value). The condition depends on data, so the If stays and only the taken branch runs."""
    taken = "taken" if threshold <= 0 else "skipped"
    m = Model(name, seed, "If on a score threshold (wake-word verifier), branch %s" % taken)
    x = m.input("x", [1, 16])
    score = m.node("Gemm", [x, m.weight("head_w", [16, 1]), m.weight("head_b", [1])], ["logit"])
    score = m.node("Sigmoid", [score], ["score"])
    best = m.node("ReduceMax", [score], ["best"], keepdims=0)
    passed = m.node("GreaterOrEqual", [best, m.weight_values("threshold", threshold)],
                    ["passed"])
    cond = m.node("Cast", [passed], ["verify"], to=TensorProto.BOOL)
    verifier = [m.weight("v1", [16, 32]), m.weight("c1", [32]), m.weight("v2", [32, 32]),
                m.weight("c2", [32]), m.weight("v3", [32, 1]), m.weight("c3", [1])]
    inits, m.inits = m.inits[-6:], m.inits[:-6]  # the verifier's weights live in its branch
    then_graph = branch("verify", [
        helper.make_node("Gemm", ["x", "v1", "c1"], ["h1"], name="verify_gemm1"),
        helper.make_node("Relu", ["h1"], ["r1"], name="verify_relu1"),
        helper.make_node("Gemm", ["r1", "v2", "c2"], ["h2"], name="verify_gemm2"),
        helper.make_node("Relu", ["h2"], ["r2"], name="verify_relu2"),
        helper.make_node("Gemm", ["r2", "v3", "c3"], ["h3"], name="verify_gemm3"),
        helper.make_node("Sigmoid", ["h3"], ["verified"], name="verify_sigmoid")],
        ["verified"], inits)
    assert [t.name for t in inits] == verifier
    else_graph = branch("pass", [helper.make_node("Identity", ["score"], ["kept"],
                                                  name="pass_identity")], ["kept"])
    m.node("If", [cond], ["y"], then_branch=then_graph, else_branch=else_graph)
    m.output("y", rank=2)
    return m


def if_on_data_nested():
    """Nested Ifs both decided by data: the inner one's condition is computed inside the outer
    then_branch from an outer value, and its branches read values of both scopes."""
    m = Model("if_data_nested", 410, "If on data with an If on data inside a branch")
    x = m.input("x", [2, 8])
    mm = m.node("MatMul", [x, m.weight("w", [8, 8])], ["mm"])
    total = m.node("ReduceSum", [x], ["total"], keepdims=0)
    cond = m.node("Greater", [total, m.weight_values("zero", 0.0)], ["positive"])
    inner_then = branch("inner_then", [helper.make_node("Add", ["mm", "x"], ["sum_out"],
                                                        name="inner_add")], ["sum_out"])
    inner_else = branch("inner_else", [helper.make_node("Mul", ["scaled", "x"], ["mul_out"],
                                                        name="inner_mul")], ["mul_out"])
    then_graph = branch("then", [
        helper.make_node("Mul", ["mm", "x"], ["scaled"], name="then_scale"),
        helper.make_node("ReduceSum", ["scaled"], ["energy"], name="then_energy", keepdims=0),
        helper.make_node("Less", ["energy", "zero"], ["low"], name="then_less"),
        helper.make_node("If", ["low"], ["inner"], name="inner_if", then_branch=inner_then,
                         else_branch=inner_else),
        helper.make_node("Relu", ["inner"], ["then_out"], name="then_relu")], ["then_out"])
    else_graph = branch("else", [helper.make_node("Neg", ["mm"], ["else_out"],
                                                  name="else_neg")], ["else_out"])
    m.node("If", [cond], ["y"], then_branch=then_graph, else_branch=else_graph)
    m.output("y", rank=2)
    return m


def loop_with_constant_count(name, seed, count_from_shape):
    """A recurrence written as Loop (PyTorch's scripted for-loop, tf2onnx's while): the trip count
    is a constant or comes from a shape, the condition is a constant true, one value is carried
    and each iteration's state is a scan output. Unrolled at compile time."""
    args = "--input-shape seq=3,1,4" if count_from_shape else "-"
    m = Model(name, seed, "Loop with a %s trip count and a scan output" % (
        "shape-derived" if count_from_shape else "constant"), emberc_args=args)
    h0 = m.input("h0", [1, 4])
    if count_from_shape:
        seq = m.input("seq", ["T", 1, 4])
        shape = m.node("Shape", [seq], ["seq_shape"])
        count = m.node("Gather", [shape, m.ints("axis0", 0)], ["count"], axis=0)
        m.ints("axes0", [0])
    else:
        count = m.ints("count", 3)
    keep = m.node("Constant", [], ["keep"], value=numpy_helper.from_array(np.array(True)))
    w = m.weight("w", [4, 4])
    step = [helper.make_node("MatMul", ["h", w], ["hw"], name="step_matmul"),
            helper.make_node("Cast", ["i"], ["fi"], name="step_cast", to=TensorProto.FLOAT),
            helper.make_node("Add", ["hw", "fi"], ["pre"], name="step_add"),
            helper.make_node("Tanh", ["pre"], ["h_next"], name="step_tanh"),
            helper.make_node("Identity", ["c"], ["c_next"], name="step_cond"),
            helper.make_node("Identity", ["h_next"], ["h_scan"], name="step_scan")]
    if count_from_shape:  # each step also adds its slice of the sequence
        step[2:2] = [
            helper.make_node("Unsqueeze", ["i", "axes0"], ["i1"], name="step_index"),
            helper.make_node("Gather", ["seq", "i1"], ["x_t"], name="step_gather", axis=0),
            helper.make_node("Squeeze", ["x_t", "axes0"], ["x_s"], name="step_squeeze"),
            helper.make_node("Add", ["hw", "x_s"], ["hwx"], name="step_input")]
        step[6].input[0] = "hwx"
    body = helper.make_graph(step, "body", [
        helper.make_tensor_value_info("i", TensorProto.INT64, []),
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 4])], [
        helper.make_tensor_value_info("c_next", TensorProto.BOOL, []),
        helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, 4]),
        helper.make_tensor_value_info("h_scan", TensorProto.FLOAT, [1, 4])])
    m.node("Loop", [count, keep, h0], ["h_last", "h_all"], body=body)
    m.output("h_last", rank=2)
    m.output("h_all", rank=3)
    return m


def qoperator():
    """ONNX Runtime's QOperator layout (its quantizer's --quant_format QOperator): float inputs
    quantized at the edge, QLinearConv and the com.microsoft QLinearAdd / QLinearMul /
    QLinearSigmoid / QLinearGlobalAveragePool on uint8 tensors, dequantized at the end."""
    m = Model("qoperator_uint8", 430, "ORT's QOperator int8 ops (QLinearConv, com.microsoft "
              "QLinearAdd/Mul/Sigmoid/GlobalAveragePool); within one step of the coarsest scale",
              tolerance="atol=0.021")

    def scale(name, value, zero_point):
        m.inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name + "_s"))
        m.inits.append(numpy_helper.from_array(np.array(zero_point, dtype=np.uint8),
                                               name + "_z"))
        return [name + "_s", name + "_z"]

    def ms(op, inputs, output, **attrs):
        m.nodes.append(helper.make_node(op, inputs, [output], name="%s_%d" % (op, len(m.nodes)),
                                        domain="com.microsoft", **attrs))
        return output

    x, y = m.input("x", [1, 8, 4, 4]), m.input("y", [1, 8, 4, 4])
    qx = m.node("QuantizeLinear", [x] + scale("x", 0.01, 128), ["qx"])
    qy = m.node("QuantizeLinear", [y] + scale("y", 0.008, 125), ["qy"])
    m.inits.append(numpy_helper.from_array(m.rs.randint(0, 255, (8, 8, 3, 3)).astype(np.uint8),
                                           "w"))
    conv = m.node("QLinearConv", [qx, "x_s", "x_z", "w"] +
                  scale("w", 0.004, 127) + scale("conv", 0.05, 110), ["qconv"], pads=[1, 1, 1, 1])
    qa = ms("QLinearAdd", [conv, "conv_s", "conv_z", qy, "y_s", "y_z"] + scale("add", 0.02, 120),
            "qadd")
    qm = ms("QLinearMul", [qa, "add_s", "add_z", qx, "x_s", "x_z"] + scale("mul", 0.005, 100),
            "qmul")
    qs = ms("QLinearSigmoid", [qm, "mul_s", "mul_z"] + scale("sig", 1.0 / 256, 0), "qsig")
    qg = ms("QLinearGlobalAveragePool", [qs, "sig_s", "sig_z"] + scale("gap", 1.0 / 256, 0),
            "qgap", channels_last=0)
    m.node("DequantizeLinear", [qa, "add_s", "add_z"], ["added"])
    m.node("DequantizeLinear", [qg, "gap_s", "gap_z"], ["pooled"])
    m.output("added", rank=4)
    m.output("pooled", rank=4)
    return m


def qdq(depthwise=False, pool=False):
    """The QDQ layout ONNX Runtime's quantizer writes by default: float ops between
    QuantizeLinear / DequantizeLinear pairs, uint8 activations per tensor, int8 weights per
    output channel (symmetric), int32 biases at scale x_scale * w_scale. ORT runs the convs as
    integer QLinearConvs; Ember must too, to round the same way. With `depthwise`, a MobileNet
    block: a depthwise conv between the two (Ember runs the three channel-blocked). With `pool`,
    ResNet's stem: a MaxPool between the two, its pair at the scale and zero point of the one
    before it (as the quantizer writes it; Ember pools the bytes)."""
    if depthwise:
        m = Model("qdq_uint8_depthwise", 432, "ORT's default QDQ layout around a depthwise conv "
                  "between two convs (int8 data channel-blocked between them)",
                  tolerance="atol=1e-6")
    elif pool:
        m = Model("qdq_uint8_maxpool", 433, "ORT's default QDQ layout around a MaxPool between "
                  "two convs (the pool takes the bytes)", tolerance="atol=1e-6")
    else:
        m = Model("qdq_uint8", 431, "ORT's default QDQ layout (uint8 activations, per-channel "
                  "int8 weights, int32 biases): integer convs, exactly as ORT",
                  tolerance="atol=1e-6")

    def param(name, value, dtype):
        m.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def conv(x, x_s, x_z, cin, cout, y_s, y_z, relu, group=1):
        i = len(m.nodes)
        w = (m.rs.standard_normal((cout, cin // group, 3, 3)) * 0.2).astype(np.float32)
        # 7-bit weights, as ORT's quantizer writes with reduce_range: ORT's AVX2 kernel adds
        # pairs of u8 x s8 products in int16 with saturation, exact only for such weights.
        w_s = (np.abs(w).reshape(cout, -1).max(axis=1) / 63).astype(np.float32)
        wq = np.clip(np.round(w / w_s.reshape(-1, 1, 1, 1)), -63, 63).astype(np.int8)
        b_s = (np.float32(x_s) * w_s).astype(np.float32)
        bq = np.round(m.rs.standard_normal(cout) * 0.1 / b_s).astype(np.int32)
        dq = m.node("DequantizeLinear", [x, param("x%d_s" % i, x_s, np.float32),
                                         param("x%d_z" % i, x_z, np.uint8)], ["dq%d" % i])
        dw = m.node("DequantizeLinear", [param("w%d" % i, wq, np.int8),
                                         param("w%d_s" % i, w_s, np.float32),
                                         param("w%d_z" % i, np.zeros(cout), np.int8)],
                    ["dw%d" % i], axis=0)
        db = m.node("DequantizeLinear", [param("b%d" % i, bq, np.int32),
                                         param("b%d_s" % i, b_s, np.float32),
                                         param("b%d_z" % i, np.zeros(cout), np.int32)],
                    ["db%d" % i], axis=0)
        y = m.node("Conv", [dq, dw, db], ["conv%d" % i], pads=[1, 1, 1, 1], group=group)
        if relu:
            y = m.node("Relu", [y], ["relu%d" % i])
        return m.node("QuantizeLinear", [y, param("y%d_s" % i, y_s, np.float32),
                                         param("y%d_z" % i, y_z, np.uint8)], ["q%d" % i])

    x = m.input("x", [1, 16, 12, 12])
    q = m.node("QuantizeLinear", [x, param("in_s", 0.02, np.float32),
                                  param("in_z", 128, np.uint8)], ["qx"])
    q = conv(q, 0.02, 128, 16, 32, 0.03, 0, relu=True)
    if depthwise:
        q = conv(q, 0.03, 0, 32, 32, 0.03, 0, relu=True, group=32)
    if pool:
        d = m.node("DequantizeLinear", [q, param("pool_in_s", 0.03, np.float32),
                                        param("pool_in_z", 0, np.uint8)], ["pool_in"])
        p = m.node("MaxPool", [d], ["pooled"], kernel_shape=[3, 3], strides=[2, 2],
                   pads=[1, 1, 1, 1])
        q = m.node("QuantizeLinear", [p, param("pool_s", 0.03, np.float32),
                                      param("pool_z", 0, np.uint8)], ["qpool"])
    q = conv(q, 0.03, 0, 32, 16, 0.05, 128, relu=False)
    m.node("DequantizeLinear", [q, param("out_s", 0.05, np.float32),
                                param("out_z", 128, np.uint8)], ["y"])
    m.output("y", rank=4)
    return m


def scan_rnn():
    """A recurrence written as Scan, as keras2onnx and older tf2onnx wrote RNNs (opset 11): two
    states (the hidden state and a running sum), a batch-major sequence scanned along axis 1 and a
    mask scanned backwards, weights read from the outer graph, one scan output stacked along axis
    1 and one stacked backwards. Unrolled at compile time."""
    m = Model("scan_rnn", 430, "Scan: two states, input axes 1 and reversed, output axis 1 and "
              "reversed, weights from the outer graph", opset=11)
    h0, c0 = m.input("h0", [2, 4]), m.input("c0", [4])
    xs, ms = m.input("xs", [2, 5, 3]), m.input("ms", [5, 2])
    w, r, b = m.weight("w", [3, 4]), m.weight("r", [4, 4]), m.weight("b", [4], 0.3)

    def info(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    step = [helper.make_node("MatMul", ["x", w], ["xw"], name="step_xw"),
            helper.make_node("MatMul", ["h", r], ["hr"], name="step_hr"),
            helper.make_node("Add", ["xw", "hr"], ["pre"], name="step_add"),
            helper.make_node("Add", ["pre", b], ["pre_b"], name="step_bias"),
            helper.make_node("Tanh", ["pre_b"], ["h_new"], name="step_tanh"),
            helper.make_node("Unsqueeze", ["mask"], ["mask_col"], name="step_mask", axes=[1]),
            helper.make_node("Mul", ["h_new", "mask_col"], ["h_next"], name="step_masked"),
            helper.make_node("ReduceSum", ["h_next"], ["h_sum"], name="step_sum", axes=[0],
                             keepdims=0),
            helper.make_node("Add", ["c", "h_sum"], ["c_next"], name="step_running"),
            helper.make_node("Identity", ["h_next"], ["h_scan"], name="step_scan_h"),
            helper.make_node("Identity", ["c_next"], ["c_scan"], name="step_scan_c")]
    body = helper.make_graph(step, "body", [info("h", [2, 4]), info("c", [4]), info("x", [2, 3]),
                                            info("mask", [2])],
                             [info("h_next", [2, 4]), info("c_next", [4]), info("h_scan", [2, 4]),
                              info("c_scan", [4])])
    m.node("Scan", [h0, c0, xs, ms], ["h_last", "c_last", "h_all", "c_all"], body=body,
           num_scan_inputs=2, scan_input_axes=[1, 0], scan_input_directions=[0, 1],
           scan_output_axes=[1, 0], scan_output_directions=[0, 1])
    for name, rank in (("h_last", 2), ("c_last", 1), ("h_all", 3), ("c_all", 2)):
        m.output(name, rank=rank)
    return m


def scan_batched():
    """Scan as opset 8 wrote it: a batch axis in front of the states and the sequences, the body
    seeing one batch element, sequence_lens given (all full length) and the input reversed."""
    m = Model("scan_opset8_batched", 431, "Scan-8: batch axis, sequence_lens, reversed input",
              opset=8)
    s0, xs = m.input("s0", [2, 3]), m.input("xs", [2, 4, 3])
    m.inits.append(numpy_helper.from_array(np.array([4, 4], dtype=np.int64), "lens"))
    w = m.weight("w", [3])

    def info(name):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [3])

    body = helper.make_graph(
        [helper.make_node("Mul", ["x", w], ["xw"], name="step_mul"),
         helper.make_node("Add", ["s", "xw"], ["s_next"], name="step_add"),
         helper.make_node("Sigmoid", ["s_next"], ["y"], name="step_sigmoid")],
        "body", [info("s"), info("x")], [info("s_next"), info("y")])
    m.node("Scan", ["lens", s0, xs], ["s_last", "ys"], body=body, num_scan_inputs=1,
           directions=[1])
    m.output("s_last", rank=2)
    m.output("ys", rank=3)
    return m


def control_flow():
    return [if_on_data("if_data_taken", 400, 0.0), if_on_data("if_data_skipped", 401, 1.5),
            if_on_data_nested(), loop_with_constant_count("loop_constant", 420, False),
            loop_with_constant_count("loop_shape", 421, True), scan_rnn(), scan_batched()]


def recurrent(name, seed, op, note, seq=5, batch=3, inputs=4, hidden=6, direction="forward",
              lens=None, layout=0, initial=True, peepholes=False, **attrs):
    """One LSTM / GRU / RNN node with seeded weights; Y, Y_h (and Y_c) are graph outputs."""
    m = Model(name, seed, note, opset=14)  # layout arrived in opset 14
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    dirs = 2 if direction == "bidirectional" else 1
    x = m.input("x", [batch, seq, inputs] if layout else [seq, batch, inputs])
    args = [x, m.weight("w", [dirs, gates * hidden, inputs]),
            m.weight("r", [dirs, gates * hidden, hidden]),
            m.weight("b", [dirs, 2 * gates * hidden], 0.3)]
    if lens is None:
        args.append("")
    else:
        m.inits.append(numpy_helper.from_array(np.array(lens, dtype=np.int32), "lens"))
        args.append("lens")
    state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    if initial:
        args.append(m.input("h0", state))
        if op == "LSTM":
            args.append(m.input("c0", state))
    if peepholes:
        if not initial:
            args += ["", ""]
        args.append(m.weight("p", [dirs, 3 * hidden], 0.3))
    outputs = ["y", "y_h"] + (["y_c"] if op == "LSTM" else [])
    m.node(op, args, outputs, hidden_size=hidden, direction=direction, layout=layout, **attrs)
    m.output("y", rank=4)
    m.output("y_h", rank=3)
    if op == "LSTM":
        m.output("y_c", rank=3)
    return m


def recurrent_models():
    return [
        recurrent("lstm_bidirectional_lens", 400, "LSTM", "bidirectional LSTM with "
                  "sequence_lens, initial states and peepholes", direction="bidirectional",
                  lens=[5, 2, 4], peepholes=True),
        # ONNX Runtime has no layout 1 (batch-major) recurrent kernels; the ONNX node cases
        # test_lstm_batchwise and test_gru_batchwise cover it.
        recurrent("lstm_reverse_clip_input_forget", 401, "LSTM", "reverse LSTM, clip, "
                  "input_forget, non-default activations", direction="reverse", clip=1.5,
                  input_forget=1, activations=["HardSigmoid", "Tanh", "Softsign"],
                  activation_alpha=[0.3], activation_beta=[0.4]),
        recurrent("lstm_forward_no_state", 402, "LSTM", "forward LSTM without initial states "
                  "(PyTorch's default)", initial=False, seq=7, batch=1, hidden=8),
        recurrent("gru_bidirectional_linear_before_reset", 403, "GRU", "bidirectional GRU, "
                  "linear_before_reset (PyTorch's form), sequence_lens", direction="bidirectional",
                  lens=[3, 5, 1], linear_before_reset=1),
        recurrent("gru_reverse", 404, "GRU", "reverse GRU, reset before the product",
                  direction="reverse"),
        recurrent("rnn_relu_lens", 405, "RNN", "bidirectional RNN with Relu and LeakyRelu, "
                  "sequence_lens, clip", direction="bidirectional", lens=[4, 5, 2],
                  activations=["Relu", "LeakyRelu"], activation_alpha=[0.1], clip=2.0),
        # A speech-length sequence: 200 unrolled steps that share their kernels (it compiled
        # one distinct kernel per step, ~25 s, before).
        recurrent("lstm_long_sequence", 406, "LSTM", "forward LSTM over 200 frames, batch 1",
                  seq=200, batch=1, inputs=16, hidden=32, initial=False),
    ]


def tf_computed_attributes():
    m = Model("tf_computed_pads", 500, "NHWC -> NCHW, Pad's pads and Reshape's shape computed "
              "from shapes (tf2onnx)")
    x = m.input("x", [1, 8, 7, 3])
    t = m.node("Transpose", [x], ["nchw"], perm=[0, 3, 1, 2])
    hw = m.node("Slice", [m.node("Shape", [t], ["s"]), m.ints("b2", [2]), m.ints("e4", [4])],
                ["hw"])
    rem = m.node("Sub", [m.ints("k", [3]), m.node("Mod", [hw, m.ints("three", [3])], ["mod"])],
                 ["rem"])
    rem = m.node("Clip", [rem, m.ints("lo", 0), m.ints("hi", 2)], ["rem_clipped"])
    rem_h, rem_w = m.node("Split", [rem], ["rem_h", "rem_w"], axis=0)
    before_h = m.node("Div", [rem_h, m.ints("two", [2])], ["before_h"])
    after_h = m.node("Sub", [rem_h, before_h], ["after_h"])
    pads = m.node("Concat", [m.ints("z2", [0, 0]), before_h, m.ints("z1", [0]), m.ints("z2b", [0, 0]),
                             after_h, rem_w], ["pads"], axis=0)
    y = m.node("Pad", [t, pads], ["padded"])
    y = m.node("Conv", [y, m.weight("w", [4, 3, 3, 3])], ["conv"], strides=[3, 3])
    n0 = m.node("Gather", [m.node("Shape", [y], ["sc"]), m.ints("i0", 0)], ["n0"], axis=0)
    shape = m.node("Concat", [m.node("Unsqueeze", [n0, m.ints("ax0", [0])], ["n0u"]),
                              m.ints("m1", [-1])], ["shape"], axis=0)
    flat = m.node("Reshape", [y, shape], ["flat"])
    idx = m.node("Range", [m.ints("r0", 0), m.node("Size", [flat], ["size"]), m.ints("r1", 1)],
                 ["idx"])
    odd = m.node("Not", [m.node("Equal", [m.node("Mod", [idx, m.ints("two2", 2)], ["im"]),
                                          m.ints("zero", 0)], ["even"])], ["odd"])
    mask = m.node("Unsqueeze", [m.node("Cast", [odd], ["oddf"], to=TensorProto.FLOAT),
                                m.ints("ax00", [0])], ["mask"])
    m.node("Mul", [flat, mask], ["y"])
    m.output("y", rank=2)
    return [m]


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


def encoder_layer(opset, ir_version):
    """One transformer encoder layer as a newer exporter writes it: heads reshaped through
    Shape/Gather/Concat, an additive mask from an int64 attention mask, Gelu; RMSNormalization
    from opset 23 on, Swish at 24 (ORT 1.30 runs opset 24's Swish only in opset-24 models)."""
    rms = opset >= 23
    m = Model("encoder_opset%d" % opset, 2100 + opset,
              "opset %d, IR %d: masked attention, Gelu, %s" % (
                  opset, ir_version, "RMSNormalization" if rms else "LayerNormalization") +
              (", Swish" if opset == 24 else ""), opset=opset, ir_version=ir_version)
    d, heads = 32, 4
    x = m.input("x", [2, 10, d])
    mask = m.input("mask", [2, 10], TensorProto.INT64)

    def norm(v, tag):
        if rms:
            return m.node("RMSNormalization", [v, m.weight(tag + "_s", [d], 0.3)], [tag],
                          epsilon=1e-5)
        return m.node("LayerNormalization", [v, m.weight(tag + "_s", [d], 0.3),
                                             m.weight(tag + "_b", [d], 0.1)], [tag], axis=-1)

    def heads_of(v, tag):
        p = m.node("MatMul", [v, m.weight("w" + tag, [d, d], 0.2)], [tag + "_proj"])
        shape = m.node("Shape", [p], [tag + "_shape"])
        lead = m.node("Slice", [shape, m.ints(tag + "_0", [0]), m.ints(tag + "_2", [2])],
                      [tag + "_lead"])
        split = m.node("Concat", [lead, m.ints(tag + "_hd", [heads, -1])], [tag + "_split"],
                       axis=0)
        r = m.node("Reshape", [p, split], [tag + "_heads"])
        return m.node("Transpose", [r], [tag + "_t"], perm=[0, 2, 1, 3])

    h = norm(x, "norm0")
    q, k, v = heads_of(h, "q"), heads_of(h, "k"), heads_of(h, "v")
    scores = m.node("MatMul", [q, m.node("Transpose", [k], ["kt"], perm=[0, 1, 3, 2])],
                    ["scores"])
    scores = m.node("Mul", [scores, m.weight_values("scale", 1 / np.sqrt(d // heads))],
                    ["scaled"])
    maskf = m.node("Cast", [m.node("Unsqueeze", [mask, m.ints("mask_axes", [1, 2])],
                                   ["mask4"])], ["maskf"], to=TensorProto.FLOAT)
    bias = m.node("Mul", [m.node("Sub", [m.weight_values("one", 1.0), maskf], ["masked"]),
                          m.weight_values("neg", -1e4)], ["mask_bias"])
    probs = m.node("Softmax", [m.node("Add", [scores, bias], ["biased"])], ["probs"], axis=-1)
    ctx = m.node("Transpose", [m.node("MatMul", [probs, v], ["ctx"])], ["ctx_t"],
                 perm=[0, 2, 1, 3])
    ctx = m.node("Reshape", [ctx, m.ints("merge", [0, 0, d])], ["ctx_merged"])
    x1 = m.node("Add", [x, m.node("MatMul", [ctx, m.weight("wo", [d, d], 0.2)], ["attn"])],
                ["res1"])
    f = m.node("MatMul", [norm(x1, "norm1"), m.weight("w1", [d, 64], 0.2)], ["ff1"])
    f = m.node("Gelu", [f], ["gelu"], approximate="tanh")
    if opset == 24:
        f = m.node("Swish", [f], ["swish"], alpha=1.5)
    m.node("Add", [x1, m.node("MatMul", [f, m.weight("w2", [64, d], 0.2)], ["ff2"])], ["y"])
    m.output("y", rank=3)
    return m


def rotary_opset23():
    """RotaryEmbedding in the three forms exporters write: queries as 4-D heads rotated by the
    cache rows their position_ids pick, keys as a 3-D hidden state (num_heads) rotated in
    interleaved pairs over the first half of each head, and caches already gathered per token."""
    m = Model("rotary_opset23", 2323, "RotaryEmbedding: 4-D with position_ids, 3-D interleaved "
              "partial (rotary_embedding_dim) with num_heads, caches per token", opset=23,
              ir_version=11)
    x = m.input("x", [2, 5, 24])
    pos = m.input("position_ids", [2, 5], TensorProto.INT64)
    angles = m.rs.uniform(0, 2 * np.pi, (12, 4))
    cos, sin = m.weight_values("cos", np.cos(angles)), m.weight_values("sin", np.sin(angles))
    q = m.node("Reshape", [m.node("MatMul", [x, m.weight("wq", [24, 24], 0.2)], ["q_proj"]),
                           m.ints("heads", [2, 5, 3, 8])], ["q_heads"])
    q = m.node("Transpose", [q], ["q_t"], perm=[0, 2, 1, 3])
    m.node("RotaryEmbedding", [q, cos, sin, pos], ["q_rot"])
    k = m.node("MatMul", [x, m.weight("wk", [24, 24], 0.2)], ["k_proj"])
    half = m.node("Slice", [cos, m.ints("s0", [0]), m.ints("s2", [2]), m.ints("s1", [1])],
                  ["cos_half"])
    half_sin = m.node("Slice", [sin, m.ints("t0", [0]), m.ints("t2", [2]), m.ints("t1", [1])],
                      ["sin_half"])
    m.node("RotaryEmbedding", [k, half, half_sin, pos], ["k_rot"], interleaved=1,
           rotary_embedding_dim=4, num_heads=3)
    tok = m.rs.uniform(0, 2 * np.pi, (2, 5, 4))
    m.node("RotaryEmbedding", [q, m.weight_values("cos_tok", np.cos(tok)),
                               m.weight_values("sin_tok", np.sin(tok))], ["q_tok"])
    m.output("q_rot", rank=4)
    m.output("k_rot", rank=3)
    m.output("q_tok", rank=4)
    return m


def attention_decoder_opset23():
    """A decoder step: queries and keys rotated (RotaryEmbedding), grouped-query Attention over
    a past cache plus the new tokens, causal from the first new position on, the present cache
    and the output projection out."""
    m = Model("attention_decoder_opset23", 2324, "Attention: 4-D heads after RotaryEmbedding, "
              "past key/value, is_causal, 4 query heads over 2 kv heads, present key/value",
              opset=23, ir_version=11)
    x = m.input("x", [1, 3, 32])
    pos = m.input("position_ids", [1, 3], TensorProto.INT64)
    past_k, past_v = m.input("past_key", [1, 2, 4, 8]), m.input("past_value", [1, 2, 4, 8])
    angles = m.rs.uniform(0, 2 * np.pi, (12, 4))
    cos, sin = m.weight_values("cos", np.cos(angles)), m.weight_values("sin", np.sin(angles))

    def heads(tag, count):
        p = m.node("MatMul", [x, m.weight("w" + tag, [32, count * 8], 0.2)], [tag + "_proj"])
        p = m.node("Reshape", [p, m.ints(tag + "_shape", [1, 3, count, 8])], [tag + "_heads"])
        return m.node("Transpose", [p], [tag + "_t"], perm=[0, 2, 1, 3])

    q = m.node("RotaryEmbedding", [heads("q", 4), cos, sin, pos], ["q_rot"])
    k = m.node("RotaryEmbedding", [heads("k", 2), cos, sin, pos], ["k_rot"])
    m.node("Attention", [q, k, heads("v", 2), "", past_k, past_v],
           ["ctx", "present_key", "present_value"], is_causal=1)
    ctx = m.node("Reshape", [m.node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
                             m.ints("merge", [1, 3, 32])], ["ctx_merged"])
    m.node("MatMul", [ctx, m.weight("wo", [32, 32], 0.2)], ["y"])
    m.output("y", rank=3)
    m.output("present_key", rank=4)
    m.output("present_value", rank=4)
    return m


def attention_packed_opset24():
    """3-D packed heads (q_num_heads 4, kv_num_heads 2) with a boolean padding mask that hides
    one query row whole (its output is zeros), is_causal with the mask (opset 24), softcap, and
    the capped scores as the fourth output (the masked ones would differ in how they say masked:
    ONNX's -inf, ONNX Runtime's lowest float)."""
    m = Model("attention_packed_opset24", 2424, "Attention: 3-D packed grouped-query heads, a "
              "boolean padding mask with a row masked whole, is_causal with it, softcap, the "
              "capped scores out", opset=24, ir_version=12)
    q, k, v = m.input("q", [2, 5, 32]), m.input("k", [2, 5, 16]), m.input("v", [2, 5, 24])
    keep = np.ones((2, 1, 5, 5), bool)
    keep[0, 0, :, 3:] = False
    keep[1, 0, 2, :] = False
    m.inits.append(numpy_helper.from_array(keep, "keep"))
    m.node("Attention", [q, k, v, "keep"], ["y", "", "", "scores"], q_num_heads=4,
           kv_num_heads=2, is_causal=1, softcap=3.0, qk_matmul_output_mode=1)
    m.output("y", rank=3)
    m.output("scores", rank=4)
    return m


def attention_long_opset23():
    """Causal self-attention over 8 heads of 512 tokens: two batched MatMuls of 268 MFLOP each
    and a softmax over 2M scores, where the kernels' speed shows."""
    m = Model("attention_long_opset23", 2325, "Attention: causal, 8 heads of 512 tokens, head "
              "size 64", opset=23, ir_version=11)
    q, k, v = (m.input(name, [1, 8, 512, 64]) for name in "qkv")
    m.node("Attention", [q, k, v], ["y"], is_causal=1)
    m.output("y", rank=4)
    return m


def quantizers():
    """Opset 21's quantizer forms ORT's and other quantizers write."""
    m = Model("quantizers_opset21", 2121, "QuantizeLinear output_dtype int8 without a zero "
              "point, blocked Quantize/DequantizeLinear (block_size 2), a MatMul weight "
              "dequantized by blocks of 4, a float16 scale", opset=21, ir_version=10)
    x = m.input("x", [4, 8])
    q8 = m.node("QuantizeLinear", [x, m.weight_values("s", 0.02)], ["q8"],
                output_dtype=TensorProto.INT8)
    m.node("Cast", [q8], ["q8f"], to=TensorProto.FLOAT)
    scales = m.weight_values("bs", m.rs.uniform(0.01, 0.03, (4, 4)))
    m.inits.append(numpy_helper.from_array(m.rs.randint(-5, 5, (4, 4)).astype(np.int8), "bzp"))
    qb = m.node("QuantizeLinear", [x, scales, "bzp"], ["qb"], axis=1, block_size=2)
    m.node("DequantizeLinear", [qb, scales, "bzp"], ["dqb"], axis=1, block_size=2)
    m.inits.append(numpy_helper.from_array(m.rs.randint(-100, 100, (8, 6)).astype(np.int8),
                                           "wq"))
    w = m.node("DequantizeLinear", ["wq", m.weight_values("ws", m.rs.uniform(0.001, 0.01, (2, 6)))],
               ["w"], axis=0, block_size=4)
    m.node("MatMul", [x, w], ["mm"])
    m.inits.append(numpy_helper.from_array(np.array(0.02, np.float16), "s16"))
    half = m.node("DequantizeLinear", [q8, "s16"], ["dq16"])
    m.node("Cast", [half], ["dq16f"], to=TensorProto.FLOAT)
    for name in ["q8f", "dqb", "mm", "dq16f"]:
        m.output(name, rank=2)
    return m


def kv_cache_decoder_opset24():
    """A decoder step over a static KV cache, as opset 24 writes it: the new keys and values
    written into the caches at each batch's write index (TensorScatter), positions from that
    index rotating Q and K, grouped-query Attention over the whole cache with the keys past each
    batch's filled length masked (nonpad_kv_seqlen), causal up to each query's position."""
    m = Model("kv_cache_decoder_opset24", 2426, "TensorScatter into static key/value caches at "
              "per-batch write indices, RotaryEmbedding from them, Attention with "
              "nonpad_kv_seqlen and is_causal, 4 query heads over 2 kv heads",
              opset=24, ir_version=12)
    batch, new, length, hidden, size = 2, 2, 12, 32, 8
    x = m.input("x", [batch, new, hidden])
    write = m.input("write_indices", [batch], TensorProto.INT64)  # 0..9: room for 2 more
    past_k = m.input("past_key", [batch, 2, length, size])
    past_v = m.input("past_value", [batch, 2, length, size])
    angles = m.rs.uniform(0, 2 * np.pi, (length, size // 2))
    cos, sin = m.weight_values("cos", np.cos(angles)), m.weight_values("sin", np.sin(angles))
    pos = m.node("Add", [m.node("Unsqueeze", [write, m.ints("ax1", [1])], ["write_col"]),
                         m.ints("steps", [0, 1])], ["positions"])

    def heads(tag, count):
        p = m.node("MatMul", [x, m.weight("w" + tag, [hidden, count * size], 0.2)], [tag + "_p"])
        p = m.node("Reshape", [p, m.ints(tag + "_shape", [batch, new, count, size])], [tag + "_h"])
        return m.node("Transpose", [p], [tag + "_t"], perm=[0, 2, 1, 3])

    q = m.node("RotaryEmbedding", [heads("q", 4), cos, sin, pos], ["q_rot"])
    k = m.node("RotaryEmbedding", [heads("k", 2), cos, sin, pos], ["k_rot"])
    keys = m.node("TensorScatter", [past_k, k, write], ["present_key"])
    values = m.node("TensorScatter", [past_v, heads("v", 2), write], ["present_value"])
    filled = m.node("Add", [write, m.ints("new", [new])], ["filled"])
    # is_causal over the cache: query i (at position write + i) sees the keys up to its own.
    m.node("Attention", [q, keys, values, "", "", "", filled], ["ctx"], is_causal=1)
    ctx = m.node("Reshape", [m.node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
                             m.ints("merge", [batch, new, hidden])], ["ctx_merged"])
    m.node("MatMul", [ctx, m.weight("wo", [hidden, hidden], 0.2)], ["y"])
    m.output("y", rank=3)
    m.output("present_key", rank=4)
    m.output("present_value", rank=4)
    return m


def newer_opsets():
    return ([newer_opset(18, 9), newer_opset(21, 10), quantizers(), rotary_opset23(),
             attention_decoder_opset23(), attention_packed_opset24(),
             attention_long_opset23(), kv_cache_decoder_opset24()] +
            [encoder_layer(o, ir) for o, ir in ((22, 10), (23, 11), (24, 12), (26, 13))])


def convt(name, seed, note, c_in, c_out, hw, group=1, bias=True, after=(), **attrs):
    """x -> ConvTranspose(attrs) [-> after...]; `after` names per-channel or unary ops."""
    m = Model("convt_" + name, seed, note)
    x = m.input("x", [1, c_in] + list(hw))
    kernel = attrs.get("kernel_shape", [3, 3])
    inputs = [x, m.weight("w", [c_in, c_out // group] + list(kernel))]
    if bias:
        inputs.append(m.weight("b", [c_out]))
    y = m.node("ConvTranspose", inputs, ["convt"], group=group, **attrs)
    for i, op in enumerate(after):
        if op in ("Add", "Mul", "Sub", "Div"):
            c = m.weight_values("c%d" % i, m.rs.uniform(0.5, 2.0, (c_out, 1, 1)))
            y = m.node(op, [y, c], ["%s_%d" % (op.lower(), i)])
        elif op == "BatchNormalization":
            bn = [m.weight("bn%d_%s" % (i, k), [c_out]) for k in ("g", "b", "m")]
            var = m.weight_values("bn%d_v" % i, m.rs.uniform(0.5, 2.0, c_out))
            y = m.node(op, [y] + bn + [var], ["bn_%d" % i])
        else:
            y = m.node(op, [y], ["%s_%d" % (op.lower(), i)])
    m.node("Identity", [y], ["y"])
    m.output("y", rank=4)
    return m


def convt_dbnet():
    """PP-OCR's DBNet head: two ConvTranspose 2x2 stride 2, each with a bias Add after it."""
    m = Model("convt_dbnet", 500, "DBNet head (PP-OCR det): ConvTranspose 2x2 s2 -> Add -> "
              "BatchNormalization -> Relu -> ConvTranspose 2x2 s2 -> Add -> Sigmoid")
    x = m.input("x", [1, 16, 20, 20])
    y = m.node("ConvTranspose", [x, m.weight("w1", [16, 8, 2, 2])], ["ct1"], kernel_shape=[2, 2],
               strides=[2, 2])
    y = m.node("Add", [y, m.weight("b1", [8, 1, 1])], ["ct1_bias"])
    bn = [m.weight("bn_" + k, [8]) for k in ("g", "b", "m")]
    y = m.node("BatchNormalization", [y] + bn + [m.weight_values("bn_v", m.rs.uniform(
        0.5, 2.0, 8))], ["bn"])
    y = m.node("Relu", [y], ["relu"])
    y = m.node("ConvTranspose", [y, m.weight("w2", [8, 1, 2, 2])], ["ct2"], kernel_shape=[2, 2],
               strides=[2, 2])
    y = m.node("Add", [y, m.weight("b2", [1])], ["ct2_bias"])
    m.node("Sigmoid", [y], ["y"])
    m.output("y", rank=4)
    return m


def convt_shared():
    """The interleave's output read by two ops: neither may move before it."""
    m = Model("convt_shared", 501, "ConvTranspose k3 s2 whose output two Adds read")
    x = m.input("x", [1, 8, 9, 7])
    y = m.node("ConvTranspose", [x, m.weight("w", [8, 16, 3, 3])], ["ct"], strides=[2, 2])
    a = m.node("Add", [y, m.weight("c1", [16, 1, 1])], ["a1"])
    b = m.node("Mul", [y, m.weight("c2", [1, 16, 1, 1])], ["a2"])
    m.node("Add", [a, b], ["y"])
    m.output("y", rank=4)
    return m


def blocked_se_resize_concat():
    m = Model("blocked_se_resize_concat", 530, "conv -> per-channel Mul/Add -> squeeze-excite "
              "-> Resize x2 -> Concat -> conv -> HardSwish, all blocked", opset=14)
    x = m.input("x", [1, 8, 10, 10])
    a = m.node("Conv", [x, m.weight("w1", [32, 8, 3, 3]), m.weight("b1", [32])], ["c1"],
               pads=[1, 1, 1, 1])
    a = m.node("Mul", [a, m.weight("scale", [32, 1, 1])], ["scaled"])
    a = m.node("Add", [a, m.weight("shift", [1, 32, 1, 1])], ["shifted"])
    g = m.node("GlobalAveragePool", [a], ["pooled"])
    g = m.node("Conv", [g, m.weight("se1", [8, 32, 1, 1]), m.weight("se1b", [8])], ["se_c1"])
    g = m.node("Relu", [g], ["se_r"])
    g = m.node("Conv", [g, m.weight("se2", [32, 8, 1, 1]), m.weight("se2b", [32])], ["se_c2"])
    g = m.node("HardSigmoid", [g], ["se_gate"], alpha=0.2, beta=0.5)
    a = m.node("Mul", [a, g], ["excited"])
    scales = m.weight_values("scales", [1, 1, 2, 2])
    a = m.node("Resize", [a, "", scales], ["up1"], mode="nearest",
               coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    b = m.node("Conv", [x, m.weight("w2", [16, 8, 1, 1])], ["c2"])
    b = m.node("Resize", [b, "", scales], ["up2"], mode="nearest",
               coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    y = m.node("Concat", [a, b], ["cat"], axis=1)
    y = m.node("Conv", [y, m.weight("w3", [16, 48, 3, 3], 0.1)], ["c3"], pads=[1, 1, 1, 1])
    m.node("HardSwish", [y], ["y"])
    m.output("y", rank=4)
    return m


def dilated_segmentation():
    m = Model("dilated_segmentation", 540, "RSU-4F convs dilated 2/4/8, Concat, dilated "
              "depthwise 2/4/8, ASPP dilation 6 on a 10x10 plane, strided dilated conv, bilinear "
              "Resize by sizes")

    def conv(name, x, c_in, c_out, dilation, stride=1, group=1, relu=True):
        y = m.node("Conv", [x, m.weight(name + "_w", [c_out, c_in // group, 3, 3], 0.2),
                            m.weight(name + "_b", [c_out])], [name],
                   dilations=[dilation, dilation], pads=[dilation] * 4,
                   strides=[stride, stride], group=group)
        return m.node("Relu", [y], [name + "_relu"]) if relu else y

    x = m.input("x", [1, 16, 20, 20])
    h = conv("in", x, 16, 32, 1)
    d1 = conv("d1", h, 32, 16, 2)
    d2 = conv("d2", d1, 16, 16, 4)
    d3 = conv("d3", d2, 16, 16, 8)
    c = m.node("Concat", [d3, d2], ["cat"], axis=1)
    c = conv("d2d", c, 32, 16, 4)
    dw = conv("dw2", c, 16, 16, 2, group=16, relu=False)
    dw = conv("dw4", dw, 16, 16, 4, group=16)
    dw = conv("dw8", dw, 16, 16, 8, group=16)  # 16 of its 20 rows are border rows
    p = m.node("MaxPool", [c], ["pool"], kernel_shape=[2, 2], strides=[2, 2])
    aspp = conv("aspp", p, 16, 32, 6)
    up = m.node("Resize", [aspp, "", "", m.ints("sizes", [1, 32, 20, 20])], ["up"],
                mode="linear", coordinate_transformation_mode="half_pixel")
    y = m.node("Concat", [up, dw], ["merge"], axis=1)
    m.node("Conv", [y, m.weight("out_w", [8, 48, 1, 1], 0.2)], ["y"])
    conv("strided", h, 32, 16, 3, stride=2)
    m.output("y", rank=4)
    m.output("strided_relu", rank=4)
    return m


def float16_convnet():
    """A float32 model converted to float16 the way converters do it with float32 inputs and
    outputs kept: a Cast to float16 in, float16 weights (one scaled by a float16 constant, a bias
    cast from float32: folded on the host), convs (a strided one, a depthwise one), a residual
    Add, MaxPool, a nearest Resize, Sigmoid, and Casts back to float32 out, one from the blocked
    layout (the transform reads through the Cast)."""
    m = Model("float16_convnet", 550, "float16 weights and activations between Casts from and "
              "to float32 inputs and outputs: convs, depthwise, residual Add, MaxPool, Resize, "
              "Sigmoid", tolerance="range=0.004")

    def half_weight(name, shape, scale):
        m.inits.append(numpy_helper.from_array(
            (m.rs.standard_normal(shape) * scale).astype(np.float16), name))
        return name

    def conv(name, x, c_in, c_out, k=3, stride=1, group=1, relu=True):
        y = m.node("Conv", [x, half_weight(name + "_w", [c_out, c_in // group, k, k],
                                           1.0 / np.sqrt(c_in // group * k * k)),
                            half_weight(name + "_b", [c_out], 0.1)], [name],
                   pads=[k // 2] * 4, strides=[stride, stride], group=group)
        return m.node("Relu", [y], [name + "_relu"]) if relu else y

    x = m.input("x", [1, 8, 16, 16])
    h = m.node("Cast", [x], ["x16"], to=TensorProto.FLOAT16)
    a = conv("c1", h, 8, 16, stride=2)
    b = conv("dw", a, 16, 16, group=16, relu=False)
    b = conv("pw", b, 16, 16, k=1, relu=False)
    a = m.node("Add", [a, b], ["residual"])
    p = m.node("MaxPool", [a], ["pool"], kernel_shape=[2, 2], strides=[2, 2])
    scales = m.weight_values("scales", [1, 1, 2, 2])
    u = m.node("Resize", [p, "", scales], ["up"], mode="nearest",
               coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    # The head's weights and bias as converters leave them: a float16 weight scaled by a float16
    # constant, a float32 bias cast to float16 (both folded at compile time).
    m.inits.append(numpy_helper.from_array(np.array(0.5, np.float16), "half_scale"))
    head_w = m.node("Mul", [half_weight("head_w0", [4, 16, 3, 3], 0.25), "half_scale"],
                    ["head_w"])
    head_b = m.node("Cast", [m.weight("head_b32", [4], 0.1)], ["head_b"], to=TensorProto.FLOAT16)
    head = m.node("Conv", [u, head_w, head_b], ["head"], pads=[1, 1, 1, 1])
    s = m.node("Sigmoid", [head], ["prob16"])
    m.node("Cast", [s], ["prob"], to=TensorProto.FLOAT)
    m.node("Cast", [a], ["features"], to=TensorProto.FLOAT)
    m.output("prob", rank=4)
    m.output("features", rank=4)
    return m


def convt_models():
    k = "kernel_shape"
    return [
        convt_dbnet(), convt_shared(),
        convt("k3s2_pads_outpad", 510, "k3 s2 pads 1 output_padding 1, bias, Relu", 8, 12,
              (9, 11), after=["Relu"], strides=[2, 2], pads=[1, 1, 1, 1],
              output_padding=[1, 1]),
        convt("k4s2p1_affine", 511, "k4 s2 p1 (GAN upsampling), per-channel Mul and Add, "
              "LeakyRelu", 16, 8, (8, 8), after=["Mul", "Add", "LeakyRelu"], strides=[2, 2],
              pads=[1, 1, 1, 1], **{k: [4, 4]}),
        convt("k1s2", 512, "k1 s2: a kernel shorter than the stride (zero phases)", 8, 8, (6, 5),
              strides=[2, 2], **{k: [1, 1]}),
        convt("k5s3_asym", 513, "k5 s3, asymmetric pads", 4, 6, (7, 6), strides=[3, 3],
              pads=[2, 0, 1, 3], **{k: [5, 5]}),
        convt("unequal", 514, "kernel 3x4, strides 2x3, output_padding 1x2, Sub and Div", 6, 5,
              (5, 7), after=["Sub", "Div"], strides=[2, 3], pads=[1, 0, 0, 2],
              output_padding=[1, 2], **{k: [3, 4]}),
        convt("group2", 515, "group 2, k3 s2, bias, BatchNormalization, Sigmoid", 8, 12, (6, 6),
              group=2, after=["BatchNormalization", "Sigmoid"], strides=[2, 2],
              pads=[1, 1, 1, 1], output_padding=[1, 1]),
        convt("depthwise", 516, "depthwise (group = channels), k4 s2 p1, no bias", 16, 16,
              (10, 10), group=16, bias=False, strides=[2, 2], pads=[1, 1, 1, 1], **{k: [4, 4]}),
        convt("dilated", 517, "dilations 2, k3 s2", 6, 6, (6, 7), strides=[2, 2],
              dilations=[2, 2]),
        convt("dilated_s1", 518, "dilations 2x1, k3 s1 pads 2x1", 6, 4, (8, 8),
              dilations=[2, 1], pads=[2, 1, 2, 1]),
        convt("stride1", 519, "k3 s1 p1: one phase, the crop in the conv's pads, HardSigmoid",
              8, 8, (12, 12), after=["HardSigmoid"], pads=[1, 1, 1, 1]),
        convt("stride1_crop", 520, "k2 s1 with pads 2: a crop larger than the conv pad", 4, 4,
              (9, 9), strides=[1, 1], pads=[2, 2, 2, 2], **{k: [2, 2]}),
        convt("same_upper", 521, "auto_pad SAME_UPPER, k3 s2", 4, 6, (5, 5), strides=[2, 2],
              auto_pad="SAME_UPPER"),
        convt("output_shape", 522, "output_shape 15x12 (k3 s2), Relu", 4, 6, (7, 5),
              after=["Relu"], strides=[2, 2], output_shape=[15, 12]),
    ]


def attention_einsum_causal():
    m = Model("attention_einsum_causal", 560, "Einsum attention scores and context, Trilu "
              "causal mask, Softmax, CumSum position ids, TopK of the scores", opset=14)
    x = m.input("x", [1, 6, 16])

    def heads(tag):
        p = m.node("MatMul", [x, m.weight("w" + tag, [16, 16], 0.3)], [tag + "_proj"])
        p = m.node("Reshape", [p, m.ints(tag + "_shape", [1, 6, 2, 8])], [tag + "_heads"])
        return m.node("Transpose", [p], [tag + "_t"], perm=[0, 2, 1, 3])

    q, k, v = heads("q"), heads("k"), heads("v")
    s = m.node("Einsum", [q, k], ["scores"], equation="bhqd,bhkd->bhqk")
    s = m.node("Mul", [s, m.weight_values("scale", 0.35)], ["scaled"])
    lower = m.node("Trilu", [m.weight_values("ones", np.ones((6, 6))), m.ints("diag", 0)],
                   ["lower"], upper=0)
    masked = m.node("Equal", [lower, m.weight_values("zero", 0.0)], ["masked"])
    s = m.node("Where", [masked, m.weight_values("neg", -1e9), s], ["causal"])
    p = m.node("Softmax", [s], ["probs"], axis=-1)
    m.node("Einsum", [p, v], ["context"], equation="bhqk,bhkd->bhqd")
    m.node("TopK", [s, m.ints("k3", [3])], ["top_scores", "top_keys"], axis=-1)
    first = m.node("Gather", [x, m.ints("col0", 0)], ["first"], axis=2)
    mask = m.node("Cast", [m.node("Greater", [first, m.weight_values("z", 0.0)], ["pos"])],
                  ["mask"], to=TensorProto.FLOAT)
    m.node("CumSum", [mask, m.ints("axis1", 1)], ["positions"])
    m.output("context", rank=4)
    m.output("top_scores", rank=4)
    m.output("top_keys", TensorProto.INT64, rank=4)
    m.output("positions", rank=2)
    return m


def attention_masked_fill():
    """A GPT-2 block's attention as PyTorch exports it: one projection split into the heads, the
    causal mask a constant lower triangle [1, 1, 128, 128] sliced to the sequence's length at run
    time, Where(mask, scores, float32's lowest) (masked_fill), Softmax and the context."""
    seq, width, heads = 96, 96, 4
    m = Model("attention_masked_fill", 580, "GPT-2 attention: a causal mask sliced from a "
              "constant triangle to the sequence's length, Where(mask, scores, lowest)")
    x = m.input("x", [1, seq, width])
    qkv = m.node("Add", [m.node("MatMul", [x, m.weight("c_attn", [width, 3 * width], 0.2)],
                                ["qkv_mm"]), m.weight("c_attn_b", [3 * width], 0.1)], ["qkv"])
    q, k, v = m.node("Split", [qkv, m.ints("thirds", [width] * 3)], ["q", "k", "v"], axis=2)
    length = m.node("Gather", [m.node("Shape", [x], ["x_shape"]), m.ints("one", 1)], ["len"])
    split_heads = m.node("Concat", [m.ints("lead", [1]), m.node("Unsqueeze", [
        length, m.ints("ax0", [0])], ["len1"]), m.ints("hd", [heads, width // heads])],
        ["heads_shape"], axis=0)

    def to_heads(t, perm):
        return m.node("Transpose", [m.node("Reshape", [t, split_heads], [t + "_r"])],
                      [t + "_h"], perm=perm)

    scores = m.node("MatMul", [to_heads(q, [0, 2, 1, 3]), to_heads(k, [0, 2, 3, 1])], ["qk"])
    scores = m.node("Div", [scores, m.weight_values("sqrt_d", np.sqrt(width // heads))], ["qk_d"])
    triangle = np.tril(np.ones((128, 128), dtype=bool))[None, None]
    m.inits.append(numpy_helper.from_array(triangle, "bias"))
    ends = m.node("Unsqueeze", [length, m.ints("ax0b", [0])], ["ends"])
    rows = m.node("Slice", ["bias", m.ints("zero2", [0]), ends, m.ints("ax2", [2])], ["bias_r"])
    mask = m.node("Slice", [rows, m.ints("zero3", [0]), ends, m.ints("ax3", [3])], ["bias_rc"])
    lowest = m.weight_values("lowest", np.finfo(np.float32).min)
    probs = m.node("Softmax", [m.node("Where", [mask, scores, lowest], ["masked"])], ["probs"],
                   axis=-1)
    context = m.node("Transpose", [m.node("MatMul", [probs, to_heads(v, [0, 2, 1, 3])], ["ctx"])],
                     ["ctx_t"], perm=[0, 2, 1, 3])
    merged = m.node("Reshape", [context, m.ints("merged_shape", [1, -1, width])], ["merged"])
    m.node("MatMul", [merged, m.weight("c_proj", [width, width], 0.2)], ["y"])
    m.output("y", rank=3)
    return m


def gather_scatter():
    m = Model("gather_scatter", 570, "GatherElements, GatherND (batch_dims 0, 1), ScatterND add, "
              "ScatterElements max, OneHot of an ArgMax, EyeLike, int64 CumSum", opset=18,
              ir_version=8)
    x = m.input("x", [2, 5, 4])
    ids = m.input("ids", [2, 3], TensorProto.INT64)
    rs = np.random.RandomState(571)
    m.node("GatherElements", [x, m.ints("ge_at", rs.randint(-5, 5, (2, 3, 4)))], ["ge"], axis=1)
    m.node("GatherND", [x, m.ints("nd_at", [[1, 2], [0, -1], [1, 4]])], ["nd"])
    m.node("GatherND", [x, m.ints("nd_batch_at", [[[3], [0]], [[4], [4]]])], ["nd_batch"],
           batch_dims=1)
    upd = m.node("Slice", [x, m.ints("s0", [0, 0]), m.ints("s1", [1, 3]), m.ints("s2", [0, 1])],
                 ["upd"])
    m.node("ScatterND", [x, m.ints("snd_at", [[1, 2], [0, 4], [1, 2]]),
                         m.node("Reshape", [upd, m.ints("upd_shape", [3, 4])], ["upd3"])],
           ["snd"], reduction="add")
    m.node("ScatterElements", [x, m.ints("se_at", rs.randint(-4, 4, (2, 5, 3))),
                               m.node("Slice", [x, m.ints("t0", [0]), m.ints("t1", [3]),
                                                m.ints("t2", [2])], ["se_upd"])],
           ["se"], axis=2, reduction="max")
    arg = m.node("ArgMax", [x], ["arg"], axis=2, keepdims=0)
    m.node("OneHot", [arg, m.ints("depth", 4), m.weight_values("onoff", [-1.0, 2.0])], ["onehot"])
    m.node("EyeLike", [m.node("Reshape", [x, m.ints("sq", [5, 8])], ["x58"])], ["eye"], k=2)
    m.node("CumSum", [ids, m.ints("ax", 1)], ["id_sum"], reverse=1)
    for name, rank in [("ge", 3), ("nd", 2), ("nd_batch", 3), ("snd", 3), ("se", 3),
                       ("onehot", 3), ("eye", 2)]:
        m.output(name, rank=rank)
    m.output("id_sum", TensorProto.INT64, rank=2)
    return m


def grid_sample():
    m = Model("grid_sample", 580, "GridSample: bilinear, nearest, bicubic x zeros, border, "
              "reflection x align_corners 0, 1, the grid reaching 1.4x past the image", opset=16)
    x = m.input("x", [1, 3, 5, 7])
    g = m.node("Mul", [m.input("g", [1, 4, 6, 2]), m.weight_values("reach", 1.4)], ["grid"])
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (0, 1):
                name = "%s_%s_%d" % (mode, padding, align)
                m.node("GridSample", [x, g], [name], mode=mode, padding_mode=padding,
                       align_corners=align)
                m.output(name, rank=4)
    return m


def spatial_transformer_opset20():
    """A spatial transformer as opset 20 writes it: a localization net's theta (near the identity)
    through AffineGrid and GridSample, then a centre crop (CenterCropPad) and a Conv whose
    columns fold back into an image (Col2Im, as nn.Fold exports), and a bitwise-masked index."""
    m = Model("spatial_transformer_opset20", 2020, "AffineGrid from a localization net's theta, "
              "GridSample, CenterCropPad, Col2Im of a conv's columns, BitwiseAnd/Not on int64",
              opset=20, ir_version=9)
    x = m.input("x", [2, 3, 12, 12])
    feat = m.node("Relu", [m.node("Conv", [x, m.weight("lw", [8, 3, 3, 3], 0.3)], ["lconv"],
                                  pads=[1, 1, 1, 1])], ["lrelu"])
    pooled = m.node("Flatten", [m.node("GlobalAveragePool", [feat], ["lpool"])], ["lflat"])
    shift = m.node("Gemm", [pooled, m.weight("lfc", [8, 6], 0.1)], ["lfc_out"])
    identity = m.weight_values("identity", [[1, 0, 0, 0, 1, 0]])
    theta = m.node("Reshape", [m.node("Add", [shift, identity], ["theta6"]),
                               m.ints("theta_shape", [2, 2, 3])], ["theta"])
    grid = m.node("AffineGrid", [theta, m.ints("size", [2, 3, 10, 10])], ["grid"])
    warped = m.node("GridSample", [x, grid], ["warped"], align_corners=0)
    crop = m.node("CenterCropPad", [warped, m.ints("crop_size", [8, 9])], ["crop"], axes=[2, 3])
    cols = m.node("Conv", [crop, m.weight("cw", [3 * 4, 3, 3, 3], 0.3)], ["cols4"])
    cols = m.node("Reshape", [cols, m.ints("cols_shape", [2, 12, 6 * 7])], ["cols"])
    m.node("Col2Im", [cols, m.ints("image", [7, 8]), m.ints("block", [2, 2])], ["folded"])
    ids = m.input("ids", [2, 5], TensorProto.INT64)
    m.node("BitwiseAnd", [m.node("BitwiseNot", [ids], ["not_ids"]), m.ints("mask", [6])],
           ["masked"])
    m.output("folded", rank=4)
    m.output("masked", TensorProto.INT64, rank=2)
    return m


def roi_heads_opset16():
    """A two-stage detector's box head as torchvision exports it at opset 16: RoiAlign (aligned,
    fixed sampling_ratio) of a conv feature map at stride 2 for boxes the graph computes (some
    reaching past the image), then Flatten and Gemm; and the legacy max-mode form beside it, with
    ONNX's default adaptive sampling (ceil(bin size) samples a side per box)."""
    m = Model("roi_heads_opset16", 1616, "RoiAlign avg (half_pixel, sampling_ratio 2, "
              "spatial_scale 0.5) and max (output_half_pixel, adaptive sampling) on computed "
              "boxes, Gemm head", opset=16)
    x = m.input("x", [2, 3, 24, 24])
    feat = m.node("Relu", [m.node("Conv", [x, m.weight("bw", [8, 3, 3, 3], 0.3)], ["bconv"],
                                  pads=[1, 1, 1, 1], strides=[2, 2])], ["feat"])
    corners = m.node("Abs", [m.input("anchors", [6, 2])], ["corners"])  # in [0, 1)
    start = m.node("Mul", [corners, m.weight_values("span", 30.0)], ["start"])
    size = m.node("Add", [m.node("Mul", [corners, m.weight_values("grow", 25.0)], ["grown"]),
                          m.weight_values("least", 4.0)], ["size"])
    boxes = m.node("Concat", [m.node("Sub", [start, m.weight_values("shift", 6.0)], ["x1y1"]),
                              m.node("Add", [start, size], ["x2y2"])], ["boxes"], axis=1)
    images = m.ints("images", [0, 1, 1, 0, 1, 0])
    pooled = m.node("RoiAlign", [feat, boxes, images], ["pooled"], output_height=4,
                    output_width=4, sampling_ratio=2, spatial_scale=0.5,
                    coordinate_transformation_mode="half_pixel")
    flat = m.node("Flatten", [pooled], ["flat"])
    m.node("Gemm", [flat, m.weight("hw", [8 * 16, 5], 0.1)], ["scores"])
    m.node("RoiAlign", [feat, boxes, images], ["pooled_max"], mode="max", output_height=3,
           output_width=2, spatial_scale=0.5, coordinate_transformation_mode="output_half_pixel")
    m.output("scores", rank=2)
    m.output("pooled_max", rank=4)
    return m


def deformable_conv_opset19():
    """DCN v2 as detectors export it at opset 19: a conv predicts each tap's offsets and, through
    a Sigmoid, its mask; DeformConv (grouped, two offset groups, bias) samples the features there,
    then BatchNormalization and Relu; a second, plain DeformConv with strides and dilations."""
    m = Model("deformable_conv_opset19", 1919, "DeformConv (DCN v2: offsets and mask from convs, "
              "group 2, offset_group 2, bias) then BN and Relu; a strided dilated DCN v1",
              opset=19, ir_version=9)
    x = m.input("x", [1, 8, 14, 14])
    offsets = m.node("Conv", [x, m.weight("ow", [2 * 2 * 9, 8, 3, 3], 0.2)], ["offsets"],
                     pads=[1, 1, 1, 1])
    mask = m.node("Sigmoid", [m.node("Conv", [x, m.weight("mw", [2 * 9, 8, 3, 3], 0.2)],
                                     ["mask_logits"], pads=[1, 1, 1, 1])], ["mask"])
    y = m.node("DeformConv", [x, m.weight("dw", [16, 4, 3, 3], 0.2), offsets, m.weight("db", [16]),
                              mask], ["dcn"], group=2, offset_group=2, pads=[1, 1, 1, 1])
    bn = [m.weight("bn_" + k, [16]) for k in ("g", "b", "m")]
    y = m.node("BatchNormalization", [y] + bn + [m.weight_values("bn_v", m.rs.uniform(0.5, 2, 16))],
               ["bn"])
    y = m.node("Relu", [y], ["relu"])
    strided = m.node("Conv", [y, m.weight("sw", [2 * 4, 16, 1, 1], 0.5)], ["strided_offsets"],
                     strides=[2, 2], pads=[0, 0, 0, 0])
    m.node("DeformConv", [y, m.weight("dw2", [4, 16, 2, 2], 0.2), strided], ["out"],
           strides=[2, 2], dilations=[2, 2], pads=[1, 1, 0, 0])
    m.output("out", rank=4)
    return m


def deformable_conv_layer():
    """A DCN v2 layer alone at a size where its sampling, not the product after it, is the cost:
    16 channels of 32x32 in two offset groups, offsets and mask given as inputs."""
    m = Model("deformable_conv_layer", 1920, "DeformConv alone (DCN v2): 2 images of 16 channels "
              "32x32, offset_group 2, offsets and mask as inputs", opset=19, ir_version=9)
    x = m.input("x", [2, 16, 32, 32])
    offsets, mask = m.input("offsets", [2, 36, 32, 32]), m.input("mask", [2, 18, 32, 32])
    m.node("DeformConv", [x, m.weight("w", [8, 16, 3, 3], 0.2), offsets, "", mask], ["y"],
           offset_group=2, pads=[1, 1, 1, 1])
    m.output("y", rank=4)
    return m


def einsum_forms():
    m = Model("einsum_forms", 590, "Einsum: a bilinear form of three operands, a broadcasting "
              "ellipsis, an implicit output, a full sum, a transpose, upper-case labels",
              opset=13)
    a = m.input("a", [2, 3])
    b = m.input("b", [1, 4, 3])
    m.node("Einsum", [a, m.weight("w", [5, 3, 4]), m.input("c", [2, 4])], ["bilinear"],
           equation="bn,anm,bm->ba")
    m.node("Einsum", [b, m.weight("v", [3, 3, 2])], ["batched"], equation="...ij,...jk->...ik")
    m.node("Einsum", [a, m.weight("u", [3, 6])], ["implicit"], equation="ij,jk")
    m.node("Einsum", [b], ["total"], equation="abc->")
    m.node("Einsum", [b], ["swapped"], equation="abc->cba")
    m.node("Einsum", [a, m.weight("u2", [3, 6])], ["upper"], equation="Bj,jA->AB")
    for name, rank in [("bilinear", 2), ("batched", 3), ("implicit", 2), ("total", 0),
                       ("swapped", 3), ("upper", 2)]:
        m.output(name, rank=rank)
    return m


def mvn_window():
    m = Model("mvn_window", 600, "MeanVarianceNormalization after a conv, and a Hann window "
              "(periodic) times a framed signal", opset=17, ir_version=8)
    x = m.input("x", [2, 4, 6, 6])
    y = m.node("Conv", [x, m.weight("w", [8, 4, 3, 3]), m.weight("b", [8])], ["conv"])
    m.node("MeanVarianceNormalization", [y], ["mvn"])
    window = m.node("HannWindow", [m.ints("size", 16)], ["window"])
    m.node("Mul", [m.input("frames", [3, 16]), window], ["windowed"])
    m.output("mvn", rank=4)
    m.output("windowed", rank=2)
    return m


def lp_norms():
    m = Model("lp_norms", 610, "LpNormalization p 1 and 2, GlobalLpPool p 2 and 3, LpPool 3x3 "
              "stride 2 pads 1 p 2 and p 3", opset=13)
    x = m.input("x", [2, 4, 7, 6])
    m.node("LpNormalization", [x], ["l2_rows"], axis=-1, p=2)
    m.node("LpNormalization", [x], ["l1_channels"], axis=1, p=1)
    m.node("GlobalLpPool", [x], ["global_l2"], p=2)
    m.node("GlobalLpPool", [x], ["global_l3"], p=3)
    for p in (2, 3):
        m.node("LpPool", [x], ["pool_l%d" % p], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1], p=p)
    for name in ("l2_rows", "l1_channels", "global_l2", "global_l3", "pool_l2", "pool_l3"):
        m.output(name, rank=4)
    return m


def spectral():
    m = Model("spectral", 620, "STFT (Hann window folded; window at run time, two-sided), DFT "
              "real onesided padded to 16, complex inverse on axis 2", opset=17, ir_version=8)
    signal = m.input("signal", [2, 64, 1])
    hann = m.node("HannWindow", [m.ints("size", 16)], ["hann"])
    m.node("STFT", [signal, m.ints("step", 4), hann, m.ints("frame", 16)], ["spec"])
    m.node("STFT", [signal, m.ints("step6", 6), m.input("window", [12])], ["spec2"], onesided=0)
    m.node("DFT", [m.input("real", [2, 12, 1]), m.ints("dft_len", 16)], ["rfft"], onesided=1)
    m.node("DFT", [m.input("complex", [1, 3, 8, 2])], ["ifft"], axis=2, inverse=1)
    for name in ("spec", "spec2", "rfft", "ifft"):
        m.output(name, rank=4 if name != "rfft" else 3)
    return m


def unpool_reverse():
    # A larger output_shape is left out: ONNX's definition (the node tests) lays the indices out
    # again in the padded shape, ORT reads them as flat positions of it; Ember follows ONNX.
    m = Model("unpool_reverse", 630, "conv -> MaxPool 2x2 with Indices -> MaxUnpool; "
              "ReverseSequence with run-time lengths", opset=11)
    x = m.input("x", [1, 3, 8, 6])
    y = m.node("Conv", [x, m.weight("w", [4, 3, 3, 3]), m.weight("b", [4])], ["conv"],
               pads=[1, 1, 1, 1])
    pooled, at = m.node("MaxPool", [y], ["pooled", "at"], kernel_shape=[2, 2], strides=[2, 2])
    m.node("MaxUnpool", [pooled, at], ["unpooled"], kernel_shape=[2, 2], strides=[2, 2])
    m.node("ReverseSequence", [m.input("seq", [10, 3, 5]), m.input("lens", [3], TensorProto.INT64)],
           ["reversed"], time_axis=0, batch_axis=1)
    for name in ("unpooled", "reversed"):
        m.output(name, rank=4 if name != "reversed" else 3)
    return m


def indexing_models():
    return [attention_einsum_causal(), attention_masked_fill(), gather_scatter(), grid_sample(),
            spatial_transformer_opset20(), roi_heads_opset16(), deformable_conv_opset19(),
            deformable_conv_layer(),
            einsum_forms(),
            mvn_window(), lp_norms(), spectral(), unpool_reverse()]


def all_models():
    return (edge_pools() + [if_on_shape(), if_on_bound_rate(16000), if_on_bound_rate(8000)] +
            control_flow() + [qoperator(), qdq(), qdq(depthwise=True), qdq(pool=True)] +
            tf_computed_attributes() + recurrent_models() + newer_opsets() + convt_models() +
            [blocked_se_resize_concat(), dilated_segmentation(), float16_convnet()] +
            indexing_models())


def main(argv):
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__)
        return 0 if argv in (["-h"], ["--help"]) else 2
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
