// The pixels-in-lanes form of the int8 conv (Conv2dInt8Params::pixel_vectors > 0), which
// Conv2dInt8Applies and TryConv2dInt8 hand such entries to; see conv2d_int8_1x1.cc.
#ifndef EMBER_COMPILER_SCHEDULE_CONV2D_INT8_1X1_H_
#define EMBER_COMPILER_SCHEDULE_CONV2D_INT8_1X1_H_

#include "int8_conv_data.h"
#include "schedule.h"

namespace ember::compiler::schedule {

/*! \brief Whether the conv ReadInt8Conv read into `m` is one the kernel takes: 1x1, stride 1, no
 * padding. */
bool Conv2dInt8PixelsTakes(const Int8Conv& m);

bool TryConv2dInt8Pixels(const FusedGroup& group, const lower::ScheduleOptions& opts,
                         const Conv2dInt8Params& p, lower::LoweredFunc* out);

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_CONV2D_INT8_1X1_H_
