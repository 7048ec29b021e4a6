// Calibration samples for `emberc quantize`: a directory of .npy files, in one of two layouts.
//
//   DIR/NAME/INPUT.npy   one sub-directory per sample (sorted by name), holding one file per model
//                        input, named after the input; nothing else may be in it.
//   DIR/FILE.npy         one-input models only: every file (sorted by name) is one sample of the
//                        input's shape, or a leading batch of K samples: shape (K, *input_shape),
//                        or, when the input's first dimension is 1, (K, *input_shape[1:]).
//
// A directory mixing the two, a file that is not .npy, a file of another dtype or shape, a missing
// or extra input file is refused naming the file and input, expected against got. Every file's
// header and size are validated when the directory is opened (runtime/npy.cc's parser), before any
// data is read; a sample's bytes are read only when it is used, so a large set costs no memory up
// front.
#ifndef EMBER_COMPILER_QUANTIZE_CALIBRATION_DATA_H_
#define EMBER_COMPILER_QUANTIZE_CALIBRATION_DATA_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief A model input the samples must match. */
struct CalibrationInput {
  std::string name;
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  uint64_t ByteSize() const;
};

class CalibrationData {
 public:
  /*! \brief Lists and validates every sample of \p dir; throws CompileError. */
  CalibrationData(const std::string& dir, const std::vector<CalibrationInput>& inputs);

  int size() const { return static_cast<int>(samples_.size()); }
  const std::vector<CalibrationInput>& inputs() const { return inputs_; }
  /*! \brief Sample \p i's bytes, one buffer per input in inputs() order. */
  std::vector<std::vector<uint8_t>> Load(int i) const;
  /*! \brief "DIR/0003/input.npy" or "DIR/batch.npy[5]": where sample \p i comes from. */
  std::string Describe(int i) const;

 private:
  struct Slice {
    std::string path;
    uint64_t offset = 0;  // of the sample's first byte in the file
    int64_t index = -1;   // the sample's position in a batch file, or -1 for a whole file
  };
  void AddPerSampleDirectory(const std::string& sample_dir);
  void AddOneInputFile(const std::string& path);

  std::string dir_;
  std::vector<CalibrationInput> inputs_;
  std::vector<std::vector<Slice>> samples_;  // [sample][input]
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_QUANTIZE_CALIBRATION_DATA_H_
