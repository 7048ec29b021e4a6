// Builds small ONNX models in memory for the compiler and integration tests (no files needed).
#ifndef EMBER_TESTS_CPP_COMPILER_ONNX_BUILDER_H_
#define EMBER_TESTS_CPP_COMPILER_ONNX_BUILDER_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace testing {

/*! \brief A ModelProto under construction: ai.onnx opset `opset`, one graph. */
class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 13) {
    model_.set_ir_version(7);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  /*! \brief Graph input; a negative dim becomes the symbolic dim "N". */
  OnnxBuilder& Input(const std::string& name, const std::vector<int64_t>& shape,
                     int32_t elem = onnx::TensorProto::FLOAT) {
    SetType(model_.mutable_graph()->add_input(), name, shape, elem);
    return *this;
  }
  OnnxBuilder& Output(const std::string& name, const std::vector<int64_t>& shape,
                      int32_t elem = onnx::TensorProto::FLOAT) {
    SetType(model_.mutable_graph()->add_output(), name, shape, elem);
    return *this;
  }
  OnnxBuilder& FloatInit(const std::string& name, const std::vector<int64_t>& shape,
                         const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  OnnxBuilder& IntInit(const std::string& name, const std::vector<int64_t>& shape,
                       const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : shape) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  /*! \brief Adds a node; returns it so attributes can be added. */
  onnx::NodeProto* Node(const std::string& op, const std::string& name,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  static void IntAttr(onnx::NodeProto* n, const std::string& key, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void StringAttr(onnx::NodeProto* n, const std::string& key, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void IntsAttr(onnx::NodeProto* n, const std::string& key, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void FloatsAttr(onnx::NodeProto* n, const std::string& key, const std::vector<float>& v) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
  }

  std::string Bytes() const { return model_.SerializeAsString(); }
  onnx::ModelProto& model() { return model_; }

 private:
  static void SetType(onnx::ValueInfoProto* vi, const std::string& name,
                      const std::vector<int64_t>& shape, int32_t elem) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* s = tt->mutable_shape();
    for (int64_t d : shape) {
      if (d < 0) {
        s->add_dim()->set_dim_param("N");
      } else {
        s->add_dim()->set_dim_value(d);
      }
    }
  }
  onnx::ModelProto model_;
};

}  // namespace testing
}  // namespace ember

#endif  // EMBER_TESTS_CPP_COMPILER_ONNX_BUILDER_H_
