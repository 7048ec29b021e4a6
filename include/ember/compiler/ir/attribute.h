/*!
 * \file ember/compiler/ir/attribute.h
 * \brief Node attributes: ONNX's attribute kinds as a variant.
 */
#ifndef EMBER_COMPILER_IR_ATTRIBUTE_H_
#define EMBER_COMPILER_IR_ATTRIBUTE_H_

#include <ember/compiler/ir/tensor_type.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace ember {
namespace compiler {

struct Subgraph;  // ir/subgraph.h
/*! \brief A graph attribute (If's branches, Loop's body), shared and never changed after import. */
using SubgraphPtr = std::shared_ptr<const Subgraph>;

/*! \brief One attribute value (ONNX INT, FLOAT, STRING, INTS, FLOATS, STRINGS, TENSOR, GRAPH). */
using AttrValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                 std::vector<std::string>, HostTensorPtr, SubgraphPtr>;

/*! \brief Name of the kind held, for error messages: "int", "float", "string", "ints", ... */
std::string AttrKindName(const AttrValue& v);
/*! \brief Short printable form for IR dumps. */
std::string AttrToString(const AttrValue& v);

/*! \brief Attributes of a node, ordered by name so dumps are deterministic. */
using AttrMap = std::map<std::string, AttrValue>;

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_ATTRIBUTE_H_
