#!/usr/bin/python3
"""Write Ember's test and benchmark models: seeded random weights, ONNX opset 13, float32.

Usage:  gen_models.py OUTDIR [--only NAME]

  mlp          [1,784] -> Gemm 256 -> Relu -> Gemm 128 -> Relu -> Gemm 10 -> Softmax
  mlp_batch64  [64,512] -> Gemm 1024 -> Relu -> Gemm 1024 -> Relu -> Gemm 10: dense products
               with many rows (a batch), where a matrix-product kernel matters
  cnn          [1,3,32,32]: 3 x (Conv3x3 + Relu + MaxPool2) -> Flatten -> Gemm 64 -> Relu -> Gemm 10
  resnet18     [1,3,224,224]: ResNet-18 (conv-bn-relu stem, maxpool, 8 basic blocks with
               residual Add, GlobalAveragePool, Flatten, Gemm 1000)
  mobilenetv2  [1,3,224,224]: MobileNetV2 width 1.0 (inverted residual blocks, depthwise
               convs, ReLU6 as Clip(0, 6), GlobalAveragePool, Flatten, Gemm 1000)
  mobilenetv3  [1,3,224,224]: MobileNetV3-Large (3x3 and 5x5 depthwise convs, squeeze-and-
               excitation blocks, hard-swish as x * HardSigmoid(x) the way opset-13 exporters
               write it, channel counts such as 40, 72 and 184 that 16-wide blocks do not divide)

Each model has one graph input "input" and one graph output "output".  The
large models are laid out the way exporters write them: bias-free Conv then a
separate BatchNormalization (the compiler has to fold it), ReLU6 as Clip with
min/max given as constant inputs, Gemm with transB=1.

Weights come from NumPy's legacy RandomState (its stream is frozen across
NumPy versions) with one seed per model, so every run writes byte-identical
files.  Initialisation keeps activations near unit scale on uniform [-1, 1)
inputs: He-scaled conv/dense weights, BatchNorm statistics near identity, and
a small gamma on the BatchNorm that closes each residual branch.

For each file a line with the parameter count and FLOPs (2 x MACs of Conv and
Gemm) is printed.
"""

import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, checker, helper, numpy_helper

OPSET = 13
IR_VERSION = 7  # the lowest IR version that can carry opset 13


class Net(object):
    """Builds a graph layer by layer; knows every tensor's shape."""

    def __init__(self, name, seed, input_shape):
        self.name = name
        self.rs = np.random.RandomState(seed)
        self.nodes = []
        self.weights = []
        self.shape = {"input": tuple(input_shape)}
        self.input_shape = tuple(input_shape)
        self.params = 0
        self.macs = 0
        self.count = {}

    def fresh(self, kind):
        n = self.count.get(kind, 0)
        self.count[kind] = n + 1
        return "%s%d" % (kind, n)

    def weight(self, kind, array, counted=True):
        name = self.fresh(kind)
        array = np.ascontiguousarray(array, dtype=np.float32)
        self.weights.append(numpy_helper.from_array(array, name))
        self.shape[name] = array.shape
        if counted:
            self.params += array.size
        return name

    def emit(self, op, inputs, shape, **attrs):
        out = self.fresh(op.lower() + "_")
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        self.shape[out] = tuple(shape)
        return out

    # Layers ----------------------------------------------------------------

    def conv(self, x, out_ch, k, stride=1, pad=None, groups=1, bias=False, relu_before=True):
        n, in_ch, h, w = self.shape[x]
        pad = k // 2 if pad is None else pad
        fan_in = in_ch // groups * k * k
        scale = np.sqrt((2.0 if relu_before else 1.0) / fan_in)
        inputs = [x, self.weight("w", self.rs.standard_normal((out_ch, in_ch // groups, k, k))
                                 * scale)]
        if bias:
            inputs.append(self.weight("b", self.rs.uniform(-0.05, 0.05, out_ch)))
        oh = (h + 2 * pad - k) // stride + 1
        ow = (w + 2 * pad - k) // stride + 1
        self.macs += n * out_ch * oh * ow * fan_in
        return self.emit("Conv", inputs, (n, out_ch, oh, ow), kernel_shape=[k, k],
                         strides=[stride, stride], pads=[pad] * 4, group=groups)

    def bn(self, x, gamma=1.0):
        ch = self.shape[x][1]
        rs = self.rs
        inputs = [x,
                  self.weight("gamma", gamma * rs.uniform(0.9, 1.1, ch)),
                  self.weight("beta", rs.uniform(-0.1, 0.1, ch)),
                  self.weight("mean", rs.uniform(-0.1, 0.1, ch), counted=False),
                  self.weight("var", rs.uniform(0.8, 1.2, ch), counted=False)]
        return self.emit("BatchNormalization", inputs, self.shape[x], epsilon=1e-5)

    def relu(self, x):
        return self.emit("Relu", [x], self.shape[x])

    def relu6(self, x):
        if "relu6_lo" not in self.shape:
            for name, value in (("relu6_lo", 0.0), ("relu6_hi", 6.0)):
                self.weights.append(numpy_helper.from_array(np.array(value, np.float32), name))
                self.shape[name] = ()
        return self.emit("Clip", [x, "relu6_lo", "relu6_hi"], self.shape[x])

    def hard_sigmoid(self, x):
        return self.emit("HardSigmoid", [x], self.shape[x], alpha=1.0 / 6, beta=0.5)

    def hard_swish(self, x):
        return self.emit("Mul", [x, self.hard_sigmoid(x)], self.shape[x])

    def squeeze_excite(self, x):
        """x times a per-channel scale computed from its global average (SE block)."""
        ch = self.shape[x][1]
        squeezed = max(8, (ch // 4 + 4) // 8 * 8)  # a quarter, to a multiple of 8,
        if squeezed < 0.9 * (ch // 4):             # not 10% below it
            squeezed += 8
        s = self.relu(self.conv(self.global_avgpool(x), squeezed, 1, bias=True,
                                relu_before=False))
        s = self.hard_sigmoid(self.conv(s, ch, 1, bias=True))
        return self.emit("Mul", [x, s], self.shape[x])

    def add(self, a, b):
        assert self.shape[a] == self.shape[b], (self.shape[a], self.shape[b])
        return self.emit("Add", [a, b], self.shape[a])

    def maxpool(self, x, k, stride, pad=0):
        n, c, h, w = self.shape[x]
        oh = (h + 2 * pad - k) // stride + 1
        ow = (w + 2 * pad - k) // stride + 1
        return self.emit("MaxPool", [x], (n, c, oh, ow), kernel_shape=[k, k],
                         strides=[stride, stride], pads=[pad] * 4)

    def global_avgpool(self, x):
        n, c = self.shape[x][:2]
        return self.emit("GlobalAveragePool", [x], (n, c, 1, 1))

    def flatten(self, x):
        s = self.shape[x]
        return self.emit("Flatten", [x], (s[0], int(np.prod(s[1:]))), axis=1)

    def dense(self, x, out_features, relu_before=True):
        n, in_features = self.shape[x]
        scale = np.sqrt((2.0 if relu_before else 1.0) / in_features)
        w = self.weight("fc_w", self.rs.standard_normal((out_features, in_features)) * scale)
        b = self.weight("fc_b", self.rs.uniform(-0.05, 0.05, out_features))
        self.macs += n * in_features * out_features
        return self.emit("Gemm", [x, w, b], (n, out_features), transB=1)

    def softmax(self, x):
        return self.emit("Softmax", [x], self.shape[x], axis=1)

    # Result ----------------------------------------------------------------

    def model(self, last):
        assert self.nodes[-1].output[0] == last
        self.nodes[-1].output[0] = "output"
        self.shape["output"] = self.shape[last]
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(self.input_shape))],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, list(self.shape[last]))],
            initializer=self.weights)
        model = helper.make_model(graph, producer_name="ember tests/models/gen_models.py",
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        model.doc_string = "%s with seeded random weights (untrained), for Ember's tests" % self.name
        return model


def mlp():
    net = Net("mlp", seed=101, input_shape=(1, 784))
    x = net.relu(net.dense("input", 256, relu_before=False))
    x = net.relu(net.dense(x, 128))
    return net, net.softmax(net.dense(x, 10))


def mlp_batch64():
    net = Net("mlp_batch64", seed=105, input_shape=(64, 512))
    x = net.relu(net.dense("input", 1024, relu_before=False))
    x = net.relu(net.dense(x, 1024))
    return net, net.dense(x, 10)


def cnn():
    net = Net("cnn", seed=102, input_shape=(1, 3, 32, 32))
    x = "input"
    first = True
    for ch in (16, 32, 64):  # 32 -> 16 -> 8 -> 4
        x = net.maxpool(net.relu(net.conv(x, ch, 3, bias=True, relu_before=not first)), 2, 2)
        first = False
    x = net.relu(net.dense(net.flatten(x), 64))
    return net, net.dense(x, 10)


def resnet18():
    net = Net("resnet18", seed=103, input_shape=(1, 3, 224, 224))
    x = net.relu(net.bn(net.conv("input", 64, 7, stride=2, pad=3, relu_before=False)))
    x = net.maxpool(x, 3, 2, pad=1)
    for width, first_stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for stride in (first_stride, 1):
            shortcut = x
            y = net.relu(net.bn(net.conv(x, width, 3, stride=stride)))
            y = net.bn(net.conv(y, width, 3), gamma=0.4)
            if stride != 1 or net.shape[x][1] != width:
                shortcut = net.bn(net.conv(x, width, 1, stride=stride))
            x = net.relu(net.add(y, shortcut))
    x = net.flatten(net.global_avgpool(x))
    return net, net.dense(x, 1000, relu_before=False)


def mobilenetv2():
    net = Net("mobilenetv2", seed=104, input_shape=(1, 3, 224, 224))
    x = net.relu6(net.bn(net.conv("input", 32, 3, stride=2, relu_before=False)))
    # (expansion t, output channels c, repeats n, stride of the first repeat s)
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            in_ch = net.shape[x][1]
            y = x
            if t != 1:
                y = net.relu6(net.bn(net.conv(y, in_ch * t, 1, relu_before=False)))
            hidden = net.shape[y][1]
            y = net.relu6(net.bn(net.conv(y, hidden, 3, stride=stride, groups=hidden)))
            residual = stride == 1 and in_ch == c
            y = net.bn(net.conv(y, c, 1), gamma=0.4 if residual else 1.0)
            x = net.add(x, y) if residual else y
    x = net.relu6(net.bn(net.conv(x, 1280, 1, relu_before=False)))
    x = net.flatten(net.global_avgpool(x))
    return net, net.dense(x, 1000, relu_before=False)


def mobilenetv3():
    net = Net("mobilenetv3", seed=105, input_shape=(1, 3, 224, 224))
    x = net.hard_swish(net.bn(net.conv("input", 16, 3, stride=2, relu_before=False)))
    # MobileNetV3-Large: (kernel, expanded channels, output channels, SE, hard-swish, stride)
    for k, hidden, c, se, hs, s in (
            (3, 16, 16, 0, 0, 1), (3, 64, 24, 0, 0, 2), (3, 72, 24, 0, 0, 1),
            (5, 72, 40, 1, 0, 2), (5, 120, 40, 1, 0, 1), (5, 120, 40, 1, 0, 1),
            (3, 240, 80, 0, 1, 2), (3, 200, 80, 0, 1, 1), (3, 184, 80, 0, 1, 1),
            (3, 184, 80, 0, 1, 1), (3, 480, 112, 1, 1, 1), (3, 672, 112, 1, 1, 1),
            (5, 672, 160, 1, 1, 2), (5, 960, 160, 1, 1, 1), (5, 960, 160, 1, 1, 1)):
        act = net.hard_swish if hs else net.relu
        in_ch = net.shape[x][1]
        y = x
        if hidden != in_ch:
            y = act(net.bn(net.conv(y, hidden, 1, relu_before=False)))
        y = act(net.bn(net.conv(y, hidden, k, stride=s, groups=hidden)))
        if se:
            y = net.squeeze_excite(y)
        residual = s == 1 and in_ch == c
        y = net.bn(net.conv(y, c, 1), gamma=0.4 if residual else 1.0)
        x = net.add(x, y) if residual else y
    x = net.hard_swish(net.bn(net.conv(x, 960, 1, relu_before=False)))
    x = net.flatten(net.global_avgpool(x))
    x = net.hard_swish(net.dense(x, 1280, relu_before=False))
    return net, net.dense(x, 1000, relu_before=False)


MODELS = {"mlp": mlp, "mlp_batch64": mlp_batch64, "cnn": cnn, "resnet18": resnet18,
          "mobilenetv2": mobilenetv2, "mobilenetv3": mobilenetv3}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", choices=sorted(MODELS), action="append",
                    help="write only this model (repeatable)")
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    for name in args.only or list(MODELS):
        start = time.time()
        net, last = MODELS[name]()
        model = net.model(last)
        checker.check_model(model, full_check=True)
        path = os.path.join(args.outdir, name + ".onnx")
        tmp = path + ".tmp"
        onnx.save(model, tmp)
        os.replace(tmp, path)
        print("%-40s params=%-9d flops=%-11d input=%s output=%s bytes=%d (%.2f s)" % (
            path, net.params, 2 * net.macs, "x".join(map(str, net.input_shape)),
            "x".join(map(str, net.shape["output"])), os.path.getsize(path), time.time() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
