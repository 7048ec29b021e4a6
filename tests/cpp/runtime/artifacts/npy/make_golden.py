#!/usr/bin/python3
"""Writes the golden .npy files test_npy.cc reads. They are committed; rerun only to add cases.

Made with numpy 1.24 (Debian 12): python3 make_golden.py in this directory.
"""
import numpy as np
from numpy.lib import format as npformat

np.save('f32_2x3.npy', np.arange(6, dtype='<f4').reshape(2, 3))
np.save('f16_4.npy', np.array([1.0, -2.5, 0.0, 65504.0], dtype='<f2'))
np.save('bool_5.npy', np.array([True, False, True, True, False]))
np.save('i8_3.npy', np.array([-1, 0, 127], dtype='i1'))
np.save('u16_2x2.npy', np.array([[1, 2], [65535, 4]], dtype='<u2'))
np.save('i64_scalar.npy', np.array(-42, dtype='<i8'))
np.save('f64_empty_0x3.npy', np.zeros((0, 3), dtype='<f8'))
np.save('c64_2.npy', np.array([1 + 2j, -3.5j], dtype='<c8'))
np.save('u32_3.npy', np.array([1, 2, 4000000000], dtype='<u4'))
np.save('i32_2x1x2.npy', np.array([[[1, -2]], [[3, -4]]], dtype='<i4'))
np.save('big_endian_f4.npy', np.arange(3, dtype='>f4'))
np.save('fortran_f4.npy', np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)))
np.save('object.npy', np.array([1, 'a'], dtype=object), allow_pickle=True)
np.save('structured.npy', np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]))
for version in (2, 3):
    with open('v%d_f32_3.npy' % version, 'wb') as f:
        npformat.write_array(f, np.array([1.5, 2.5, 3.5], dtype='<f4'), version=(version, 0))
