"""The FFI layer: library loading, argument packing, results, the registry and Python callbacks."""
import ctypes
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember._ffi import base
from ember._ffi.types import TVMValue, TypeCode


def _unique(name, _count=[0]):
    _count[0] += 1
    return "pytest.%s.%d.%d" % (name, os.getpid(), _count[0])


def test_runtime_library_is_loaded_from_a_real_path():
    assert os.path.isfile(base.RUNTIME_LIB_PATH)
    assert os.path.basename(base.RUNTIME_LIB_PATH) == "libember_runtime.so"


def test_library_path_override_is_honoured(tmp_path):
    env = dict(os.environ, EMBER_LIBRARY_PATH=str(tmp_path),
               PYTHONPATH=os.path.dirname(os.path.dirname(ember.__file__)))
    code = "import ember"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=str(tmp_path))
    assert proc.returncode != 0
    assert "libember_runtime.so" in proc.stderr and str(tmp_path) in proc.stderr


def test_list_global_func_names_returns_strings():
    names = ember.list_global_func_names()
    assert isinstance(names, list) and names
    assert all(isinstance(n, str) for n in names)


def test_get_global_func_missing():
    assert ember.get_global_func("no.such.function", allow_missing=True) is None
    with pytest.raises(ValueError, match="no.such.function"):
        ember.get_global_func("no.such.function")


def _echo_name():
    name = _unique("echo")
    ember.register_func(name, lambda *args: args[0] if len(args) == 1 else len(args))
    return ember.get_global_func(name)


@pytest.mark.parametrize("value", [0, 1, -7, 2**62, -(2**63), 2**63 - 1, 1.5, -0.25, float("inf"),
                                   "hello", "", "unicode \u00e9\u4e2d", b"bytes\x00with zero",
                                   b"", None, True, False],
                         ids=repr)  # pytest would name "" and b"" [0] and [1], as it names 0 and 1
def test_scalar_round_trip_through_a_python_global(value):
    echo = _echo_name()
    got = echo(value)
    assert type(got) is type(value)
    assert got == value


def test_bytearray_arrives_as_bytes():
    assert _echo_name()(bytearray(b"ab\x00c")) == b"ab\x00c"


def test_numpy_scalars_pack_as_python_numbers():
    echo = _echo_name()
    assert echo(np.int32(5)) == 5 and type(echo(np.int64(5))) is int
    assert echo(np.float32(0.5)) == 0.5 and type(echo(np.float64(0.5))) is float
    assert echo(np.bool_(True)) is True


def test_datatype_and_device_round_trip():
    echo = _echo_name()
    dt = echo(ember.DataType("float32"))
    assert dt == "float32"  # the C ABI returns a DLDataType as its string (as TVM does)
    assert echo(np.dtype("int8")) == "int8"
    assert echo(ember.DataType("uint8x4")) == "uint8x4"
    dev = echo(ember.cpu(3))
    assert isinstance(dev, ember.Device) and dev == ember.cpu(3)


def test_int_overflow_is_refused():
    with pytest.raises(OverflowError):
        _echo_name()(2**63)


def test_unsupported_argument_type_is_a_type_error_naming_it():
    echo = _echo_name()
    with pytest.raises(TypeError, match=r"argument 1 has unsupported type set"):
        echo(1, {1, 2})
    with pytest.raises(TypeError, match="object"):
        echo(object())


def test_many_arguments():
    count = _echo_name()
    assert count(*range(20)) == 20
    assert count() == 0


def test_all_types_arrive_in_a_callback_with_the_right_python_types():
    seen = []

    def record(*args):
        seen.extend(args)
        view = args[9]  # a borrowed DLTensor*: valid only during the call
        seen.append((view.is_view, view.data_ptr, view.numpy()))

    name = _unique("record")
    ember.register_func(name, record)
    nd = ember.nd.array(np.arange(3, dtype="float32"))
    arr = np.arange(4, dtype="int32")
    ember.get_global_func(name)(1, 2.5, True, "s", b"b", None, ember.DataType("int8"),
                                ember.cpu(0), nd, arr, record)
    assert seen[:8] == [1, 2.5, True, "s", b"b", None, "int8", ember.cpu(0)]
    assert isinstance(seen[8], ember.nd.NDArray) and not seen[8].is_view
    np.testing.assert_array_equal(seen[8].numpy(), [0, 1, 2])
    # A numpy array travels as a bare DLTensor*: the callback sees a view of the same memory.
    assert isinstance(seen[9], ember.nd.NDArray)
    is_view, data_ptr, copy = seen[11]
    assert is_view and data_ptr == arr.ctypes.data
    np.testing.assert_array_equal(copy, arr)
    assert isinstance(seen[10], ember.PackedFunc)


def test_callback_receives_a_callable_and_calls_it_back_through_cpp():
    # Python -> TVMFuncCall -> C++ wrapper of `outer` -> Python outer -> PackedFunc(inner) ->
    # TVMFuncCall -> C++ wrapper of `inner` -> Python inner.
    name = _unique("apply")
    ember.register_func(name, lambda f, x: f(x) + 1)
    assert ember.get_global_func(name)(lambda x: x * 10, 4) == 41


def test_ndarray_returned_from_a_callback():
    name = _unique("make")
    ember.register_func(name, lambda n: ember.nd.array(np.full(n, 7, dtype="int64")))
    out = ember.get_global_func(name)(3)
    gc.collect()
    assert isinstance(out, ember.nd.NDArray)
    np.testing.assert_array_equal(out.numpy(), [7, 7, 7])


def test_packed_func_returned_from_a_callback_is_callable():
    name = _unique("adder")
    ember.register_func(name, lambda k: (lambda x: x + k))
    add5 = ember.get_global_func(name)(5)
    assert isinstance(add5, ember.PackedFunc)
    gc.collect()
    assert add5(1) == 6


def test_register_func_decorator_forms_and_override():
    name = _unique("deco")

    @ember.register_func(name)
    def first(x):
        return x + 1

    assert first(1) == 2  # the decorator returns the Python function unchanged
    assert ember.get_global_func(name)(1) == 2
    with pytest.raises(ember.EmberError, match=name):
        ember.register_func(name, lambda x: x)
    ember.register_func(name, lambda x: x * 100, override=True)
    assert ember.get_global_func(name)(2) == 200
    ember.remove_global_func(name)
    assert ember.get_global_func(name, allow_missing=True) is None


def test_register_func_bare_decorator_uses_the_function_name():
    def pytest_bare_decorated_fn(x):
        return -x

    ember.register_func(pytest_bare_decorated_fn, override=True)
    assert ember.get_global_func("pytest_bare_decorated_fn")(3) == -3
    assert "pytest_bare_decorated_fn" in ember.list_global_func_names()


def test_python_callback_called_through_raw_c_abi():
    """C calls Python: TVMFuncGetGlobal + TVMFuncCall with hand-made TVMValues, no ember wrapper."""
    name = _unique("raw")
    ember.register_func(name, lambda a, b: a * b + 0.5)
    lib = base._LIB
    handle = ctypes.c_void_p()
    assert lib.TVMFuncGetGlobal(name.encode(), ctypes.byref(handle)) == 0 and handle.value
    values = (TVMValue * 2)()
    codes = (ctypes.c_int * 2)(TypeCode.INT, TypeCode.FLOAT)
    values[0].v_int64 = 6
    values[1].v_float64 = 7.0
    ret, ret_code = TVMValue(), ctypes.c_int()
    assert lib.TVMFuncCall(handle, values, codes, 2, ctypes.byref(ret), ctypes.byref(ret_code)) == 0
    assert ret_code.value == TypeCode.FLOAT and ret.v_float64 == 42.5
    assert lib.TVMFuncFree(handle) == 0


def test_exception_in_callback_reaches_the_caller_with_type_and_message():
    name = _unique("raiser")

    def raiser(x):
        raise ValueError("bad value %d" % x)

    ember.register_func(name, raiser)
    with pytest.raises(ValueError, match="bad value 42") as info:
        ember.get_global_func(name)(42)
    assert isinstance(info.value, ember.EmberError)
    assert "raiser" in str(info.value)  # the Python traceback travels too


def test_exception_in_callback_through_raw_c_abi():
    name = _unique("raiser_raw")
    ember.register_func(name, lambda: 1 / 0)
    lib = base._LIB
    handle = ctypes.c_void_p()
    assert lib.TVMFuncGetGlobal(name.encode(), ctypes.byref(handle)) == 0
    ret, ret_code = TVMValue(), ctypes.c_int()
    assert lib.TVMFuncCall(handle, None, None, 0, ctypes.byref(ret), ctypes.byref(ret_code)) == -1
    assert "ZeroDivisionError" in lib.TVMGetLastError().decode()
    lib.TVMFuncFree(handle)


def test_nested_callback_exception_keeps_its_type():
    inner = _unique("inner_raise")
    outer = _unique("outer_call")
    ember.register_func(inner, lambda: (_ for _ in ()).throw(KeyError("missing-key")))
    ember.register_func(outer, lambda: ember.get_global_func(inner)())
    with pytest.raises(KeyError, match="missing-key"):
        ember.get_global_func(outer)()


def test_finalizer_releases_the_python_reference():
    def target(x):
        return x

    before = sys.getrefcount(target)
    packed = ember.convert_to_packed_func(target)
    assert sys.getrefcount(target) == before + 1
    assert packed(9) == 9
    del packed
    gc.collect()
    assert sys.getrefcount(target) == before


def test_registered_function_is_kept_alive_by_the_registry():
    name = _unique("alive")
    ember.register_func(name, lambda: "still here")
    gc.collect()
    assert ember.get_global_func(name)() == "still here"


def test_init_api_exposes_a_prefix_as_attributes():
    prefix = _unique("api")
    ember.register_func(prefix + ".alpha", lambda: 1)
    ember.register_func(prefix + ".beta.gamma", lambda: 2)
    holder = type(sys)("holder")
    ember._init_api(prefix, holder)
    assert holder.alpha() == 1 and holder.beta_gamma() == 2


def test_error_mapping_from_cpp_messages():
    assert isinstance(base.error_from_message("f: argument 2 expected int, got str"), TypeError)
    assert type(base.error_from_message("plain failure")) is ember.EmberError
    err = base.error_from_message("IndexError: out of range")
    assert isinstance(err, IndexError) and isinstance(err, ember.EmberError)


def test_datatype_parsing():
    assert ember.DataType("float32").bits == 32 and ember.DataType("int8").code == 0
    assert str(ember.DataType(np.dtype("uint16"))) == "uint16"
    assert ember.DataType("bool") == "bool" and ember.DataType("float16x8").lanes == 8
    with pytest.raises(ValueError, match="float3x"):
        ember.DataType("float3x")
    with pytest.raises(TypeError):
        ember.DataType(np.dtype("complex64"))


def test_calls_and_callbacks_from_several_python_threads():
    import threading
    name = _unique("threaded")
    ember.register_func(name, lambda a, b: "%d-%d" % (a, b))
    func = ember.get_global_func(name)
    errors = []

    def worker(k):
        try:
            for i in range(200):
                assert func(k, i) == "%d-%d" % (k, i)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_module_travels_through_a_python_callback():
    system_lib = ember.get_global_func("runtime.SystemLib")()
    assert isinstance(system_lib, ember.runtime.Module)
    name = _unique("module_id")
    ember.register_func(name, lambda m: m)
    back = ember.get_global_func(name)(system_lib)
    assert isinstance(back, ember.runtime.Module) and back.type_key == system_lib.type_key


def test_interpreter_exit_with_registered_callbacks_is_clean():
    code = ("import ember\n"
            "ember.register_func('exit.test', lambda x: x + 1)\n"
            "f = ember.get_global_func('exit.test')\n"
            "assert f(1) == 2\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ember.__file__)))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_callback_returning_an_unsupported_type_says_so():
    name = _unique("bad_return")

    def returns_a_set():
        return {1, 2}

    ember.register_func(name, returns_a_set)
    with pytest.raises(TypeError, match="returns_a_set returned a set"):
        ember.get_global_func(name)()
