// Quantize(): the float model prepared and planned (qdq_model.h), compiled by Ember with every
// tensor to quantize as an extra graph output, run on the calibration samples (ranges: running
// min/max, or a histogram per tensor over the min/max pass's range, clipped at a percentile of
// each tail), the QDQ model written, then compiled by Ember with each quantized layer's output as
// a graph output and run beside the float model on the same samples for the error report.
#include <ember/compiler/driver.h>
#include <ember/compiler/frontend.h>
#include <ember/compiler/ir/tensor_type.h>
#include <ember/compiler/quantize.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include "frontend/onnx/onnx_dtype.h"
#include "frontend/onnx/onnx_model_check.h"
#include "frontend/onnx/onnx_validator.h"
#include "quantize/artifact_session.h"
#include "quantize/calibration_data.h"
#include "quantize/qdq_model.h"
#include "runtime/json_string.h"

namespace ember {
namespace compiler {
namespace {

namespace fs = std::filesystem;

// A temporary directory removed with its contents when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ember-quantize-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw CompileError("cannot create a temporary directory in " +
                         fs::temp_directory_path().string());
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Sub(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

// The float model, checked by the frontend's validator before libonnx (the version converter,
// the checker) or the quantizer reads its tensors.
onnx::ModelProto LoadModel(const std::string& path) {
  onnx::ModelProto model = ReadOnnxModelFile(path);
  ValidateOnnxModel(model, DefaultDomainOpset(model), path);
  return model;
}

void SaveModel(const onnx::ModelProto& model, const std::string& path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw CompileError(path + ": the model does not serialize (over 2 GB?)");
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw CompileError(path + ": cannot write the model");
}

// The inputs samples feed (graph inputs that are not initializers), shapes after --input-shape.
std::vector<CalibrationInput> ModelInputs(const onnx::ModelProto& model, const std::string& source,
                                          const std::map<std::string, std::vector<int64_t>>& fix) {
  std::vector<CalibrationInput> out;
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  for (const auto& in : model.graph().input()) {
    if (inits.count(in.name())) continue;
    CalibrationInput ci;
    ci.name = in.name();
    const auto& tt = in.type().tensor_type();
    ci.dtype = OnnxToDType(tt.elem_type(), source + ": input '" + in.name() + "'");
    auto it = fix.find(in.name());
    if (it != fix.end()) {
      if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(it->second.size())) {
        throw CompileError("--input-shape " + in.name() + ": the input has rank " +
                           std::to_string(tt.shape().dim_size()) + ", got " +
                           std::to_string(it->second.size()) + " dims");
      }
      ci.shape = it->second;
    } else {
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        if (!tt.shape().dim(d).has_dim_value()) {
          throw CompileError(source + ": input '" + in.name() + "' dimension " + std::to_string(d) +
                             " is dynamic; pass --input-shape " + in.name() + "=d0,d1,...");
        }
        ci.shape.push_back(tt.shape().dim(d).dim_value());
      }
    }
    out.push_back(ci);
  }
  for (const auto& entry : fix) {
    const std::string& name = entry.first;  // not a structured binding: lambdas capture it
    if (std::none_of(out.begin(), out.end(), [&](const auto& c) { return c.name == name; })) {
      std::string names;
      for (const auto& c : out) names += (names.empty() ? "" : ", ") + c.name;
      throw CompileError("--input-shape: " + source + " has no input named '" + name +
                         "'; inputs are: " + names);
    }
  }
  return out;
}

// The progress line, on a terminal only.
class Progress {
 public:
  Progress(std::ostream* log, const char* what, int total)
      : log_(log != nullptr && ::isatty(2) ? log : nullptr),
        what_(what),
        total_(total),
        start_(std::chrono::steady_clock::now()) {}
  void Step(int done) {
    if (log_ == nullptr) return;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    *log_ << "\r" << what_ << ": " << done << "/" << total_ << " samples, " << std::fixed
          << std::setprecision(1) << s << " s" << (done == total_ ? "\n" : "") << std::flush;
  }

 private:
  std::ostream* log_;
  const char* what_;
  int total_;
  std::chrono::steady_clock::time_point start_;
};

// A compiled model with extra outputs, loaded in this process.
struct CompiledModel {
  std::unique_ptr<ArtifactSession> session;
  std::map<std::string, int> output_index;  // tensor name -> graph output index

  CompiledModel(const onnx::ModelProto& model, const QuantizeOptions& options, const TempDir& tmp,
                const std::string& name) {
    if (options.log != nullptr && ::isatty(2)) {
      *options.log << "compiling the " << name << " model with its " << model.graph().output_size()
                   << " outputs for calibration and report\n"
                   << std::flush;
    }
    const std::string path = tmp.Sub(name + ".onnx");
    SaveModel(model, path);
    CompileOptions copt;
    copt.model_path = path;
    copt.out_dir = tmp.Sub(name);
    copt.input_shapes = options.input_shapes;
    copt.jobs = options.jobs;
    try {
      Compile(copt);
      session = std::make_unique<ArtifactSession>(copt.out_dir);
    } catch (const std::exception& e) {
      throw CompileError("compiling the " + name +
                         " model with its intermediate outputs: " + e.what());
    }
    for (int i = 0; i < model.graph().output_size(); ++i) {
      output_index[model.graph().output(i).name()] = i;
    }
  }
  void Run(const CalibrationData& data, const std::vector<std::vector<uint8_t>>& sample) {
    for (size_t k = 0; k < sample.size(); ++k) {
      const CalibrationInput& in = data.inputs()[k];
      session->SetInput(in.name, in.dtype, in.shape, sample[k]);
    }
    session->Run();
  }
  std::vector<float> Get(const std::string& tensor) const {
    return session->Output(output_index.at(tensor));
  }
};

// The values of `tensor` for the sample just run: a graph input's sample bytes or an output.
std::vector<float> TensorValues(const std::string& tensor, const CompiledModel& model,
                                const CalibrationData& data,
                                const std::vector<std::vector<uint8_t>>& sample) {
  for (size_t k = 0; k < data.inputs().size(); ++k) {
    if (data.inputs()[k].name == tensor) {
      const float* p = reinterpret_cast<const float*>(sample[k].data());
      return std::vector<float>(p, p + sample[k].size() / sizeof(float));
    }
  }
  return model.Get(tensor);
}

struct Histogram {
  float lo = 0, hi = 0;
  std::vector<uint64_t> bins;
  uint64_t total = 0;
  void Add(const std::vector<float>& v) {
    const double width = (static_cast<double>(hi) - lo) / bins.size();
    for (float x : v) {
      if (!std::isfinite(x)) continue;
      size_t b = width > 0 ? static_cast<size_t>((x - lo) / width) : 0;
      bins[std::min(b, bins.size() - 1)]++;
      total++;
    }
  }
  // [lower, upper] cutting (100 - p) / 100 of the values off each tail (bin edges, outward).
  std::pair<float, float> Clip(double percentile) const {
    const double width = (static_cast<double>(hi) - lo) / bins.size();
    const double tail = total * (100.0 - percentile) / 100.0;
    size_t first = 0, last = bins.size() - 1;
    for (double seen = 0; first + 1 < bins.size() && seen + bins[first] <= tail; ++first) {
      seen += bins[first];
    }
    for (double seen = 0; last > first && seen + bins[last] <= tail; --last) seen += bins[last];
    return {static_cast<float>(lo + first * width), static_cast<float>(lo + (last + 1) * width)};
  }
};

std::map<std::string, std::pair<float, float>> ShareRanges(
    const QuantPlan& plan, std::map<std::string, std::pair<float, float>> ranges) {
  for (const auto& [t, source] : plan.same_range_as) ranges[t] = ranges.at(source);
  return ranges;
}

// Ranges of plan.activations over every sample.
std::map<std::string, std::pair<float, float>> Calibrate(const QuantPlan& plan,
                                                         CompiledModel* model,
                                                         const CalibrationData& data,
                                                         const QuantizeOptions& options) {
  std::map<std::string, std::pair<float, float>> ranges;
  for (const auto& t : plan.activations) {
    ranges[t] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  }
  Progress progress(options.log, "calibrating (min/max)", data.size());
  for (int i = 0; i < data.size(); ++i) {
    const auto sample = data.Load(i);
    model->Run(data, sample);
    for (const auto& t : plan.activations) {
      auto& r = ranges[t];
      for (float x : TensorValues(t, *model, data, sample)) {
        if (!std::isfinite(x)) continue;
        r.first = std::min(r.first, x);
        r.second = std::max(r.second, x);
      }
    }
    progress.Step(i + 1);
  }
  for (auto& [t, r] : ranges) {
    if (r.first > r.second) r = {0.0f, 0.0f};  // nothing finite seen
  }
  if (options.method != CalibrationMethod::kPercentile) return ShareRanges(plan, ranges);
  std::map<std::string, Histogram> hist;
  for (const auto& [t, r] : ranges) {
    hist[t] = Histogram{r.first, r.second, std::vector<uint64_t>(kPercentileBins, 0), 0};
  }
  Progress second(options.log, "calibrating (percentile histograms)", data.size());
  for (int i = 0; i < data.size(); ++i) {
    const auto sample = data.Load(i);
    model->Run(data, sample);
    for (const auto& t : plan.activations) hist[t].Add(TensorValues(t, *model, data, sample));
    second.Step(i + 1);
  }
  for (auto& [t, r] : ranges) r = hist[t].Clip(options.percentile);
  return ShareRanges(plan, ranges);
}

struct ErrorSums {
  double signal = 0, noise = 0, max_abs = 0;
  float lo = std::numeric_limits<float>::infinity(), hi = -std::numeric_limits<float>::infinity();
  void Add(const std::vector<float>& ref, const std::vector<float>& got) {
    for (size_t k = 0; k < ref.size() && k < got.size(); ++k) {
      const double d = static_cast<double>(got[k]) - ref[k];
      signal += static_cast<double>(ref[k]) * ref[k];
      noise += d * d;
      max_abs = std::max(max_abs, std::abs(d));
      lo = std::min(lo, ref[k]);
      hi = std::max(hi, ref[k]);
    }
  }
};

std::string Number(double v, int precision) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream ss;
  ss << std::fixed << std::setprecision(precision) << v;
  return ss.str();
}

using runtime::JsonString;

QuantizeResult Run(const QuantizeOptions& options) {
  const std::string& source = options.model_path;
  if (options.output_path.empty()) throw CompileError("no output model given (-o MODEL_INT8.onnx)");
  if (options.calibration_dir.empty()) {
    throw CompileError("no calibration data given (--calibration DIR of .npy files)");
  }
  if (!(options.percentile > 50.0 && options.percentile <= 100.0)) {
    throw CompileError("--percentile must be in (50, 100], got " + Number(options.percentile, 4));
  }
  const std::string ext = fs::path(options.report_path).extension().string();
  if (!options.report_path.empty() && ext != ".tsv" && ext != ".json") {
    throw CompileError("--report " + options.report_path + ": the file must end in .tsv or .json");
  }
  onnx::ModelProto model = LoadModel(source);
  PrepareFloatModel(&model, source);
  const QuantPlan plan = PlanQuantization(model, options.exclude, source);
  CalibrationData data(options.calibration_dir, ModelInputs(model, source, options.input_shapes));
  for (const auto& in : data.inputs()) {
    const bool is_float = in.dtype.code == kDLFloat && in.dtype.bits == 32;
    if (!is_float && std::find(plan.activations.begin(), plan.activations.end(), in.name) !=
                         plan.activations.end()) {
      throw CompileError(source + ": input '" + in.name + "' is read by a quantized layer but " +
                         "is not float32");
    }
  }

  TempDir tmp;
  std::vector<std::string> observed = plan.activations;
  for (const QuantLayer& l : plan.layers) observed.push_back(l.output);
  CompiledModel float_model(WithExtraOutputs(model, observed), options, tmp, "float");
  const auto ranges = Calibrate(plan, &float_model, data, options);

  const onnx::ModelProto qdq = WriteQdqModel(model, plan, ranges, options.per_tensor_weights);
  SaveModel(qdq, options.output_path);

  // The report: each layer's quantized output against the float model's, sample by sample.
  std::vector<std::string> compared;
  QuantizeResult result;
  for (const QuantLayer& l : plan.layers) {
    compared.push_back(DequantizedName(qdq, l.output));
    LayerError e;
    e.node = l.node;
    e.op = l.op;
    e.tensor = l.output;
    result.layers.push_back(e);
  }
  for (const auto& o : model.graph().output()) {
    compared.push_back(o.name());
    LayerError e;
    e.node = o.name();
    e.op = "output";
    e.tensor = o.name();
    e.model_output = true;
    result.layers.push_back(e);
  }
  CompiledModel quant_model(WithExtraOutputs(qdq, compared), options, tmp, "quantized");
  std::vector<ErrorSums> sums(result.layers.size());
  Progress progress(options.log, "measuring the quantized model's error", data.size());
  for (int i = 0; i < data.size(); ++i) {
    const auto sample = data.Load(i);
    float_model.Run(data, sample);
    quant_model.Run(data, sample);
    for (size_t k = 0; k < result.layers.size(); ++k) {
      sums[k].Add(TensorValues(result.layers[k].tensor, float_model, data, sample),
                  quant_model.Get(compared[k]));
    }
    progress.Step(i + 1);
  }
  for (size_t k = 0; k < result.layers.size(); ++k) {
    LayerError& e = result.layers[k];
    e.sqnr_db = sums[k].noise > 0 ? 10 * std::log10(sums[k].signal / sums[k].noise)
                                  : std::numeric_limits<double>::infinity();
    e.max_abs = sums[k].max_abs;
    e.range = sums[k].hi > sums[k].lo ? static_cast<double>(sums[k].hi) - sums[k].lo : 0;
  }
  result.samples = data.size();
  result.quantized_nodes = static_cast<int>(plan.layers.size());
  result.excluded_nodes = static_cast<int>(plan.excluded.size());
  if (!options.report_path.empty()) {
    std::ofstream f(options.report_path, std::ios::trunc);
    f << (ext == ".json" ? result.Json() : result.Tsv());
    if (!f) throw CompileError("--report " + options.report_path + ": cannot write the file");
  }
  return result;
}

}  // namespace

std::string QuantizeResult::Table() const {
  size_t width = 4;
  for (const auto& l : layers) width = std::max(width, l.node.size());
  std::ostringstream ss;
  ss << std::left << std::setw(static_cast<int>(width)) << "node"
     << "  " << std::setw(10) << "op" << std::right << std::setw(9) << "SQNR dB" << std::setw(16)
     << "max|err|/range"
     << "\n";
  for (const auto& l : layers) {
    ss << std::left << std::setw(static_cast<int>(width)) << l.node << "  " << std::setw(10)
       << (l.model_output ? "(output)" : l.op) << std::right << std::setw(9) << Number(l.sqnr_db, 1)
       << std::setw(15) << Number(100 * l.RelativeMaxError(), 2) << "%\n";
  }
  ss << quantized_nodes << " nodes quantized, " << excluded_nodes << " excluded; error over "
     << samples << " calibration samples, Ember's int8 run against its fp32 run\n";
  return ss.str();
}

std::string QuantizeResult::Tsv() const {
  std::ostringstream ss;
  ss << "node\top\ttensor\tsqnr_db\tmax_abs_error\tfp32_range\tmax_error_of_range\n";
  for (const auto& l : layers) {
    ss << l.node << "\t" << (l.model_output ? "output" : l.op) << "\t" << l.tensor << "\t"
       << Number(l.sqnr_db, 3) << "\t" << l.max_abs << "\t" << l.range << "\t"
       << l.RelativeMaxError() << "\n";
  }
  return ss.str();
}

std::string QuantizeResult::Json() const {
  std::ostringstream ss;
  ss << "{\"samples\": " << samples << ", \"quantized_nodes\": " << quantized_nodes
     << ", \"excluded_nodes\": " << excluded_nodes << ", \"layers\": [";
  for (size_t k = 0; k < layers.size(); ++k) {
    const LayerError& l = layers[k];
    ss << (k ? ", " : "") << "{\"node\": " << JsonString(l.node)
       << ", \"op\": " << JsonString(l.model_output ? "output" : l.op)
       << ", \"tensor\": " << JsonString(l.tensor)
       << ", \"sqnr_db\": " << (std::isinf(l.sqnr_db) ? std::string("null") : Number(l.sqnr_db, 4))
       << ", \"max_abs_error\": " << l.max_abs << ", \"fp32_range\": " << l.range
       << ", \"max_error_of_range\": " << l.RelativeMaxError() << "}";
  }
  ss << "]}\n";
  return ss.str();
}

QuantizeResult Quantize(const QuantizeOptions& options) { return Run(options); }

QuantizeOptions ParseQuantizeArgs(const std::vector<std::string>& args) {
  QuantizeOptions opt;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw CompileError(a + " needs a value");
      return args[++i];
    };
    if (a == "-o" || a == "--output") {
      opt.output_path = value();
    } else if (a == "--calibration") {
      opt.calibration_dir = value();
    } else if (a == "--method") {
      const std::string m = value();
      if (m == "minmax") {
        opt.method = CalibrationMethod::kMinMax;
      } else if (m == "percentile") {
        opt.method = CalibrationMethod::kPercentile;
      } else {
        throw CompileError("--method must be minmax or percentile, got '" + m + "'");
      }
    } else if (a == "--percentile") {
      const std::string v = value();
      char* end = nullptr;
      opt.percentile = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0') {
        throw CompileError("--percentile must be a number such as 99.99, got '" + v + "'");
      }
      opt.method = CalibrationMethod::kPercentile;
    } else if (a == "--per-tensor-weights") {
      opt.per_tensor_weights = true;
    } else if (a == "--exclude") {
      opt.exclude.push_back(value());
    } else if (a == "--input-shape") {
      auto parsed = ParseInputShape(value());
      opt.input_shapes[parsed.first] = parsed.second;
    } else if (a == "--report") {
      opt.report_path = value();
    } else if (!a.empty() && a[0] == '-') {
      throw CompileError("unknown option '" + a + "' for quantize; run 'emberc --help'");
    } else if (opt.model_path.empty()) {
      opt.model_path = a;
    } else {
      throw CompileError("unexpected argument '" + a + "' (model already given: " + opt.model_path +
                         ")");
    }
  }
  if (opt.model_path.empty()) {
    throw CompileError(
        "no model given; usage: emberc quantize MODEL.onnx -o MODEL_INT8.onnx --calibration DIR");
  }
  return opt;
}

}  // namespace compiler
}  // namespace ember
