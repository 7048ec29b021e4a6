"""ember.compile: ONNX -> artifact, run from Python, bit-identical to the C++ path (ember-run)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import compiler
from ember._ffi import base

from conftest import REPO


def _compiler_or_skip():
    base.load_compiler_lib()
    if ember.get_global_func(compiler.COMPILE_GLOBAL, allow_missing=True) is None and \
            compiler.find_emberc() is None:
        pytest.skip("compiler not built: neither libember_compiler.so (global %r) nor emberc found "
                    "(%s)" % (compiler.COMPILE_GLOBAL, base.compiler_lib_error()))


def _model(graph, opset=13):
    """An onnx.helper graph as a model of opset `opset`, IR 7."""
    from onnx import helper
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


def _dump_ir(tmp_path, model, target=None):
    """Compiles a ModelProto with `emberc compile --dump-ir` (for `target`, else the host);
    returns the dump directory."""
    _compiler_or_skip()
    emberc = compiler.find_emberc()
    if emberc is None:
        pytest.skip("emberc not built")
    path = tmp_path / "dumped.onnx"
    path.write_bytes(model.SerializeToString())
    target_args = ["--target", target] if target else []
    subprocess.run([emberc, "compile", str(path), "-o", str(tmp_path / "dumped"), "--dump-ir",
                    str(tmp_path / "ir")] + target_args, check=True, stdout=subprocess.DEVNULL)
    return tmp_path / "ir"


def _run_graph(tmp_path, graph, opset=13, **inputs):
    """Compiles an onnx.helper graph (opset `opset`, IR 7) from Python, runs it on `inputs` and
    returns its outputs as numpy arrays."""
    _compiler_or_skip()
    model = _model(graph, opset)
    path = tmp_path / (graph.name + ".onnx")
    path.write_bytes(model.SerializeToString())
    gmod = ember.load_artifact(ember.compile(str(path)).export(str(tmp_path / graph.name)))
    gmod.set_input(**inputs)
    gmod.run()
    return [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]


def _ember_run_or_skip():
    path = os.path.join(os.path.dirname(os.path.dirname(base.RUNTIME_LIB_PATH)), "bin", "ember-run")
    if not os.path.isfile(path):
        pytest.skip("ember-run not built (looked for %s)" % path)
    return path


@pytest.fixture(scope="module")
def cnn_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "models", "gen_models.py"),
                    str(out), "--only", "cnn"], check=True, stdout=subprocess.DEVNULL)
    return str(out / "cnn.onnx")


def test_compile_argument_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.onnx"):
        ember.compile(str(tmp_path / "absent.onnx"))
    with pytest.raises(ValueError, match="opt_level"):
        ember.compile(str(tmp_path / "absent.onnx"), opt_level=7)
    with pytest.raises(TypeError, match="input_shapes"):
        ember.compile(str(tmp_path / "absent.onnx"), input_shapes=[1, 2])


def test_compile_of_a_malformed_model_names_it(tmp_path):
    _compiler_or_skip()
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x08\x07 this is not a protobuf")
    with pytest.raises(ember.EmberError, match="garbage.onnx"):
        ember.compile(str(bad))


def test_compile_run_and_match_the_cpp_path_bit_for_bit(cnn_model, tmp_path):
    _compiler_or_skip()
    artifact = ember.compile(cnn_model, target="llvm", input_shapes={"input": (1, 3, 32, 32)})
    exported = artifact.export(str(tmp_path / "artifact"))
    assert sorted(os.listdir(exported)) == ["graph.json", "lib.so", "params.bin"]

    x = np.random.RandomState(0).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    gmod = ember.load_artifact(exported)
    gmod.set_input(input=x)
    gmod.run()
    out = gmod.get_output(0).numpy()
    assert out.shape == (1, 10) and np.isfinite(out).all()

    ember_run = _ember_run_or_skip()
    np.save(str(tmp_path / "input.npy"), x)
    subprocess.run([ember_run, exported, "--input", "input=%s" % (tmp_path / "input.npy"),
                    "--output-dir", str(tmp_path / "cpp")], check=True, stdout=subprocess.DEVNULL)
    cpp = np.load(str(tmp_path / "cpp" / "output_0.npy"))
    assert cpp.dtype == out.dtype and cpp.shape == out.shape
    assert cpp.tobytes() == out.tobytes()  # bit for bit


def test_export_library_single_file_matches_the_directory(cnn_model, tmp_path):
    _compiler_or_skip()
    artifact = ember.compile(cnn_model, input_shapes={"input": (1, 3, 32, 32)})
    single = artifact.export_library(str(tmp_path / "cnn.so"))
    x = np.random.RandomState(1).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    outputs = []
    for gmod in (artifact.load(), ember.load_artifact(single)):
        gmod.run(input=x)
        outputs.append(gmod.get_output(0).numpy())
    assert outputs[0].tobytes() == outputs[1].tobytes()


def test_export_library_needs_a_compiled_artifact(add_relu_artifact, tmp_path):
    with pytest.raises(ember.EmberError, match="ember.compile"):
        ember.Artifact(add_relu_artifact).export_library(str(tmp_path / "x.so"))


@pytest.fixture(scope="module")
def bound_rate_models(tmp_path_factory):
    out = tmp_path_factory.mktemp("exported")
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "models", "gen_exported.py"),
                    str(out)], check=True, stdout=subprocess.DEVNULL)
    return str(out)


def test_bind_folds_an_if_and_the_bound_input_is_refused_at_run_time(bound_rate_models):
    _compiler_or_skip()
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    outputs = {}
    for rate in (16000, 8000):
        art = ember.compile(os.path.join(bound_rate_models, "if_bound_%d.onnx" % rate),
                            bind={"sr": rate})
        gmod = ember.load_artifact(art.export(os.path.join(bound_rate_models, "art%d" % rate)))
        with pytest.raises(ember.EmberError, match="was bound to %d at compile time" % rate):
            gmod.set_input(sr=np.array(rate, dtype=np.int64))
        gmod.set_input(x=x)
        gmod.run()
        outputs[rate] = gmod.get_output(0).numpy()
    # 16 kHz: sigmoid of a product, in (0, 1); 8 kHz: relu of another, >= 0 with zeros.
    assert ((outputs[16000] > 0) & (outputs[16000] < 1)).all()
    assert not np.allclose(outputs[16000], outputs[8000])
    with pytest.raises(TypeError, match="bind"):
        ember.compile(os.path.join(bound_rate_models, "if_bound_8000.onnx"), bind=["sr"])


def test_compile_a_model_with_external_data_matches_embedded_weights(cnn_model, tmp_path):
    _compiler_or_skip()
    import onnx
    model = onnx.load(cnn_model)
    ext_dir = tmp_path / "ext"
    (ext_dir / "weights").mkdir(parents=True)
    onnx.save_model(model, str(ext_dir / "cnn.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights/cnn.data", size_threshold=0)
    assert (ext_dir / "weights" / "cnn.data").stat().st_size > 0
    shapes = {"input": (1, 3, 32, 32)}
    x = np.random.RandomState(1).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    outs = []
    for path in (cnn_model, str(ext_dir / "cnn.onnx")):
        gmod = ember.load_artifact(ember.compile(path, input_shapes=shapes).export(
            str(tmp_path / ("out%d" % len(outs)))))
        gmod.run(input=x)
        outs.append(gmod.get_output(0).numpy())
    assert outs[0].tobytes() == outs[1].tobytes()

    # A location outside the model's directory is refused, naming the tensor.
    (tmp_path / "outside.data").write_bytes((ext_dir / "weights" / "cnn.data").read_bytes())
    escaped = onnx.load(str(ext_dir / "cnn.onnx"), load_external_data=False)
    tensor = next(t for t in escaped.graph.initializer
                  if t.data_location == onnx.TensorProto.EXTERNAL)
    for entry in tensor.external_data:
        if entry.key == "location":
            entry.value = "../outside.data"
    with open(str(ext_dir / "escaped.onnx"), "wb") as f:
        f.write(escaped.SerializeToString())
    with pytest.raises(ember.EmberError, match="tensor '%s': external data location "
                       "'../outside.data' contains '..'" % tensor.name):
        ember.compile(str(ext_dir / "escaped.onnx"), input_shapes=shapes)


def test_ember_run_fills_float16_inputs_with_seeded_values_in_range(tmp_path):
    """Inputs not given are random for float16 too, not zeros: a float16 model's outputs must
    depend on them for a benchmark or a smoke run to mean anything."""
    from onnx import TensorProto, helper
    _compiler_or_skip()
    ember_run = _ember_run_or_skip()
    graph = helper.make_graph(
        [helper.make_node("Cast", ["h"], ["h32"], to=TensorProto.FLOAT)], "halves",
        [helper.make_tensor_value_info("h", TensorProto.FLOAT16, [64])],
        [helper.make_tensor_value_info("h32", TensorProto.FLOAT, [64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    (tmp_path / "halves.onnx").write_bytes(model.SerializeToString())
    art = ember.compile(str(tmp_path / "halves.onnx")).export(str(tmp_path / "art"))

    def output(seed):
        out = tmp_path / ("out%d" % seed)
        subprocess.run([ember_run, art, "--seed", str(seed), "--output-dir", str(out)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return np.load(str(out / "output_0.npy"))

    first = output(0)
    assert ((first >= -1) & (first < 1)).all()
    assert len(np.unique(first)) > 32  # spread over the range, not a constant
    assert (first.astype(np.float16).astype(np.float32) == first).all()  # halves, widened
    assert output(0).tobytes() == first.tobytes()
    assert output(1).tobytes() != first.tobytes()
