// Constants derived from other constants (a transposed, packed or transformed weight), made once
// per source and form.
#ifndef EMBER_COMPILER_TRANSFORM_DERIVED_CONSTANTS_H_
#define EMBER_COMPILER_TRANSFORM_DERIVED_CONSTANTS_H_

#include <ember/compiler/ir/graph.h>

#include <functional>
#include <map>
#include <string>
#include <tuple>

namespace ember {
namespace compiler {

/*!
 * \brief Nodes that read one weight (the steps of an unrolled recurrence, tied layers) share its
 * derived forms too: without this, each node packed its own copy (a 200-step LSTM carried 200
 * packed copies of its recurrent weight, 3.2 MB that its steps read from memory in turn).
 */
class DerivedConstants {
 public:
  explicit DerivedConstants(Graph* graph) : graph_(graph) {}

  /*!
   * \brief The value holding constant `source` in the form `suffix` (what: "_panels") with
   * `params` (how: a panel width): made by `make` the first time and named source's name plus
   * `suffix`; -1 when `make` returns null (the form does not apply), which is not remembered.
   */
  int Get(int source, const std::string& suffix, const std::string& params,
          const std::function<HostTensorPtr()>& make);

 private:
  Graph* graph_;
  std::map<std::tuple<int, std::string, std::string>, int> made_;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_TRANSFORM_DERIVED_CONSTANTS_H_
