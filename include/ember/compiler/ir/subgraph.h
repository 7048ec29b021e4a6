/*!
 * \file ember/compiler/ir/subgraph.h
 * \brief A graph attribute after import: If's then/else branches, Loop's body.
 */
#ifndef EMBER_COMPILER_IR_SUBGRAPH_H_
#define EMBER_COMPILER_IR_SUBGRAPH_H_

#include <ember/compiler/ir/graph.h>

#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*!
 * \brief Nodes over the enclosing Graph's value table. The importer creates a value for every
 *        name the subgraph defines; its nodes read those, the formal `inputs` (a Loop body's
 *        iteration number, condition and carried values, which a caller binds), and any value of
 *        an enclosing scope by id. Canonicalization instantiates a subgraph where it folds the
 *        node that holds it (an If whose condition is known takes one branch).
 */
struct Subgraph {
  std::string name;
  std::vector<int> inputs;
  std::vector<Node> nodes;
  std::vector<int> outputs;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_SUBGRAPH_H_
