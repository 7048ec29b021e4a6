"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (compiler/transform/canonical_loss.cc)
against numpy on what the ONNX node tests leave out: int32 labels, an ignore_index that also
appears among the labels next to class weights, both outputs, and labels outside the classes,
which run() refuses naming the node rather than reading another class."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ember
from test_compile import _run_graph

RNG = np.random.default_rng(11)


def _sce_graph(reduction, ignore_index):
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "labels", "w"],
                            ["loss", "log_prob"], reduction=reduction,
                            ignore_index=ignore_index)
    out_shape = [4, 3] if reduction == "none" else []
    return helper.make_graph([node], "sce_" + reduction, [
        helper.make_tensor_value_info("scores", TensorProto.FLOAT, [4, 5, 3]),
        helper.make_tensor_value_info("labels", TensorProto.INT32, [4, 3]),
        helper.make_tensor_value_info("w", TensorProto.FLOAT, [5])], [
        helper.make_tensor_value_info("loss", TensorProto.FLOAT, out_shape),
        helper.make_tensor_value_info("log_prob", TensorProto.FLOAT, [4, 5, 3])])


def _reference(scores, labels, w, reduction, ignore_index):
    shifted = scores - scores.max(axis=1, keepdims=True)
    log_prob = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    kept = labels != ignore_index
    safe = np.where(kept, labels, 0)
    picked = np.take_along_axis(log_prob, safe[:, None, :], axis=1)[:, 0, :]
    weight = np.where(kept, w[safe], 0)
    loss = -picked * weight
    if reduction == "none":
        return loss, log_prob
    if reduction == "sum":
        return loss.sum(), log_prob
    return loss.sum() / weight.sum(), log_prob


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_softmax_cross_entropy_with_weights_and_an_ignored_class(tmp_path, reduction):
    scores = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    labels = RNG.integers(0, 5, (4, 3)).astype(np.int32)
    labels[0, 0] = labels[2, 1] = 3  # the ignored class, among the others
    w = RNG.uniform(0.5, 2.0, 5).astype(np.float32)
    loss, log_prob = _run_graph(tmp_path, _sce_graph(reduction, 3), opset=13, scores=scores,
                                labels=labels, w=w)
    want_loss, want_log_prob = _reference(scores, labels, w, reduction, 3)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_prob, want_log_prob, rtol=1e-5, atol=1e-6)


def test_a_label_outside_the_classes_is_refused_at_run_time(tmp_path):
    scores = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    labels = np.zeros((4, 3), np.int32)
    labels[1, 2] = 7
    w = np.ones(5, np.float32)
    with pytest.raises(ember.EmberError, match="SoftmaxCrossEntropyLoss.*outside -5..4.*: 7"):
        _run_graph(tmp_path, _sce_graph("mean", -100), opset=13, scores=scores, labels=labels,
                   w=w)
