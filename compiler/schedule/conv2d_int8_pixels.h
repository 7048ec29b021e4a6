// The pixels-in-lanes form of the int8 conv (Conv2dInt8Params::pixel_vectors > 0), which
// TryConv2dInt8 hands such entries to; see conv2d_int8_pixels.cc.
#ifndef EMBER_COMPILER_SCHEDULE_CONV2D_INT8_PIXELS_H_
#define EMBER_COMPILER_SCHEDULE_CONV2D_INT8_PIXELS_H_

#include "int8_conv_data.h"
#include "schedule.h"

namespace ember::compiler::schedule {

/*! \brief What the channels-in-lanes form's epilogue costs per vector of outputs, in dot steps
 * (one dot instruction per vector of sums and quad of input channels): it reads each output
 * channel's sums with a strided gather from the blocked workspace. Measured on AVX-512 VNNI, both
 * forms forced on single convs (2026-11-27): a 3x3 stride-2 stem of 3 channels (9 steps) 0.67x
 * the channels form's time in this form, a 7x7 one (49 steps) 0.82x, a 3x3 conv of 64 channels
 * at 56x56 (144 steps, 88% of the lanes used) 1.18x, a 1x1 conv of 960 channels at 7x7 (77%)
 * 1.27x: about 8 steps. */
constexpr double kChannelsFormEpilogueSteps = 8;

/*! \brief Whether this form costs less than the channels-in-lanes one writing NCHW for the conv
 * ReadInt8Conv read into `m` with an oh x ow output: its dot steps over the share of its lanes that
 * hold output positions (the tiles' padding columns and partial vectors idle the rest) against the
 * other form's over the share holding output channels, plus that form's epilogue
 * (kChannelsFormEpilogueSteps). */
bool Conv2dInt8PixelsPays(const Int8Conv& m, int64_t oh, int64_t ow, const Conv2dInt8Params& p);

bool TryConv2dInt8Pixels(const FusedGroup& group, const lower::ScheduleOptions& opts,
                         const Conv2dInt8Params& p, lower::LoweredFunc* out);

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_CONV2D_INT8_PIXELS_H_
