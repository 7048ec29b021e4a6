/*!
 * \file ember/runtime/container.h
 * \brief Reference-counted containers: String, Array<T> (copy-on-write), Map<K, V>, ShapeTuple,
 * Optional<T>.
 *
 * Elements are ObjectRefs (String, NDArray, Module, ...). Copying a container shares it; the
 * first mutation of a shared Array or Map copies it first, so a copy never sees another's edits.
 */
#ifndef EMBER_RUNTIME_CONTAINER_H_
#define EMBER_RUNTIME_CONTAINER_H_

#include <ember/runtime/object.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember::runtime {

// ---------------------------------------------------------------------------------------------
// String

/*! \brief An immutable byte string (may hold zeros). */
class StringObj : public Object {
 public:
  const char* data{nullptr};
  uint64_t size{0};

  static constexpr const char* _type_key = "runtime.String";
  static constexpr uint32_t _type_index = TypeIndex::kRuntimeString;
  EMBER_DECLARE_FINAL_OBJECT_INFO(StringObj, Object);

  explicit StringObj(std::string s) : storage_(std::move(s)) {
    data = storage_.data();
    size = storage_.size();
  }

 private:
  std::string storage_;
};

/*! \brief Immutable string handle; converts to and from std::string. */
class String : public ObjectRef {
 public:
  String() : String(std::string()) {}
  String(std::string s)  // NOLINT(runtime/explicit)
      : ObjectRef(make_object<StringObj>(std::move(s))) {}
  String(const char* s) : String(std::string(s)) {}  // NOLINT(runtime/explicit)
  String(const char* s, size_t n) : String(std::string(s, n)) {}
  explicit String(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}

  const char* data() const { return get()->data; }
  const char* c_str() const { return get()->data; }
  size_t size() const { return get()->size; }
  size_t length() const { return size(); }
  bool empty() const { return size() == 0; }
  std::string_view view() const { return std::string_view(data(), size()); }
  operator std::string() const { return std::string(data(), size()); }  // NOLINT
  std::string str() const { return std::string(data(), size()); }
  const StringObj* get() const { return static_cast<const StringObj*>(data_.get()); }
  const StringObj* operator->() const { return get(); }

  using ContainerType = StringObj;
  static constexpr bool _type_is_nullable = false;
};

inline bool operator==(const String& a, const String& b) { return a.view() == b.view(); }
inline bool operator!=(const String& a, const String& b) { return !(a == b); }
inline bool operator==(const String& a, std::string_view b) { return a.view() == b; }
inline bool operator!=(const String& a, std::string_view b) { return a.view() != b; }
inline bool operator==(const String& a, const char* b) { return a.view() == b; }
inline bool operator!=(const String& a, const char* b) { return a.view() != b; }
inline bool operator<(const String& a, const String& b) { return a.view() < b.view(); }
inline std::ostream& operator<<(std::ostream& os, const String& s) { return os << s.view(); }

// ---------------------------------------------------------------------------------------------
// Array

/*! \brief Payload of Array<T>: a vector of ObjectRefs. */
class ArrayNode : public Object {
 public:
  std::vector<ObjectRef> data;

  static constexpr const char* _type_key = "runtime.Array";
  static constexpr uint32_t _type_index = TypeIndex::kRuntimeArray;
  EMBER_DECLARE_FINAL_OBJECT_INFO(ArrayNode, Object);
};

/*! \brief A shared, copy-on-write list of T (T an ObjectRef type). */
template <typename T>
class Array : public ObjectRef {
 public:
  static_assert(std::is_base_of_v<ObjectRef, T>, "Array<T>: T must be an ObjectRef type");
  using ContainerType = ArrayNode;
  using value_type = T;

  Array() : ObjectRef(make_object<ArrayNode>()) {}
  explicit Array(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}
  Array(std::initializer_list<T> init) : Array(init.begin(), init.end()) {}
  explicit Array(const std::vector<T>& init) : Array(init.begin(), init.end()) {}
  template <typename It>
  Array(It first, It last) : Array() {
    for (; first != last; ++first) node()->data.push_back(*first);
  }

  size_t size() const { return data_ ? node()->data.size() : 0; }
  bool empty() const { return size() == 0; }
  /*! \brief Element \p i; throws naming the index and size when out of range. */
  T operator[](size_t i) const {
    EMBER_CHECK_LT(i, size()) << "Array index out of range";
    return Unchecked(node()->data[i]);
  }
  T front() const { return (*this)[0]; }
  T back() const {
    EMBER_CHECK(!empty()) << "Array::back on an empty array";
    return (*this)[size() - 1];
  }

  void push_back(const T& item) { CopyOnWrite()->data.push_back(item); }
  void pop_back() {
    EMBER_CHECK(!empty()) << "Array::pop_back on an empty array";
    CopyOnWrite()->data.pop_back();
  }
  void Set(size_t i, const T& value) {
    EMBER_CHECK_LT(i, size()) << "Array::Set index out of range";
    CopyOnWrite()->data[i] = value;
  }
  void clear() { CopyOnWrite()->data.clear(); }
  void reserve(size_t n) { CopyOnWrite()->data.reserve(n); }

  /*! \brief Ensures this handle is the only owner, copying the payload if it was shared. */
  ArrayNode* CopyOnWrite() {
    if (!data_) {
      data_ = make_object<ArrayNode>();
    } else if (data_.use_count() != 1) {
      auto copy = make_object<ArrayNode>();
      copy->data = node()->data;
      data_ = std::move(copy);
    }
    return node();
  }

  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;
    explicit iterator(std::vector<ObjectRef>::const_iterator it) : it_(it) {}
    T operator*() const { return Unchecked(*it_); }
    iterator& operator++() {
      ++it_;
      return *this;
    }
    bool operator==(const iterator& o) const { return it_ == o.it_; }
    bool operator!=(const iterator& o) const { return it_ != o.it_; }
    difference_type operator-(const iterator& o) const { return it_ - o.it_; }

   private:
    std::vector<ObjectRef>::const_iterator it_;
  };
  iterator begin() const { return iterator(node()->data.begin()); }
  iterator end() const { return iterator(node()->data.end()); }

  const ArrayNode* get() const { return static_cast<const ArrayNode*>(data_.get()); }

 private:
  ArrayNode* node() const { return static_cast<ArrayNode*>(data_.get()); }
  static T Unchecked(const ObjectRef& ref) { return T(ObjectRefInternal::Data(ref)); }
};

// ---------------------------------------------------------------------------------------------
// Map

/*! \brief Payload of Map<K, V>: entries in insertion order plus a hash index. */
class MapNode : public Object {
 public:
  std::vector<std::pair<ObjectRef, ObjectRef>> entries;
  std::unordered_map<ObjectRef, size_t, ObjectPtrHash, ObjectPtrEqual> index;

  static constexpr const char* _type_key = "runtime.Map";
  static constexpr uint32_t _type_index = TypeIndex::kRuntimeMap;
  EMBER_DECLARE_FINAL_OBJECT_INFO(MapNode, Object);

  const ObjectRef* Find(const ObjectRef& key) const {
    auto it = index.find(key);
    return it == index.end() ? nullptr : &entries[it->second].second;
  }
  void Set(const ObjectRef& key, const ObjectRef& value) {
    auto it = index.find(key);
    if (it != index.end()) {
      entries[it->second].second = value;
    } else {
      index.emplace(key, entries.size());
      entries.emplace_back(key, value);
    }
  }
  bool Erase(const ObjectRef& key) {
    auto it = index.find(key);
    if (it == index.end()) return false;
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(it->second));
    index.clear();
    for (size_t i = 0; i < entries.size(); ++i) index.emplace(entries[i].first, i);
    return true;
  }
};

/*!
 * \brief A shared, copy-on-write map that iterates in insertion order. String keys compare by
 * content, other keys by identity.
 */
template <typename K, typename V>
class Map : public ObjectRef {
 public:
  static_assert(std::is_base_of_v<ObjectRef, K> && std::is_base_of_v<ObjectRef, V>,
                "Map<K, V>: K and V must be ObjectRef types");
  using ContainerType = MapNode;

  Map() : ObjectRef(make_object<MapNode>()) {}
  explicit Map(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}
  Map(std::initializer_list<std::pair<K, V>> init) : Map() {
    for (const auto& kv : init) Set(kv.first, kv.second);
  }

  size_t size() const { return data_ ? node()->entries.size() : 0; }
  bool empty() const { return size() == 0; }
  size_t count(const K& key) const { return data_ && node()->Find(key) ? 1 : 0; }
  /*! \brief The value under \p key; throws if absent. */
  V at(const K& key) const {
    const ObjectRef* v = data_ ? node()->Find(key) : nullptr;
    EMBER_CHECK(v != nullptr) << "Map: key not found";
    return V(ObjectRefInternal::Data(*v));
  }
  V operator[](const K& key) const { return at(key); }
  /*! \brief Pointer-free lookup: returns false and leaves \p out alone when absent. */
  bool Get(const K& key, V* out) const {
    const ObjectRef* v = data_ ? node()->Find(key) : nullptr;
    if (v == nullptr) return false;
    *out = V(ObjectRefInternal::Data(*v));
    return true;
  }
  void Set(const K& key, const V& value) { CopyOnWrite()->Set(key, value); }
  bool erase(const K& key) { return CopyOnWrite()->Erase(key); }

  MapNode* CopyOnWrite() {
    if (!data_) {
      data_ = make_object<MapNode>();
    } else if (data_.use_count() != 1) {
      auto copy = make_object<MapNode>();
      copy->entries = node()->entries;
      copy->index = node()->index;
      data_ = std::move(copy);
    }
    return node();
  }

  class iterator {
   public:
    using Entry = std::pair<ObjectRef, ObjectRef>;
    explicit iterator(typename std::vector<Entry>::const_iterator it) : it_(it) {}
    std::pair<K, V> operator*() const {
      return {K(ObjectRefInternal::Data(it_->first)), V(ObjectRefInternal::Data(it_->second))};
    }
    iterator& operator++() {
      ++it_;
      return *this;
    }
    bool operator==(const iterator& o) const { return it_ == o.it_; }
    bool operator!=(const iterator& o) const { return it_ != o.it_; }

   private:
    typename std::vector<Entry>::const_iterator it_;
  };
  iterator begin() const { return iterator(node()->entries.begin()); }
  iterator end() const { return iterator(node()->entries.end()); }

 private:
  MapNode* node() const { return static_cast<MapNode*>(data_.get()); }
};

// ---------------------------------------------------------------------------------------------
// ShapeTuple

/*! \brief Payload of ShapeTuple. */
class ShapeTupleObj : public Object {
 public:
  const int64_t* data{nullptr};
  uint64_t size{0};

  static constexpr const char* _type_key = "runtime.ShapeTuple";
  static constexpr uint32_t _type_index = TypeIndex::kRuntimeShapeTuple;
  EMBER_DECLARE_FINAL_OBJECT_INFO(ShapeTupleObj, Object);

  explicit ShapeTupleObj(std::vector<int64_t> dims) : storage_(std::move(dims)) {
    data = storage_.data();
    size = storage_.size();
  }

 private:
  std::vector<int64_t> storage_;
};

/*! \brief An immutable shape (list of int64 extents). */
class ShapeTuple : public ObjectRef {
 public:
  using index_type = int64_t;
  ShapeTuple() : ShapeTuple(std::vector<int64_t>()) {}
  ShapeTuple(std::vector<int64_t> dims)  // NOLINT(runtime/explicit)
      : ObjectRef(make_object<ShapeTupleObj>(std::move(dims))) {}
  ShapeTuple(std::initializer_list<int64_t> dims) : ShapeTuple(std::vector<int64_t>(dims)) {}
  template <typename It>
  ShapeTuple(It first, It last) : ShapeTuple(std::vector<int64_t>(first, last)) {}
  explicit ShapeTuple(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}

  const int64_t* data() const { return get()->data; }
  size_t size() const { return get()->size; }
  size_t ndim() const { return size(); }
  bool empty() const { return size() == 0; }
  int64_t operator[](size_t i) const {
    EMBER_CHECK_LT(i, size()) << "ShapeTuple index out of range";
    return data()[i];
  }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size(); }
  std::vector<int64_t> ToVector() const { return std::vector<int64_t>(begin(), end()); }
  /*! \brief Product of the extents (1 for a scalar). */
  int64_t Product() const {
    int64_t p = 1;
    for (int64_t d : *this) p *= d;
    return p;
  }
  const ShapeTupleObj* get() const { return static_cast<const ShapeTupleObj*>(data_.get()); }
  const ShapeTupleObj* operator->() const { return get(); }

  using ContainerType = ShapeTupleObj;
  static constexpr bool _type_is_nullable = false;
};

inline bool operator==(const ShapeTuple& a, const ShapeTuple& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}
inline bool operator!=(const ShapeTuple& a, const ShapeTuple& b) { return !(a == b); }
/*! \brief Prints "[1, 3, 224, 224]". */
std::ostream& operator<<(std::ostream& os, const ShapeTuple& shape);

// ---------------------------------------------------------------------------------------------
// Optional

/*! \brief A T or nothing (T an ObjectRef type). */
template <typename T>
class Optional : public ObjectRef {
 public:
  using ContainerType = typename T::ContainerType;
  Optional() = default;
  Optional(std::nullptr_t) {}                     // NOLINT(runtime/explicit)
  Optional(const T& value) : ObjectRef(value) {}  // NOLINT(runtime/explicit)
  explicit Optional(ObjectPtr<Object> n) : ObjectRef(std::move(n)) {}

  bool has_value() const { return defined(); }
  explicit operator bool() const { return defined(); }
  /*! \brief The value; throws if there is none. */
  T value() const {
    EMBER_CHECK(defined()) << "Optional::value() on an empty Optional<" << ContainerType::_type_key
                           << ">";
    return T(ObjectRefInternal::Data(*this));
  }
  T value_or(T fallback) const { return defined() ? value() : fallback; }
};

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_CONTAINER_H_
