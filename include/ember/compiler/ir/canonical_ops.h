/*!
 * \file ember/compiler/ir/canonical_ops.h
 * \brief The canonical form of nodes after import + constant folding: what compute rules see.
 *
 * The frontend accepts ONNX opsets 7..17 and rewrites every version difference into one form, so
 * a compute rule (kernel side) reads attributes only and never constant inputs:
 *
 * - Every axis-like attribute is non-negative (Concat/Gather/Softmax/LogSoftmax/Flatten/ArgMax/
 *   ArgMin/Split/LayerNormalization "axis"; "axes" lists sorted ascending, no duplicates).
 * - Defaults are filled in for every attribute listed in the op's registry entry (e.g. Gemm
 *   alpha/beta/transA/transB, LeakyRelu alpha, Elu alpha, Selu alpha/gamma, HardSigmoid
 * alpha/beta).
 * - Conv / ConvTranspose / MaxPool / AveragePool: auto_pad resolved; "pads" (2*spatial, begins then
 *   ends), "strides", "dilations", "kernel_shape" always present; "group" on Conv/ConvTranspose;
 *   ConvTranspose "output_padding" present; AveragePool "count_include_pad", pools "ceil_mode".
 * - Squeeze / Unsqueeze: one input, attr "axes" (ints).
 * - ReduceSum/Mean/Max/Min: one input, attr "axes" (ints, all axes when reducing everything),
 *   "keepdims" (int). ArgMax/ArgMin: "axis", "keepdims", "select_last_index".
 * - Split: one input, attrs "axis" and "split" (ints, sizes of every output).
 * - Clip: one input, attrs "min" and "max" (float; -inf/+inf when absent; for int tensors the
 *   values are exact integers).
 * - Pad: one input, attrs "pads" (ints, 2*rank: begins then ends, may be negative), "mode"
 *   ("constant"|"reflect"|"edge"), "value" (float).
 * - Slice: one input, attrs "starts", "steps" (ints, one per dimension of the input, starts
 *   clamped into range); output shape gives the extent.
 * - Reshape / Flatten / Expand / Squeeze / Unsqueeze: one input; the output type is the shape.
 * - Tile: one input, attr "repeats" (ints).
 * - Resize (Upsample becomes Resize): one input, attrs "scales" (floats, output/input per dim),
 *   "mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
 *   "extrapolation_value"; the output type gives the sizes.
 * - Cast: attr "to" (ONNX TensorProto dtype int); the output type's dtype is authoritative.
 *   CastLike becomes Cast.
 * - Sum / Max / Min / Mean with more than two inputs become chains of binary Add/Max/Min (Mean:
 *   then Div); one-input forms become Identity and are simplified away.
 * - A 2-D float32 ConvTranspose with constant weights (and bias) becomes a stride-1 Conv over its
 *   phases and a PhaseInterleave (attrs "strides", "crop", "out_size", "group") that puts each
 *   phase's pixels in place (transform/conv_transpose_as_conv.cc); at stride 1, the Conv alone.
 * - BatchNormalization (inference) is folded into a preceding Conv/Gemm, else into Mul + Add with
 *   constant per-channel scale and shift (shape [C,1,...,1]).
 * - Written out as primitive ops instead (so compute rules never see them): LayerNormalization
 *   with Mean/InvStdDev outputs, training-mode BatchNormalization, Clip with run-time min/max
 *   (Max/Min), Pad with a run-time constant_value (Pad + Where), Resize/Upsample with run-time
 *   scales (index math + Gather per axis, sizes from the model's declared output shape).
 * - Shape, Size, ConstantOfShape, Range and Constant never reach the kernel side (folded).
 * - Dropout (inference) and Identity are removed, except an Identity kept to copy a graph output
 *   that is a graph input or a constant.
 */
#ifndef EMBER_COMPILER_IR_CANONICAL_OPS_H_
#define EMBER_COMPILER_IR_CANONICAL_OPS_H_
#endif  // EMBER_COMPILER_IR_CANONICAL_OPS_H_
