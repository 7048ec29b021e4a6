// CalibrationData (layout in calibration_data.h).
#include "quantize/calibration_data.h"

#include <ember/compiler/ir/tensor_type.h>
#include <ember/runtime/npy.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

namespace ember {
namespace compiler {
namespace {

namespace fs = std::filesystem;

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string TypeText(DLDataType dtype, const std::vector<int64_t>& shape) {
  return runtime::NpyDescr(dtype) + " " + ShapeText(shape);
}

bool SameDType(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

runtime::NpyHeader ReadHeader(const std::string& path) {
  try {
    return runtime::ReadNpyHeader(path);
  } catch (const std::exception& e) {
    throw CompileError(std::string("calibration data: ") + e.what());
  }
}

// Entries of `dir` sorted by name.
std::vector<fs::path> SortedEntries(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::path> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path());
  }
  if (ec) throw CompileError("calibration data: cannot list " + dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

uint64_t CalibrationInput::ByteSize() const {
  uint64_t n = (static_cast<uint64_t>(dtype.bits) * dtype.lanes + 7) / 8;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

CalibrationData::CalibrationData(const std::string& dir,
                                 const std::vector<CalibrationInput>& inputs)
    : dir_(dir), inputs_(inputs) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    throw CompileError("calibration data: no such directory: " + dir);
  }
  if (!fs::is_directory(dir, ec)) {
    throw CompileError("calibration data: " + dir +
                       " is not a directory (give a directory of .npy files)");
  }
  std::vector<fs::path> files, dirs;
  for (const fs::path& p : SortedEntries(dir)) {
    if (fs::is_directory(p, ec)) {
      dirs.push_back(p);
    } else if (p.extension() == ".npy") {
      files.push_back(p);
    } else {
      throw CompileError("calibration data: " + p.string() + " is not a .npy file; " + dir +
                         " holds DIR/SAMPLE/INPUT.npy, or DIR/*.npy for a one-input model");
    }
  }
  if (!files.empty() && !dirs.empty()) {
    throw CompileError("calibration data: " + dir + " holds both .npy files (" +
                       files[0].filename().string() + ") and sample directories (" +
                       dirs[0].filename().string() +
                       "); use one layout: DIR/SAMPLE/INPUT.npy, or DIR/*.npy for a one-input "
                       "model");
  }
  if (!files.empty()) {
    if (inputs_.size() != 1) {
      std::string names;
      for (const auto& in : inputs_) names += (names.empty() ? "" : ", ") + in.name;
      throw CompileError("calibration data: " + files[0].string() + " is a file in " + dir +
                         ", but the model has " + std::to_string(inputs_.size()) + " inputs (" +
                         names + "); give one directory per sample holding " +
                         "INPUT.npy for each");
    }
    for (const fs::path& f : files) AddOneInputFile(f.string());
  }
  for (const fs::path& d : dirs) AddPerSampleDirectory(d.string());
  if (samples_.empty()) {
    throw CompileError("calibration data: " + dir +
                       " holds no samples (expected DIR/SAMPLE/INPUT.npy, or DIR/*.npy for a "
                       "one-input model)");
  }
}

void CalibrationData::AddOneInputFile(const std::string& path) {
  const CalibrationInput& in = inputs_[0];
  runtime::NpyHeader h = ReadHeader(path);
  const std::string want = TypeText(in.dtype, in.shape);
  if (!SameDType(h.dtype, in.dtype)) {
    throw CompileError("calibration data: " + path + " for input '" + in.name + "': expected " +
                       want + ", got " + TypeText(h.dtype, h.shape));
  }
  std::vector<int64_t> per_sample;
  int64_t count = -1;
  if (h.shape == in.shape) {
    count = 0;  // one whole-file sample
  } else if (h.shape.size() == in.shape.size() + 1 &&
             std::equal(in.shape.begin(), in.shape.end(), h.shape.begin() + 1)) {
    count = h.shape[0];
  } else if (!in.shape.empty() && in.shape[0] == 1 && h.shape.size() == in.shape.size() &&
             std::equal(in.shape.begin() + 1, in.shape.end(), h.shape.begin() + 1)) {
    count = h.shape[0];
  }
  if (count < 0) {
    throw CompileError("calibration data: " + path + " for input '" + in.name + "': expected " +
                       want + " (one sample) or a leading batch of samples (K, ...), got " +
                       TypeText(h.dtype, h.shape));
  }
  if (count == 0) {
    samples_.push_back({Slice{path, h.data_offset, -1}});
    return;
  }
  for (int64_t k = 0; k < count; ++k) {
    samples_.push_back({Slice{path, h.data_offset + static_cast<uint64_t>(k) * in.ByteSize(), k}});
  }
}

void CalibrationData::AddPerSampleDirectory(const std::string& sample_dir) {
  std::vector<Slice> slices;
  std::set<std::string> expected;
  for (const auto& in : inputs_) expected.insert(in.name + ".npy");
  for (const fs::path& p : SortedEntries(sample_dir)) {
    if (expected.count(p.filename().string()) == 0) {
      std::string names;
      for (const auto& e : expected) names += (names.empty() ? "" : ", ") + e;
      throw CompileError(
          "calibration data: " + p.string() +
          " is not an input of the model; a sample directory holds exactly: " + names);
    }
  }
  for (const auto& in : inputs_) {
    const std::string path = (fs::path(sample_dir) / (in.name + ".npy")).string();
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      throw CompileError("calibration data: " + sample_dir + " has no " + in.name +
                         ".npy for input '" + in.name + "' (" + TypeText(in.dtype, in.shape) + ")");
    }
    runtime::NpyHeader h = ReadHeader(path);
    if (!SameDType(h.dtype, in.dtype) || h.shape != in.shape) {
      throw CompileError("calibration data: " + path + " for input '" + in.name + "': expected " +
                         TypeText(in.dtype, in.shape) + ", got " + TypeText(h.dtype, h.shape));
    }
    slices.push_back(Slice{path, h.data_offset, -1});
  }
  samples_.push_back(std::move(slices));
}

std::vector<std::vector<uint8_t>> CalibrationData::Load(int i) const {
  std::vector<std::vector<uint8_t>> out;
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const Slice& s = samples_.at(static_cast<size_t>(i))[k];
    std::vector<uint8_t> bytes(inputs_[k].ByteSize());
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(s.path.c_str(), "rb"), &std::fclose);
    if (!f || std::fseek(f.get(), static_cast<long>(s.offset), SEEK_SET) != 0 ||
        std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size()) {
      throw CompileError("calibration data: cannot read " + Describe(i) + ": " +
                         std::strerror(errno));
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

std::string CalibrationData::Describe(int i) const {
  const Slice& s = samples_.at(static_cast<size_t>(i)).at(0);
  return s.index < 0 ? s.path : s.path + "[" + std::to_string(s.index) + "]";
}

}  // namespace compiler
}  // namespace ember
