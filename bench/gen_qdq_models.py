#!/usr/bin/python3
"""Write conv networks in ONNX Runtime's QDQ layout, and their float twins, for timing int8 convs.

Usage:  bench/gen_qdq_models.py OUTDIR

  qdq_resnet_convs   the 3x3 convs of ResNet-18 at 224x224 (a 3x3 stride-4 stem where ResNet
                     has its 7x7 stride-2 conv and pool, then 64 to 512 channels on 56x56 to
                     7x7 planes, stride 2 where the channels double),
                     each Conv + Relu between QuantizeLinear / DequantizeLinear as ORT's
                     quantizer writes it: uint8 activations per tensor, int8 weights per output
                     channel (7-bit, symmetric, as reduce_range writes), int32 biases at scale
                     x_scale * w_scale; seeded weights, activation scales from each layer's
                     expected spread
  fp32_resnet_convs  the same network in float32 with the dequantized weights

bench/compare_ort.py --models OUTDIR --model qdq_resnet_convs times either against ORT.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (input channels, output channels, stride) of each 3x3 conv; the plane starts at 224x224.
LAYERS = [(3, 64, 4), (64, 64, 1), (64, 64, 1), (64, 128, 2), (128, 128, 1), (128, 128, 1),
          (128, 256, 2), (256, 256, 1), (256, 256, 1), (256, 512, 2), (512, 512, 1)]


def build(quantized, seed=7):
    rs = np.random.RandomState(seed)
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    x = "x"
    act_s, spread = np.float32(4.0 / 255), 1.0  # the input: N(0, 1) quantized at 128
    if quantized:
        nodes.append(helper.make_node("QuantizeLinear", [x, const("in_s", act_s),
                                                         const("in_z", np.uint8(128))], ["q0"]))
        x, act_z = "q0", np.uint8(128)
    for i, (cin, cout, stride) in enumerate(LAYERS):
        w = (rs.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))).astype(np.float32)
        w_s = (np.abs(w).reshape(cout, -1).max(axis=1) / 63).astype(np.float32)
        wq = np.clip(np.round(w / w_s.reshape(-1, 1, 1, 1)), -63, 63).astype(np.int8)
        b = (rs.standard_normal(cout) * 0.05).astype(np.float32)
        bq = np.round(b / (act_s * w_s)).astype(np.int32)
        out_spread = spread * np.sqrt(2.0) / 2 + 0.05
        y_s = np.float32(6 * out_spread / 255)
        attrs = dict(pads=[1, 1, 1, 1], strides=[stride, stride])
        if quantized:
            dq = helper.make_node("DequantizeLinear", [x, const("x%d_s" % i, act_s),
                                                      const("x%d_z" % i, act_z)], ["dq%d" % i])
            dw = helper.make_node("DequantizeLinear", [const("w%d" % i, wq),
                                                       const("w%d_s" % i, w_s),
                                                       const("w%d_z" % i, np.zeros(cout, np.int8))],
                                  ["dw%d" % i], axis=0)
            db = helper.make_node("DequantizeLinear", [const("b%d" % i, bq),
                                                       const("b%d_s" % i, act_s * w_s),
                                                       const("b%d_z" % i, np.zeros(cout, np.int32))],
                                  ["db%d" % i], axis=0)
            conv = helper.make_node("Conv", ["dq%d" % i, "dw%d" % i, "db%d" % i], ["c%d" % i],
                                    **attrs)
            relu = helper.make_node("Relu", ["c%d" % i], ["r%d" % i])
            q = helper.make_node("QuantizeLinear", ["r%d" % i, const("y%d_s" % i, y_s),
                                                    const("y%d_z" % i, np.uint8(0))],
                                 ["q%d" % (i + 1)])
            nodes += [dq, dw, db, conv, relu, q]
            x, act_z = "q%d" % (i + 1), np.uint8(0)
        else:
            wf = (wq.astype(np.float32) * w_s.reshape(-1, 1, 1, 1)).astype(np.float32)
            bf = (bq.astype(np.float32) * act_s * w_s).astype(np.float32)
            nodes.append(helper.make_node("Conv", [x, const("w%d" % i, wf), const("b%d" % i, bf)],
                                          ["c%d" % i], **attrs))
            nodes.append(helper.make_node("Relu", ["c%d" % i], ["r%d" % i]))
            x = "r%d" % i
        act_s, spread = y_s, out_spread
    if quantized:
        nodes.append(helper.make_node("DequantizeLinear", [x, const("out_s", act_s),
                                                           const("out_z", np.uint8(0))], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", [x], ["y"]))
    name = ("qdq" if quantized else "fp32") + "_resnet_convs"
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, 7, 7])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return name, model


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    for quantized in (True, False):
        name, model = build(quantized)
        onnx.save(model, os.path.join(argv[1], name + ".onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
