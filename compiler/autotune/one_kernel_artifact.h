// A runnable artifact of one fused group, for timing a tuning candidate on a board with the
// board's own ember-run: graph.json with every kernel argument an input (ember-run fills them
// with its seeded random data, the same for every candidate) and the group's outputs as the
// graph's outputs, and an empty params.bin. The candidate's lib.so goes beside them.
#ifndef EMBER_COMPILER_AUTOTUNE_ONE_KERNEL_ARTIFACT_H_
#define EMBER_COMPILER_AUTOTUNE_ONE_KERNEL_ARTIFACT_H_

#include <ember/compiler/ir/fused_group.h>

#include <string>

namespace ember::compiler::autotune {

/*! \brief The graph.json text of the artifact above. */
std::string OneKernelGraphJson(const FusedGroup& group);

/*! \brief Writes DIR/graph.json and DIR/params.bin (DIR exists; lib.so is the caller's). */
void WriteOneKernelArtifact(const FusedGroup& group, const std::string& dir);

}  // namespace ember::compiler::autotune

#endif  // EMBER_COMPILER_AUTOTUNE_ONE_KERNEL_ARTIFACT_H_
