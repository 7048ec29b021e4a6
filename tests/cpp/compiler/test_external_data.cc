// External data: read from inside the model's directory, refused everywhere else, and no message
// that depends on files outside that directory.
#include <ember/compiler/frontend.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "onnx_builder.h"

namespace ember {
namespace compiler {
namespace {

namespace fs = std::filesystem;
using testing::OnnxBuilder;

const std::vector<float> kW = {1, 2, 3, 4, 5, 6};
const std::vector<float> kC = {0.5f, -1, 2, 4, 8, -16};
constexpr size_t kTensorBytes = 6 * sizeof(float);

std::string FloatBytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

// y = (x + w) * c: w an initializer, c a Constant node's value.
onnx::ModelProto EmbeddedModel() {
  OnnxBuilder b;
  b.Input("x", {2, 3}).FloatInit("w", {2, 3}, kW);
  b.Node("Add", "add", {"x", "w"}, {"s"});
  onnx::NodeProto* cn = b.Node("Constant", "const_c", {}, {"c"});
  auto* attr = cn->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = attr->mutable_t();
  t->set_name("c");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->add_dims(3);
  for (float v : kC) t->add_float_data(v);
  b.Node("Mul", "mul", {"s", "c"}, {"y"});
  b.Output("y", {2, 3});
  onnx::ModelProto m;
  m.ParseFromString(b.Bytes());
  return m;
}

void MakeExternal(onnx::TensorProto* t, const std::string& location, int64_t offset,
                  int64_t length) {
  t->clear_float_data();
  t->clear_raw_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [t](const char* key, const std::string& value) {
    auto* kv = t->add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
}

onnx::TensorProto* InitW(onnx::ModelProto* m) { return m->mutable_graph()->mutable_initializer(0); }
onnx::TensorProto* ConstC(onnx::ModelProto* m) {
  return m->mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_t();
}

// The byte contents of every constant the imported graph holds, sorted.
std::vector<std::vector<uint8_t>> Constants(const Graph& g) {
  std::vector<std::vector<uint8_t>> out;
  for (const auto& node : g.nodes()) {
    for (int v : node.inputs) {
      if (v >= 0 && g.value(v).is_constant()) out.push_back(g.value(v).constant->data);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    base_ = fs::path(::testing::TempDir()) /
            ("ember_external_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(base_);
    dir_ = base_ / "model";
    fs::create_directories(dir_ / "data");
    // w at offset 16 after junk, c right behind it, in one side file (as onnx.save writes).
    WriteFile(dir_ / "weights.bin", std::string(16, 'j') + FloatBytes(kW) + FloatBytes(kC));
  }
  void TearDown() override { fs::remove_all(base_); }

  // Saves `m` as model.onnx in the model directory and imports it; returns the error or "".
  std::string ErrorOf(const onnx::ModelProto& m) {
    std::string path = (dir_ / "model.onnx").string();
    WriteFile(path, m.SerializeAsString());
    try {
      ImportOnnxFile(path, {});
    } catch (const CompileError& e) {
      return e.what();
    }
    return "";
  }

  // A model whose w lives at `location` (offset 0, its own length).
  std::string ErrorForLocation(const std::string& location) {
    onnx::ModelProto m = EmbeddedModel();
    MakeExternal(InitW(&m), location, 0, kTensorBytes);
    return ErrorOf(m);
  }

  fs::path base_, dir_;
};

TEST_F(ExternalData, MatchesTheSameModelWithEmbeddedWeights) {
  Graph embedded = ImportOnnxBytes(EmbeddedModel().SerializeAsString(), "embedded.onnx", {});
  onnx::ModelProto m = EmbeddedModel();
  MakeExternal(InitW(&m), "weights.bin", 16, kTensorBytes);
  MakeExternal(ConstC(&m), "weights.bin", 16 + kTensorBytes, -1);  // no length: to the end
  std::string path = (dir_ / "model.onnx").string();
  WriteFile(path, m.SerializeAsString());
  Graph external = ImportOnnxFile(path, {});
  ASSERT_EQ(Constants(external).size(), 2u);
  EXPECT_EQ(Constants(external), Constants(embedded));
}

TEST_F(ExternalData, SubdirectoriesAndSymlinksInsideTheDirectoryAreFollowed) {
  WriteFile(dir_ / "data" / "w.bin", FloatBytes(kW));
  fs::create_symlink("data/w.bin", dir_ / "link.bin");
  fs::create_symlink(dir_ / "data", dir_ / "abs_dir_link");  // absolute, but inside
  fs::create_symlink("../link.bin", dir_ / "data" / "up.bin");
  for (const char* location :
       {"data/w.bin", "./data//w.bin", "link.bin", "abs_dir_link/w.bin", "data/up.bin"}) {
    EXPECT_EQ(ErrorForLocation(location), "") << location;
  }
}

TEST_F(ExternalData, AbsoluteLocationsAreRefusedNamingTheTensor) {
  std::string err = ErrorForLocation((dir_ / "weights.bin").string());  // even one inside
  EXPECT_NE(err.find("tensor 'w'"), std::string::npos) << err;
  EXPECT_NE(err.find("is an absolute path"), std::string::npos) << err;
  EXPECT_NE(err.find("only from files inside the model's directory"), std::string::npos) << err;
}

TEST_F(ExternalData, DotDotIsRefusedEvenWhenItStaysInside) {
  WriteFile(base_ / "outside.bin", FloatBytes(kW));
  for (const char* location : {"../outside.bin", "data/../weights.bin", "data/.."}) {
    std::string err = ErrorForLocation(location);
    EXPECT_NE(err.find("tensor 'w'"), std::string::npos) << err;
    EXPECT_NE(err.find("contains '..'"), std::string::npos) << err;
  }
}

TEST_F(ExternalData, SymlinksLeavingTheDirectoryAreRefused) {
  WriteFile(base_ / "outside.bin", FloatBytes(kW));
  fs::create_symlink("../outside.bin", dir_ / "rel.bin");
  fs::create_symlink(base_ / "outside.bin", dir_ / "abs.bin");
  fs::create_symlink("..", dir_ / "data" / "parent");     // the model's directory itself
  fs::create_symlink("data/parent/..", dir_ / "escape");  // one step above it
  fs::create_symlink(base_, dir_ / "up_dir");
  for (const char* location : {"rel.bin", "abs.bin", "escape/outside.bin", "up_dir/outside.bin"}) {
    std::string err = ErrorForLocation(location);
    EXPECT_NE(err.find("tensor 'w'"), std::string::npos) << location << ": " << err;
    EXPECT_NE(err.find("resolves through a symlink to outside the model's directory"),
              std::string::npos)
        << location << ": " << err;
  }
}

// The oracle of the old checker: what exists outside the directory must not change a message.
TEST_F(ExternalData, NoMessageDependsOnFilesOutsideTheDirectory) {
  fs::create_symlink("/etc/passwd", dir_ / "to_existing.bin");
  std::string existing = ErrorForLocation("to_existing.bin");
  fs::remove(dir_ / "to_existing.bin");
  fs::create_symlink("/nonexistent/ember/secret", dir_ / "to_existing.bin");
  EXPECT_EQ(ErrorForLocation("to_existing.bin"), existing);
  EXPECT_NE(existing, "");

  // Absolute and ".." locations: the same words whether the target exists or not.
  auto strip = [](std::string err, const std::string& location) {
    size_t at = err.find(location);
    if (at != std::string::npos) err.erase(at, location.size());
    return err;
  };
  EXPECT_EQ(strip(ErrorForLocation("/etc/passwd"), "/etc/passwd"),
            strip(ErrorForLocation("/nonexistent/x"), "/nonexistent/x"));
  EXPECT_EQ(
      strip(ErrorForLocation("../../../../../../etc/passwd"), "../../../../../../etc/passwd"),
      strip(ErrorForLocation("../../../../../../nonexistent"), "../../../../../../nonexistent"));

  // A relative location is looked up in the model's directory, never in the current one.
  std::string missing = ErrorForLocation("only_in_cwd.bin");
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(::chdir(base_.c_str()), 0);
  WriteFile(base_ / "only_in_cwd.bin", FloatBytes(kW));
  std::string with_cwd_file = ErrorForLocation("only_in_cwd.bin");
  ASSERT_EQ(::chdir(cwd), 0);
  EXPECT_EQ(with_cwd_file, missing);
  EXPECT_NE(missing.find("tensor 'w': external data file 'only_in_cwd.bin' does not exist in the "
                         "model's directory"),
            std::string::npos)
      << missing;
}

TEST_F(ExternalData, OffsetAndLengthMustLieInTheFileAndMatchTheTensor) {
  const size_t file_size = 16 + 2 * kTensorBytes;
  struct Case {
    int64_t offset, length;
    const char* says;
  } cases[] = {
      {static_cast<int64_t>(file_size) + 1, -1, "is beyond the end of 'weights.bin' (64 bytes)"},
      {41, static_cast<int64_t>(kTensorBytes), "goes past the end of 'weights.bin' (64 bytes)"},
      {0, 1 << 30, "goes past the end of 'weights.bin' (64 bytes)"},
      {0, 12, "needs 24 bytes for its type and dims, but its external data in 'weights.bin' is 12"},
      {0, -1, "needs 24 bytes for its type and dims, but its external data in 'weights.bin' is 64"},
  };
  for (const Case& c : cases) {
    onnx::ModelProto m = EmbeddedModel();
    MakeExternal(InitW(&m), "weights.bin", c.offset, c.length);
    std::string err = ErrorOf(m);
    EXPECT_NE(err.find("tensor 'w'"), std::string::npos) << c.offset << "+" << c.length;
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
  }
  onnx::ModelProto m = EmbeddedModel();
  MakeExternal(InitW(&m), "weights.bin", -1, -1);
  InitW(&m)->mutable_external_data(0)->set_key("offset");
  InitW(&m)->mutable_external_data(0)->set_value("-8");
  std::string err = ErrorOf(m);
  EXPECT_NE(err.find("tensor 'w': external data offset is '-8', expected a non-negative integer"),
            std::string::npos)
      << err;
}

TEST_F(ExternalData, MissingFilesAndDirectoriesAreNamed) {
  std::string err = ErrorForLocation("nope.bin");
  EXPECT_NE(err.find("tensor 'w': external data file 'nope.bin' does not exist"), std::string::npos)
      << err;
  err = ErrorForLocation("data");
  EXPECT_NE(err.find("tensor 'w': external data location 'data' is not a regular file"),
            std::string::npos)
      << err;
  err = ErrorForLocation("weights.bin/x");
  EXPECT_NE(err.find("'weights.bin' in it is not a directory"), std::string::npos) << err;
  onnx::ModelProto m = EmbeddedModel();
  MakeExternal(ConstC(&m), "", 0, kTensorBytes);
  err = ErrorOf(m);
  EXPECT_NE(err.find("tensor 'c' keeps its data in an external file but gives no location"),
            std::string::npos)
      << err;
}

TEST_F(ExternalData, ModelBytesWithExternalDataAreRefusedBeforeLibonnxLooksForTheFile) {
  onnx::ModelProto m = EmbeddedModel();
  MakeExternal(InitW(&m), "weights.bin", 16, kTensorBytes);
  try {
    ImportOnnxBytes(m.SerializeAsString(), "m.onnx", {});
    ADD_FAILURE() << "imported external data without a directory";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.onnx: tensor 'w' keeps its data in an external file, which emberc resolves "
              "against the model's directory; compile the model from its file path");
  }
}

}  // namespace
}  // namespace compiler
}  // namespace ember
