"""ember.runtime: kernel modules and the graph executor on a hand-written artifact (no compiler)."""
import os
import shutil

import numpy as np
import pytest

import ember


def test_load_module_and_call_a_kernel(kernel_lib):
    mod = ember.load_module(kernel_lib)
    a = ember.nd.array(np.array([1, 2, 3], dtype="float32"))
    b = np.array([10, 20, 30], dtype="float32")  # numpy arrays travel as DLTensor*
    out = ember.nd.empty((3,), "float32")
    mod["add_f32"](a, b, out)
    np.testing.assert_array_equal(out.numpy(), [11, 22, 33])
    assert mod.get_function("twice_int")(21) == 42


def test_kernel_writes_into_a_numpy_array_in_place(kernel_lib):
    mod = ember.load_module(kernel_lib)
    out = np.zeros(4, dtype="float32")
    mod["relu_f32"](np.array([-1, 2, -3, 4], dtype="float32"), out)
    np.testing.assert_array_equal(out, [0, 2, 0, 4])


def test_missing_function_is_an_attribute_error_naming_it(kernel_lib):
    mod = ember.load_module(kernel_lib)
    with pytest.raises(AttributeError, match="no_such_kernel"):
        mod["no_such_kernel"]
    assert mod.get_function("no_such_kernel", allow_missing=True) is None
    assert "add_f32" in mod and "no_such_kernel" not in mod


def test_kernel_error_message_reaches_python(kernel_lib):
    mod = ember.load_module(kernel_lib)
    with pytest.raises(ember.EmberError, match="refuses to run"):
        mod["always_fails"]()


def test_loading_a_file_that_is_not_a_library_names_the_file(tmp_path):
    bogus = tmp_path / "bogus.so"
    bogus.write_text("not an ELF file")
    with pytest.raises(ember.EmberError, match="bogus.so"):
        ember.load_module(str(bogus))
    with pytest.raises(FileNotFoundError, match="missing.so"):
        ember.load_module(str(tmp_path / "missing.so"))


def test_loading_a_directory_as_a_module_says_it_is_a_directory(tmp_path):
    with pytest.raises(ember.EmberError) as info:
        ember.load_module(str(tmp_path))
    message = str(info.value)
    assert "it is a directory" in message and "load_artifact" in message, message
    assert "Check failed" not in message, message


def _expected(x):
    w = np.array([[1, -2], [3, -4]], dtype="float32")
    return np.maximum(x + w, 0), x + w


def test_graph_module_set_input_run_get_output(add_relu_artifact):
    gmod = ember.load_artifact(add_relu_artifact)
    assert isinstance(gmod, ember.GraphModule)
    assert gmod.get_num_outputs() == 2
    x = np.array([[0.5, 0.5], [-5, 5]], dtype="float32")
    gmod.set_input(x=x)
    gmod.run()
    relu, add = _expected(x)
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), relu)
    np.testing.assert_array_equal(gmod.get_output(1).numpy(), add)
    # The positional form and NDArray inputs.
    gmod.set_input("x", ember.nd.array(np.ones((2, 2), dtype="float32")))
    gmod.run()
    np.testing.assert_array_equal(gmod.get_output(1).numpy(), _expected(np.ones((2, 2), "f"))[1])
    # run(**inputs) and get_output into a preallocated array.
    out = ember.nd.empty((2, 2), "float32")
    gmod.run(x=np.zeros((2, 2), dtype="float32"))
    gmod.get_output(0, out)
    np.testing.assert_array_equal(out.numpy(), _expected(np.zeros((2, 2), "f"))[0])


def test_graph_module_input_info(add_relu_artifact):
    gmod = ember.load_artifact(add_relu_artifact)
    info = gmod.get_input_info()
    assert info["shape"]["x"] == (2, 2)
    assert info["dtype"]["x"] == "float32"


def test_graph_module_errors_name_the_input(add_relu_artifact):
    gmod = ember.load_artifact(add_relu_artifact)
    with pytest.raises(ember.EmberError, match="nope"):
        gmod.set_input(nope=np.zeros((2, 2), dtype="float32"))
    with pytest.raises(ember.EmberError, match="float32"):
        gmod.set_input(x=np.zeros((2, 2), dtype="float64"))
    with pytest.raises(TypeError, match="missing the value"):
        gmod.set_input("x")
    with pytest.raises(TypeError, match="the key is None"):
        gmod.set_input(None, np.zeros((2, 2), dtype="float32"))


def test_an_input_never_set_holds_zeros(add_relu_artifact):
    # TVM's choice kept (run() does not demand every input) but defined: zeros, run after run.
    factory = ember.load_artifact(add_relu_artifact).factory
    for _ in range(4):  # leave freed storage full of non-zeros for the next executor to reuse
        dirty = ember.GraphModule(factory["default"](ember.cpu(0)))
        dirty.run(x=np.full((2, 2), 7.0, dtype="float32"))
        del dirty
    gmod = ember.GraphModule(factory["default"](ember.cpu(0)))
    relu, add = _expected(np.zeros((2, 2), dtype="float32"))
    for _ in range(3):
        gmod.run()
        np.testing.assert_array_equal(gmod.get_output(0).numpy(), relu)
        np.testing.assert_array_equal(gmod.get_output(1).numpy(), add)


def test_load_artifact_errors(tmp_path, add_relu_artifact):
    with pytest.raises(FileNotFoundError):
        ember.load_artifact(str(tmp_path / "absent"))
    broken = tmp_path / "broken"
    shutil.copytree(add_relu_artifact, str(broken))
    os.remove(str(broken / "graph.json"))
    with pytest.raises(ember.EmberError, match="graph.json"):
        ember.load_artifact(str(broken))


def test_benchmark_returns_statistics_in_ms(add_relu_artifact):
    gmod = ember.load_artifact(add_relu_artifact)
    gmod.set_input(x=np.zeros((2, 2), dtype="float32"))
    stats = gmod.benchmark(repeat=3, number=5)
    assert len(stats.results) == 3
    assert 0 < stats.min <= stats.median <= stats.max
    assert stats.min <= stats.mean <= stats.max and stats.std >= 0
    assert set(stats.as_dict()) >= {"median_ms", "mean_ms", "std_ms", "min_ms", "max_ms"}
    with pytest.raises(ValueError):
        gmod.benchmark(repeat=0)


def test_profile_lists_every_node(add_relu_artifact):
    gmod = ember.load_artifact(add_relu_artifact)
    gmod.set_input(x=np.zeros((2, 2), dtype="float32"))
    prof = gmod.profile()
    names = [row["name"] for row in prof.rows]
    assert "add0" in names and "relu0" in names
    assert all(row["time_ms"] >= 0 for row in prof.rows)
    assert "add0" in str(prof)


def test_profile_writes_a_chrome_trace_with_one_event_per_node(add_relu_artifact, tmp_path):
    import json
    gmod = ember.load_artifact(add_relu_artifact)
    gmod.set_input(x=np.zeros((2, 2), dtype="float32"))
    gmod.profile(trace=tmp_path / "trace.json")
    with open(str(tmp_path / "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    assert sorted(e["name"] for e in events) == ["add0", "relu0"]
    for e in events:
        assert e["ph"] == "X" and e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["tid"], int)
        assert e["args"]["output"] == "[2, 2]" and e["args"]["op"], e


def test_runtime_objects_carry_their_type_key(add_relu_artifact):
    gmod = ember.load_artifact(add_relu_artifact)
    info = gmod.module["get_input_info"]()  # a runtime Map, handed out as an ember.Object
    assert isinstance(info, ember.Object) and info.type_key == "runtime.Map"
    assert gmod.module.type_key == "GraphExecutor"
    assert gmod.factory.type_key == "GraphExecutorFactory"


def test_read_only_and_non_contiguous_numpy_arguments(kernel_lib):
    mod = ember.load_module(kernel_lib)
    a = np.array([1, -2, 3, -4], dtype="float32")
    a.flags.writeable = False  # numpy cannot export it through DLPack: the ctypes path takes over
    out = np.zeros(4, dtype="float32")
    mod["relu_f32"](a, out)
    np.testing.assert_array_equal(out, [1, 0, 3, 0])
    seen = []
    ember.register_func("pytest.strided_view", lambda v: seen.append((v.shape, v.numpy())),
                        override=True)
    strided = np.arange(12, dtype="int32").reshape(3, 4)[:, 1::2]
    ember.get_global_func("pytest.strided_view")(strided)
    assert seen[0][0] == (3, 2)
    np.testing.assert_array_equal(seen[0][1], strided)
    # A view is the caller's DLTensor, no runtime NDArray: no DLPack export of it (reading it as
    # one crashed now and then), while .numpy() reads it in place, reversed strides too.
    errors = []

    def export(v):
        try:
            v.__dlpack__()
        except BufferError as e:
            errors.append(str(e))
        seen.append(v.numpy())

    ember.register_func("pytest.export_view", export, override=True)
    reversed_rows = np.arange(12, dtype="float32").reshape(3, 4)[::-1, ::2]
    ember.get_global_func("pytest.export_view")(reversed_rows)
    assert errors and "view" in errors[0]
    np.testing.assert_array_equal(seen[-1], reversed_rows)


def test_single_file_artifact_runs_like_the_directory(add_relu_artifact, kernel_lib, tmp_path):
    """The single .so form: kernels plus graph and params in `__tvm_dev_mblob`, built here from
    the factory's serialised blob (runtime.SerializeFactoryBlob) and tests/python/kernels.c."""
    import subprocess
    from conftest import KERNELS_C, REPO
    gmod = ember.load_artifact(add_relu_artifact)
    blob = ember.get_global_func("runtime.SerializeFactoryBlob")(gmod.factory)
    assert isinstance(blob, bytes) and len(blob) > 8
    blob_c = tmp_path / "blob.c"
    blob_c.write_text(
        "__attribute__((visibility(\"default\"))) const unsigned char __tvm_dev_mblob[%d] = {%s};\n"
        % (len(blob), ",".join(str(b) for b in blob)))
    single = str(tmp_path / "model.so")
    cc = os.environ.get("CC") or shutil.which("cc")
    subprocess.run([cc, "-shared", "-fPIC", "-I", os.path.join(REPO, "include"), KERNELS_C,
                    str(blob_c), "-o", single], check=True)
    one = ember.load_artifact(single)
    x = np.array([[2, 2], [-1, 9]], dtype="float32")
    one.set_input(x=x)
    one.run()
    gmod.set_input(x=x)
    gmod.run()
    for i in range(2):
        assert one.get_output(i).numpy().tobytes() == gmod.get_output(i).numpy().tobytes()


def _link_single_artifact(add_relu_artifact, tmp_path, name):
    """export_library's link step (ld.lld + the runtime's factory blob) on a kernel object built
    from kernels.c; returns the path of the single .so."""
    import subprocess
    from conftest import KERNELS_C, REPO
    from ember.compiler import link_single_library
    cc = os.environ.get("CC") or shutil.which("cc")
    obj = str(tmp_path / "kernels.o")
    subprocess.run([cc, "-c", "-fPIC", "-I", os.path.join(REPO, "include"), KERNELS_C, "-o", obj],
                   check=True)
    with open(os.path.join(add_relu_artifact, "graph.json")) as f:
        graph_json = f.read()
    with open(os.path.join(add_relu_artifact, "params.bin"), "rb") as f:
        params = f.read()
    return link_single_library(obj, graph_json, params, str(tmp_path / name))


def test_link_single_library_from_a_kernel_object(add_relu_artifact, tmp_path):
    one = ember.load_artifact(_link_single_artifact(add_relu_artifact, tmp_path, "one.so"))
    x = np.array([[-3, 1], [0.5, 7]], dtype="float32")
    one.run(x=x)
    relu, add = _expected(x)
    np.testing.assert_array_equal(one.get_output(0).numpy(), relu)
    np.testing.assert_array_equal(one.get_output(1).numpy(), add)


def test_bare_file_names_mean_files_in_the_current_directory(add_relu_artifact, kernel_lib,
                                                            tmp_path, monkeypatch):
    """``load_artifact("model.so")`` and ``load_module("lib.so")`` as a user types them: the
    names are files here, not libraries for the dynamic loader to search for."""
    _link_single_artifact(add_relu_artifact, tmp_path, "bare.so")
    shutil.copyfile(kernel_lib, str(tmp_path / "libkernels_bare.so"))
    monkeypatch.chdir(tmp_path)
    one = ember.load_artifact("bare.so")
    x = np.array([[-3, 1], [0.5, 7]], dtype="float32")
    one.run(x=x)
    np.testing.assert_array_equal(one.get_output(0).numpy(), _expected(x)[0])
    assert ember.load_module("libkernels_bare.so")["add_f32"] is not None


def test_read_params_matches_the_writer_and_refuses_garbage(tmp_path):
    from conftest import write_params
    from ember.compiler import read_params
    arrays = {"a": np.arange(6, dtype="float32").reshape(2, 3), "b": np.array([7], "int64")}
    write_params(str(tmp_path / "p.bin"), arrays)
    got = read_params((tmp_path / "p.bin").read_bytes())
    assert list(got) == ["a", "b"]
    for name in arrays:
        np.testing.assert_array_equal(got[name], arrays[name])
        assert got[name].dtype == arrays[name].dtype
    blob = (tmp_path / "p.bin").read_bytes()
    with pytest.raises(ember.EmberError, match="truncated"):
        read_params(blob[:40])
    with pytest.raises(ember.EmberError, match="magic"):
        read_params(b"\0" * 64)


def test_executor_pool_runs_from_eight_threads_match_one_thread(add_relu_artifact):
    import threading
    pool = ember.ExecutorPool(add_relu_artifact)
    assert pool.input_names == ["x"]
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((2, 2)).astype("float32") for _ in range(8)]
    want = [_expected(x) for x in inputs]
    bad = []

    def worker(t):
        for i in range(200):
            relu, add = pool.run(x=inputs[(t + i) % 8])
            ref = want[(t + i) % 8]
            if not (np.array_equal(relu, ref[0]) and np.array_equal(add, ref[1])):
                bad.append((t, i))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert bad == []
    assert 1 <= pool.num_executors <= 8
    # The other ways in: a factory Module, a GraphModule, a dict of inputs, and bounded.
    gmod = ember.load_artifact(add_relu_artifact)
    for made in (ember.ExecutorPool(gmod.factory), ember.ExecutorPool(gmod, max_executors=1)):
        relu, _ = made.run({"x": inputs[0]})
        np.testing.assert_array_equal(relu, want[0][0])


def test_executor_pool_errors_name_the_input(add_relu_artifact):
    pool = ember.ExecutorPool(add_relu_artifact)
    with pytest.raises(ValueError, match="input 'x' is missing"):
        pool.run()
    with pytest.raises(KeyError, match="no input named 'y'; inputs are: x"):
        pool.run(x=np.zeros((2, 2), "float32"), y=1)
    with pytest.raises(ember.EmberError, match=r"set_input \"x\": expected float32\[2, 2\]"):
        pool.run(x=np.zeros((3, 2), "float32"))
    with pytest.raises(ValueError, match="max_executors"):
        ember.ExecutorPool(add_relu_artifact, max_executors=-1)
    relu, _ = pool.run(x=np.ones((2, 2), "float32"))  # still usable after the failures
    np.testing.assert_array_equal(relu, _expected(np.ones((2, 2), "float32"))[0])


def test_one_graph_module_from_eight_threads_refuses_rather_than_tears(add_relu_artifact):
    # The case: one executor, 8 Python threads. Overlapping calls are refused; every
    # output a thread did get is the output of some input, never a mix.
    import threading
    gmod = ember.load_artifact(add_relu_artifact)
    inputs = [np.full((2, 2), float(t), dtype="float32") for t in range(8)]
    valid = [_expected(x)[0].tobytes() for x in inputs]
    torn, refused, done = [], [], []

    def worker(t):
        for _ in range(200):
            try:
                gmod.set_input(x=inputs[t])
                gmod.run()
                out = gmod.get_output(0).numpy().tobytes()
            except ember.EmberError as e:
                assert "called from two threads at once" in str(e), str(e)
                assert "ExecutorPool" in str(e), str(e)
                refused.append(t)
                continue
            done.append(t)
            if out not in valid:
                torn.append(t)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert torn == []
    assert done
