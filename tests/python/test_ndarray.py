"""ember.nd: allocation, copies, properties, errors and zero-copy DLPack with NumPy."""
import gc

import numpy as np
import pytest

import ember

DTYPES = ["float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "float16"]


def test_empty_has_shape_dtype_device():
    arr = ember.nd.empty((2, 3, 4), "int16")
    assert arr.shape == (2, 3, 4) and arr.ndim == 3
    assert arr.dtype == "int16" and isinstance(arr.dtype, ember.DataType)
    assert arr.device == ember.cpu(0)
    assert arr.size == 24 and arr.nbytes == 48
    assert arr.data_ptr % 64 == 0  # the runtime allocates 64-byte aligned CPU memory


def test_empty_scalar_and_zero_sized():
    assert ember.nd.empty((), "float32").shape == ()
    assert ember.nd.empty((0, 5)).numpy().shape == (0, 5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_array_numpy_round_trip(dtype):
    src = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    arr = ember.nd.array(src)
    assert arr.dtype == dtype and arr.shape == src.shape
    out = arr.numpy()
    assert out.dtype == src.dtype
    np.testing.assert_array_equal(out, src)
    assert out.ctypes.data != arr.data_ptr  # numpy() copies


def test_array_of_non_contiguous_input_copies_logically():
    src = np.arange(12, dtype="float32").reshape(3, 4).T
    np.testing.assert_array_equal(ember.nd.array(src).numpy(), src)


def test_copyfrom_numpy_and_ndarray_and_cast():
    arr = ember.nd.empty((2, 2), "float32")
    arr.copyfrom(np.array([[1, 2], [3, 4]], dtype="float64"))
    np.testing.assert_array_equal(arr.numpy(), [[1, 2], [3, 4]])
    other = ember.nd.array(np.full((2, 2), 9, dtype="float32"))
    arr.copyfrom(other)
    np.testing.assert_array_equal(arr.numpy(), np.full((2, 2), 9))
    copy = other.copyto(ember.cpu(0))
    assert copy.data_ptr != other.data_ptr
    np.testing.assert_array_equal(copy.numpy(), other.numpy())


def test_copyfrom_shape_mismatch_names_both_shapes():
    arr = ember.nd.empty((2, 3))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, 2\)"):
        arr.copyfrom(np.zeros((3, 2), "float32"))


def test_copy_between_ndarrays_of_different_shape_is_a_runtime_error():
    with pytest.raises(ember.EmberError):
        ember.nd.empty((4,)).copyfrom(ember.nd.empty((5,)))


def test_bad_shape_and_dtype_arguments():
    with pytest.raises(ValueError, match="negative"):
        ember.nd.empty((2, -1))
    with pytest.raises(ValueError, match="floot32"):
        ember.nd.empty((2,), "floot32")
    with pytest.raises(TypeError):
        ember.nd.empty("abc")


def test_numpy_array_to_ember_without_copy():
    src = np.arange(16, dtype="float32").reshape(4, 4)
    arr = ember.nd.from_dlpack(src)
    assert arr.data_ptr == src.ctypes.data
    assert arr.shape == (4, 4) and arr.dtype == "float32"
    src[0, 0] = 42.0  # the same memory
    assert arr.numpy()[0, 0] == 42.0


def test_numpy_memory_stays_alive_while_ember_holds_it():
    arr = ember.nd.from_dlpack(np.full(1000, 3.0))
    gc.collect()
    np.testing.assert_array_equal(arr.numpy(), np.full(1000, 3.0))


def test_ember_array_to_numpy_without_copy():
    arr = ember.nd.array(np.arange(6, dtype="int32"))
    view = np.from_dlpack(arr)
    assert view.ctypes.data == arr.data_ptr
    np.testing.assert_array_equal(view, np.arange(6))
    del arr
    gc.collect()
    np.testing.assert_array_equal(view, np.arange(6))  # numpy keeps the runtime array alive


def test_dlpack_round_trip_keeps_the_pointer():
    src = np.linspace(0, 1, 10, dtype="float64")
    back = np.from_dlpack(ember.nd.from_dlpack(src))
    assert back.ctypes.data == src.ctypes.data
    np.testing.assert_array_equal(back, src)


def test_dlpack_device_and_unconsumed_capsule_is_freed():
    arr = ember.nd.empty((3,))
    assert arr.__dlpack_device__() == (1, 0)
    capsule = arr.__dlpack__()
    del capsule  # nobody consumed it: its destructor must release the tensor (no leak, no crash)
    gc.collect()


def test_capsule_cannot_be_consumed_twice():
    capsule = np.arange(3.0).__dlpack__()
    ember.nd.from_dlpack(capsule)
    with pytest.raises(ValueError, match="consumed"):
        ember.nd.from_dlpack(capsule)


def test_ndarray_passes_to_cpp_and_back_as_the_same_array():
    name = "pytest.nd.identity"
    ember.register_func(name, lambda a: a, override=True)
    arr = ember.nd.array(np.arange(5, dtype="float32"))
    back = ember.get_global_func(name)(arr)
    assert back.data_ptr == arr.data_ptr


def test_repr_shows_contents():
    text = repr(ember.nd.array(np.array([1.5, 2.5], dtype="float32")))
    assert "float32" in text and "1.5" in text


def test_strided_dlpack_view_copies_out_correctly():
    src = np.arange(12.0).reshape(3, 4)[:, ::2]
    arr = ember.nd.from_dlpack(src)
    assert arr.shape == (3, 2) and arr.data_ptr == src.ctypes.data
    np.testing.assert_array_equal(arr.numpy(), src)


def test_offset_numpy_slice_is_shared_without_copy():
    base = np.arange(10.0)
    arr = ember.nd.from_dlpack(base[3:])
    assert arr.data_ptr == base[3:].ctypes.data
    np.testing.assert_array_equal(arr.numpy(), base[3:])


def test_bool_arrays_take_one_byte_per_element():
    src = np.array([True, False, True, True])
    arr = ember.nd.array(src)
    assert arr.dtype == "bool" and arr.nbytes == 4
    out = arr.numpy()
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, src)
