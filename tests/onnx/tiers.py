#!/usr/bin/python3
"""Sort ONNX backend node test cases into tiers: core, extended, other.

Usage:  tiers.py [CORPUS] [--check MANIFEST.tsv] [--tier T]

A case's tier is decided by what its graph contains (subgraphs included),
with the first matching rule winning:

  other     an op from OTHER_OPS (control flow, sequences/optionals, training
            losses, random generators, string ops, integer/quantized math), an
            op outside the default ai.onnx domain, a non-tensor graph input or
            output (sequence/optional/map), or a string tensor;
  core      every op in CORE_OPS and every graph input/output dtype in
            CORE_DTYPES -- what an edge CNN/MLP compiler must handle first;
  extended  the rest that has at least one floating graph input or output;
  other     the rest (integer/bool-only graphs).

Graph inputs that are also initializers do not count as inputs.  An
*_expanded case is classified by its own graph, like any other.

Without --check, prints one line per case: name, tier, ops, input and output
dtypes.  With --check, compares against a manifest (tab separated, header row
with "case" and "tier" columns, '#' comments) and reports every case whose
tier differs; exit status 1 if any does.
"""

import argparse
import os
import sys

import onnx
from onnx import TensorProto

TIERS = ("core", "extended", "other")

CORE_OPS = frozenset("""
    Abs Add ArgMax ArgMin AveragePool BatchNormalization Cast CastLike Clip Concat Constant
    ConstantOfShape Conv ConvTranspose DepthToSpace Div Dropout Elu Equal Erf Exp Expand Flatten
    Gather Gelu Gemm GlobalAveragePool GlobalMaxPool Greater GreaterOrEqual HardSigmoid HardSwish
    Identity InstanceNormalization LRN LayerNormalization LeakyRelu Less LessOrEqual Log LogSoftmax
    MatMul Max MaxPool Mean Min Mul Neg PRelu Pad Pow Reciprocal ReduceMax ReduceMean ReduceMin
    ReduceSum Relu Reshape Resize Selu Shape Sigmoid Size Slice Softmax Softplus SpaceToDepth Split
    Sqrt Squeeze Sub Sum Tanh Tile Transpose Unsqueeze Upsample Where
""".split())
assert len(CORE_OPS) == 78

CORE_DTYPES = frozenset(["float32", "int32", "int64", "bool"])
FLOAT_DTYPES = frozenset(["float16", "bfloat16", "float32", "float64"])

OTHER_OPS = frozenset("""
    If Loop Scan SequenceMap
    SequenceAt SequenceConstruct SequenceEmpty SequenceErase SequenceInsert SequenceLength
    SplitToSequence ConcatFromSequence Optional OptionalGetElement OptionalHasElement
    NegativeLogLikelihoodLoss SoftmaxCrossEntropyLoss
    Bernoulli Multinomial RandomNormal RandomNormalLike RandomUniform RandomUniformLike
    StringNormalizer TfIdfVectorizer
    ConvInteger MatMulInteger QLinearConv QLinearMatMul QuantizeLinear DequantizeLinear
    DynamicQuantizeLinear
""".split())

DEFAULT_DOMAINS = ("", "ai.onnx")


def dtype_name(elem_type):
    """TensorProto element type -> numpy-style name ('float32', 'bfloat16', 'string', ...)."""
    if elem_type == TensorProto.BFLOAT16:
        return "bfloat16"
    if elem_type == TensorProto.STRING:
        return "string"
    if elem_type == TensorProto.BOOL:
        return "bool"
    try:
        return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type].name
    except KeyError:
        return "elem_type_%d" % elem_type


def value_kind(type_proto):
    """'tensor:<dtype>' for tensors, else the TypeProto kind ('sequence_type', ...)."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return "tensor:" + dtype_name(type_proto.tensor_type.elem_type)
    return kind or "undefined"


def graph_ops(graph, found=None):
    """Set of op names in graph and its subgraphs; non-default domains as 'domain:Op'."""
    found = set() if found is None else found
    for node in graph.node:
        if node.domain in DEFAULT_DOMAINS:
            found.add(node.op_type)
        else:
            found.add(node.domain + ":" + node.op_type)
        for attr in node.attribute:
            if attr.HasField("g"):
                graph_ops(attr.g, found)
            for sub in attr.graphs:
                graph_ops(sub, found)
    return found


class CaseInfo(object):
    """What the tier rules look at, for one model."""

    def __init__(self, model):
        graph = model.graph
        initialized = {t.name for t in graph.initializer}
        self.inputs = [v for v in graph.input if v.name not in initialized]
        self.outputs = list(graph.output)
        self.input_kinds = [value_kind(v.type) for v in self.inputs]
        self.output_kinds = [value_kind(v.type) for v in self.outputs]
        self.ops = graph_ops(graph)
        self.tier = self._tier()

    def io_dtypes(self):
        return [k.split(":", 1)[1] for k in self.input_kinds + self.output_kinds
                if k.startswith("tensor:")]

    def non_tensor_io(self):
        """Names of graph inputs/outputs that are not plain tensors."""
        return [v.name for v, k in zip(self.inputs + self.outputs,
                                        self.input_kinds + self.output_kinds)
                if not k.startswith("tensor:")]

    def _tier(self):
        dtypes = set(self.io_dtypes())
        foreign_domain = any(":" in op for op in self.ops)
        if (foreign_domain or self.ops & OTHER_OPS or self.non_tensor_io()
                or "string" in dtypes):
            return "other"
        if self.ops <= CORE_OPS and dtypes <= CORE_DTYPES:
            return "core"
        if dtypes & FLOAT_DTYPES:
            return "extended"
        return "other"


def classify_file(path):
    return CaseInfo(onnx.load(path))


def list_cases(corpus):
    """Sorted names of case folders (those holding a model.onnx) under corpus."""
    return sorted(c for c in os.listdir(corpus)
                  if os.path.isfile(os.path.join(corpus, c, "model.onnx")))


def node_dir(corpus):
    """Accept either the corpus root (holding node/) or the node/ folder itself."""
    sub = os.path.join(corpus, "node")
    return sub if os.path.isdir(sub) else corpus


def read_manifest_tiers(path):
    header = None
    tiers = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if header is None:
                header = cols
                if "case" not in header or "tier" not in header:
                    raise ValueError("%s: header lacks 'case'/'tier' columns: %r" % (path, header))
                continue
            row = dict(zip(header, cols))
            tiers[row["case"]] = row["tier"]
    return tiers


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=os.path.join("build", "onnx-corpus"))
    ap.add_argument("--check", metavar="MANIFEST", help="compare with a manifest's tier column")
    ap.add_argument("--tier", choices=TIERS, help="list only this tier")
    args = ap.parse_args(argv)

    root = node_dir(args.corpus)
    if not os.path.isdir(root):
        print("tiers.py: corpus folder %s does not exist (run tests/onnx/gen_corpus.py)" % root,
              file=sys.stderr)
        return 2
    cases = list_cases(root)
    infos = {c: classify_file(os.path.join(root, c, "model.onnx")) for c in cases}

    counts = {t: sum(1 for i in infos.values() if i.tier == t) for t in TIERS}
    if args.check:
        want = read_manifest_tiers(args.check)
        mismatches = [(c, infos[c].tier, want[c]) for c in cases if c in want
                      and want[c] != infos[c].tier]
        unknown = [c for c in cases if c not in want]
        for c, got, exp in mismatches:
            print("MISMATCH %s: classified %s, manifest says %s" % (c, got, exp))
        for c in unknown:
            print("NOT IN MANIFEST %s (classified %s)" % (c, infos[c].tier))
        print("%d cases (%s); %d compared with %s, %d mismatches, %d not in manifest" % (
            len(cases), ", ".join("%s=%d" % kv for kv in counts.items()),
            len(cases) - len(unknown), args.check, len(mismatches), len(unknown)))
        return 1 if mismatches or unknown else 0

    for c in cases:
        info = infos[c]
        if args.tier and info.tier != args.tier:
            continue
        print("%s\t%s\t%s\t%s\t%s" % (c, info.tier, ",".join(sorted(info.ops)),
                                      ",".join(info.input_kinds) or "-",
                                      ",".join(info.output_kinds) or "-"))
    print("%d cases (%s)" % (len(cases), ", ".join("%s=%d" % kv for kv in counts.items())),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
