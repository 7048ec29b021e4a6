/*!
 * \file ember/runtime/byte_stream.h
 * \brief Bounds-checked little-endian readers and writers for the runtime's binary formats
 * (params, module blobs). They follow dmlc::Stream's encoding: PODs as raw little-endian bytes,
 * a string or vector as a u64 count followed by its elements.
 */
#ifndef EMBER_RUNTIME_BYTE_STREAM_H_
#define EMBER_RUNTIME_BYTE_STREAM_H_

#include <ember/runtime/logging.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

namespace ember::runtime {

/*!
 * \brief Reads from a byte range it does not own. Every read is checked against the end; a short
 * read throws Error naming the source (a file name or "params") and what was being read.
 */
class ByteReader {
 public:
  ByteReader(const char* data, size_t size, std::string source)
      : data_(data), size_(size), source_(std::move(source)) {}

  size_t offset() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const std::string& source() const { return source_; }

  /*! \brief Returns a pointer to the next \p n bytes and skips them. */
  const char* Take(size_t n, const char* what) {
    if (EMBER_UNLIKELY(n > remaining())) ThrowTruncated(n, what);
    const char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T Read(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>, "Read<T> needs a POD");
    T value;
    std::memcpy(&value, Take(sizeof(T), what), sizeof(T));
    return value;
  }
  /*! \brief A u64 length then bytes; the length is checked against what is left first. */
  std::string ReadString(const char* what) {
    uint64_t n = Read<uint64_t>(what);
    if (EMBER_UNLIKELY(n > remaining())) ThrowTruncated(n, what);
    return std::string(Take(static_cast<size_t>(n), what), static_cast<size_t>(n));
  }
  /*! \brief A u64 count then PODs; the count is checked against what is left first. */
  template <typename T>
  std::vector<T> ReadVector(const char* what) {
    uint64_t n = Read<uint64_t>(what);
    if (EMBER_UNLIKELY(n > remaining() / sizeof(T))) ThrowTruncated(n * sizeof(T), what);
    std::vector<T> out(static_cast<size_t>(n));
    if (n != 0) std::memcpy(out.data(), Take(out.size() * sizeof(T), what), out.size() * sizeof(T));
    return out;
  }
  /*! \brief A u64 count then that many strings. */
  std::vector<std::string> ReadStringVector(const char* what) {
    uint64_t n = Read<uint64_t>(what);
    // Each string needs at least its 8-byte length, which bounds a sane count.
    if (EMBER_UNLIKELY(n > remaining() / sizeof(uint64_t))) ThrowTruncated(n * 8, what);
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; ++i) out.push_back(ReadString(what));
    return out;
  }

 private:
  [[noreturn]] void ThrowTruncated(uint64_t need, const char* what) const {
    EMBER_LOG_FATAL << source_ << ": truncated data reading " << what << " at byte " << pos_
                    << ": need " << need << " bytes, " << remaining() << " left";
  }

  const char* data_;
  size_t size_;
  size_t pos_{0};
  std::string source_;
};

/*!
 * \brief Appends to a std::string, or writes to a stream, in the same encoding ByteReader reads.
 * A stream takes large payloads (a model's params.bin) without a copy of them in memory.
 */
class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}
  explicit ByteWriter(std::ostream* stream) : stream_(stream) {}

  void Write(const void* data, size_t n) {
    if (stream_ != nullptr) {
      stream_->write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    } else {
      out_->append(static_cast<const char*>(data), n);
    }
  }
  template <typename T>
  void Write(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "Write<T> needs a POD");
    Write(&value, sizeof(T));
  }
  void WriteString(const std::string& s) {
    Write<uint64_t>(s.size());
    Write(s.data(), s.size());
  }
  template <typename T>
  void WriteVector(const std::vector<T>& v) {
    Write<uint64_t>(v.size());
    if (!v.empty()) Write(v.data(), v.size() * sizeof(T));
  }
  void WriteStringVector(const std::vector<std::string>& v) {
    Write<uint64_t>(v.size());
    for (const auto& s : v) WriteString(s);
  }
 private:
  std::string* out_ = nullptr;
  std::ostream* stream_ = nullptr;
};

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the binary formats are little-endian; a big-endian host needs byte swapping here");

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_BYTE_STREAM_H_
