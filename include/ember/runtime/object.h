/*!
 * \file ember/runtime/object.h
 * \brief The reference-counted object model: Object, ObjectPtr<T>, ObjectRef and a type registry.
 *
 * Every runtime value that is shared (NDArray, Module, PackedFunc, String, Array, Map) is an
 * Object: a 16-byte header (type index, atomic count, deleter) followed by the payload. The
 * header layout is the one TVM's C ABI hands out as TVMObjectHandle, so handles cross the C
 * boundary as plain Object*. Type tests (IsInstance, as, Downcast) compare type indices; no RTTI.
 *
 * Declaring a new object type:
 *
 *   class MyNode : public Object {
 *    public:
 *     static constexpr const char* _type_key = "my.Node";
 *     EMBER_DECLARE_FINAL_OBJECT_INFO(MyNode, Object);
 *   };
 *   class My : public ObjectRef {
 *    public:
 *     EMBER_DEFINE_OBJECT_REF_METHODS(My, ObjectRef, MyNode);
 *   };
 *   My m(make_object<MyNode>());
 */
#ifndef EMBER_RUNTIME_OBJECT_H_
#define EMBER_RUNTIME_OBJECT_H_

#include <ember/runtime/logging.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

// 1 when built with ThreadSanitizer (GCC: __SANITIZE_THREAD__; clang: __has_feature).
#if defined(__SANITIZE_THREAD__)
#define EMBER_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMBER_THREAD_SANITIZER 1
#endif
#endif
#ifndef EMBER_THREAD_SANITIZER
#define EMBER_THREAD_SANITIZER 0
#endif

namespace ember::runtime {

/*! \brief Type indices fixed at compile time; equal to TVM's so foreign callers agree. */
struct TypeIndex {
  enum : uint32_t {
    kRoot = 0,
    kRuntimeModule = 1,
    kRuntimeNDArray = 2,
    kRuntimeString = 3,
    kRuntimeArray = 4,
    kRuntimeMap = 5,
    kRuntimeShapeTuple = 6,
    kRuntimePackedFunc = 7,
    kStaticIndexEnd = 64,
    /*! a type without a fixed index gets one from the registry on first use */
    kDynamic = kStaticIndexEnd,
  };
};

/*! \brief Base of every reference-counted runtime value. */
class Object {
 public:
  /*! Frees an object whose count reached zero; set by make_object or by a foreign owner. */
  typedef void (*FDeleter)(Object* self);

  uint32_t type_index() const { return type_index_; }
  std::string GetTypeKey() const { return TypeIndex2Key(type_index_); }
  int use_count() const { return ref_counter_.load(std::memory_order_relaxed); }

  /*! \brief True if this object is a TargetType or derives from it. */
  template <typename TargetType>
  inline bool IsInstance() const;

  static std::string TypeIndex2Key(uint32_t tindex);
  /*! \brief The index of a registered key; throws naming the key if none. */
  static uint32_t TypeKey2Index(const std::string& key);
  /*! \brief True if \p child is \p parent or registered (transitively) under it. */
  static bool DerivesFrom(uint32_t child, uint32_t parent);
  /*!
   * \brief Registers \p key once and returns its index: \p static_tindex when fixed, else a new
   * index. Used by the EMBER_DECLARE_*_OBJECT_INFO macros.
   */
  static uint32_t GetOrAllocRuntimeTypeIndex(const char* key, uint32_t static_tindex,
                                             uint32_t parent_tindex);

  static constexpr const char* _type_key = "runtime.Object";
  // Subclasses get an index from the registry unless they declare a fixed one; a subclass of a
  // fixed-index type must declare `_type_index = TypeIndex::kDynamic` itself.
  static constexpr uint32_t _type_index = TypeIndex::kDynamic;
  static constexpr bool _type_final = false;
  static uint32_t RuntimeTypeIndex() { return TypeIndex::kRoot; }
  static uint32_t _GetOrAllocRuntimeTypeIndex() { return TypeIndex::kRoot; }

  // Reference counting; public for ObjectPtr and the C ABI (TVMObjectRetain / TVMObjectFree).
  void IncRef() { ref_counter_.fetch_add(1, std::memory_order_relaxed); }
  void DecRef() {
#if EMBER_THREAD_SANITIZER
    // ThreadSanitizer does not model fences (GCC refuses them): the acquire joins the decrement.
    if (ref_counter_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
#else
    if (ref_counter_.fetch_sub(1, std::memory_order_release) == 1) {
      std::atomic_thread_fence(std::memory_order_acquire);
#endif
      if (deleter_ != nullptr) deleter_(this);
    }
  }

 protected:
  Object() = default;
  // Copying an object copies its payload, never its identity or count.
  Object(const Object&) : Object() {}
  Object& operator=(const Object&) { return *this; }

  uint32_t type_index_{0};
  std::atomic<int32_t> ref_counter_{0};
  FDeleter deleter_{nullptr};

  template <typename T, typename... Args>
  friend class ObjAllocator;
  template <typename T, typename... Args>
  friend class ObjectPtrMaker;
  friend class ObjectInternal;
};

/*! The C ABI's TVMObjectHandle points at this header; TVM lays it out the same way (16 bytes on
 *  64-bit targets, 12 on 32-bit ones such as armv7). */
static_assert(sizeof(Object) == 8 + sizeof(void*),
              "Object header must stay u32 + i32 + deleter pointer (C ABI layout)");

/*! \brief Grants the few places that build objects by hand (C ABI, DLPack) access to the header. */
class ObjectInternal {
 public:
  static void SetHeader(Object* obj, uint32_t type_index, Object::FDeleter deleter) {
    obj->type_index_ = type_index;
    obj->deleter_ = deleter;
  }
};

/*! \brief An owning pointer to an Object subclass; copying adds a reference. */
template <typename T>
class ObjectPtr {
 public:
  ObjectPtr() = default;
  ObjectPtr(std::nullptr_t) {}  // NOLINT(runtime/explicit)
  ObjectPtr(const ObjectPtr& other) : ObjectPtr(other.data_) {}
  ObjectPtr(ObjectPtr&& other) noexcept : data_(other.data_) { other.data_ = nullptr; }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(const ObjectPtr<U>& other) : ObjectPtr(static_cast<T*>(other.get())) {}
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(ObjectPtr<U>&& other) noexcept : data_(static_cast<T*>(other.release())) {}
  ~ObjectPtr() { reset(); }

  ObjectPtr& operator=(const ObjectPtr& other) {
    ObjectPtr(other).swap(*this);
    return *this;
  }
  ObjectPtr& operator=(ObjectPtr&& other) noexcept {
    ObjectPtr(std::move(other)).swap(*this);
    return *this;
  }

  /*! \brief Adopts \p ptr, adding a reference (the pointer may already be shared). */
  explicit ObjectPtr(T* ptr) : data_(ptr) {
    if (data_ != nullptr) static_cast<Object*>(data_)->IncRef();
  }

  T* get() const { return data_; }
  T* operator->() const { return data_; }
  T& operator*() const { return *data_; }
  explicit operator bool() const { return data_ != nullptr; }
  int use_count() const { return data_ ? static_cast<const Object*>(data_)->use_count() : 0; }
  void reset() {
    if (data_ != nullptr) {
      static_cast<Object*>(data_)->DecRef();
      data_ = nullptr;
    }
  }
  void swap(ObjectPtr& other) noexcept { std::swap(data_, other.data_); }
  /*! \brief Gives up ownership without decrementing; the caller now owns one reference. */
  T* release() {
    T* p = data_;
    data_ = nullptr;
    return p;
  }
  /*! \brief Wraps a pointer whose reference the caller already owns (no increment). */
  static ObjectPtr MoveFromRaw(T* ptr) {
    ObjectPtr p;
    p.data_ = ptr;
    return p;
  }

  bool operator==(const ObjectPtr& other) const { return data_ == other.data_; }
  bool operator!=(const ObjectPtr& other) const { return data_ != other.data_; }
  bool operator==(std::nullptr_t) const { return data_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return data_ != nullptr; }

 private:
  T* data_{nullptr};
};

/*! \brief Base of the value-like handles (NDArray, Module, String, ...) over an ObjectPtr. */
class ObjectRef {
 public:
  using ContainerType = Object;
  static constexpr bool _type_is_nullable = true;

  ObjectRef() = default;
  explicit ObjectRef(ObjectPtr<Object> data) : data_(std::move(data)) {}

  const Object* get() const { return data_.get(); }
  const Object* operator->() const { return data_.get(); }
  bool defined() const { return data_ != nullptr; }
  bool same_as(const ObjectRef& other) const { return data_ == other.data_; }
  int use_count() const { return data_.use_count(); }
  uint32_t type_index() const { return data_ ? data_->type_index() : TypeIndex::kRoot; }
  std::string GetTypeKey() const { return data_ ? data_->GetTypeKey() : std::string("nullptr"); }
  bool operator==(const ObjectRef& other) const { return data_ == other.data_; }
  bool operator!=(const ObjectRef& other) const { return data_ != other.data_; }

  /*! \brief The object as a T, or nullptr when it is not one. */
  template <typename T>
  const T* as() const {
    if (data_ != nullptr && data_->IsInstance<T>()) return static_cast<const T*>(data_.get());
    return nullptr;
  }

 protected:
  ObjectPtr<Object> data_;

  Object* get_mutable() const { return data_.get(); }
  template <typename T>
  static ObjectPtr<T> GetDataPtr(const ObjectRef& ref) {
    return ObjectPtr<T>(static_cast<T*>(ref.data_.get()));
  }
  friend class ObjectRefInternal;
};

/*! \brief Internal access used by the FFI to move objects in and out of refs without counting. */
class ObjectRefInternal {
 public:
  static Object* Release(ObjectRef* ref) { return ref->data_.release(); }
  static const ObjectPtr<Object>& Data(const ObjectRef& ref) { return ref.data_; }
  static ObjectPtr<Object>& Data(ObjectRef* ref) { return ref->data_; }
};

template <typename T>
inline bool Object::IsInstance() const {
  if constexpr (std::is_same_v<T, Object>) {
    return true;
  } else if constexpr (T::_type_final) {
    return type_index_ == T::RuntimeTypeIndex();
  } else {
    uint32_t target = T::RuntimeTypeIndex();
    return type_index_ == target || DerivesFrom(type_index_, target);
  }
}

/*! \brief Default allocator: one `new`, deleted through the stored deleter. */
template <typename T, typename... Args>
class ObjAllocator {
 public:
  static ObjectPtr<T> Make(Args&&... args) {
    T* ptr = new T(std::forward<Args>(args)...);
    Object* obj = ptr;
    obj->type_index_ = T::RuntimeTypeIndex();
    obj->deleter_ = &Deleter;
    return ObjectPtr<T>(ptr);
  }

 private:
  static void Deleter(Object* obj) { delete static_cast<T*>(obj); }
};

/*! \brief Creates a T with the object header filled in. */
template <typename T, typename... Args>
inline ObjectPtr<T> make_object(Args&&... args) {
  static_assert(std::is_base_of_v<Object, T>, "make_object<T>: T must derive from Object");
  return ObjAllocator<T, Args...>::Make(std::forward<Args>(args)...);
}

/*! \brief Returns the ObjectPtr that owns \p ptr (adds a reference). */
template <typename T>
inline ObjectPtr<T> GetObjectPtr(T* ptr) {
  return ObjectPtr<T>(ptr);
}

/*! \brief \p ref as a TRef; throws naming both type keys if it is not one. */
template <typename TRef>
inline TRef Downcast(ObjectRef ref) {
  using Node = typename TRef::ContainerType;
  if (ref.defined()) {
    EMBER_CHECK(ref.get()->IsInstance<Node>())
        << "Downcast from " << ref.GetTypeKey() << " to " << Node::_type_key << " failed";
  } else {
    EMBER_CHECK(TRef::_type_is_nullable)
        << "Downcast of a null reference to non-nullable " << Node::_type_key;
  }
  return TRef(ObjectRefInternal::Data(ref));
}

/*! \brief Hashing and equality by identity, except String which compares by content. */
struct ObjectPtrHash {
  size_t operator()(const ObjectRef& a) const;
};
struct ObjectPtrEqual {
  bool operator()(const ObjectRef& a, const ObjectRef& b) const;
};

}  // namespace ember::runtime

#define EMBER_DECLARE_OBJECT_INFO_(TypeName, ParentType, is_final)                              \
  static_assert(!ParentType::_type_final, "cannot derive from a final object type");            \
  static constexpr bool _type_final = is_final;                                                 \
  static uint32_t RuntimeTypeIndex() {                                                          \
    if constexpr (TypeName::_type_index != ::ember::runtime::TypeIndex::kDynamic) {             \
      return TypeName::_type_index;                                                             \
    } else {                                                                                    \
      return _GetOrAllocRuntimeTypeIndex();                                                     \
    }                                                                                           \
  }                                                                                             \
  static uint32_t _GetOrAllocRuntimeTypeIndex() {                                               \
    static const uint32_t tindex = ::ember::runtime::Object::GetOrAllocRuntimeTypeIndex(        \
        TypeName::_type_key, TypeName::_type_index, ParentType::_GetOrAllocRuntimeTypeIndex()); \
    return tindex;                                                                              \
  }                                                                                             \
  static_assert(true, "")

/*!
 * \brief Declares type info for a class that other types may derive from. The class declares
 * `static constexpr const char* _type_key` and, for a fixed index,
 * `static constexpr uint32_t _type_index` (Object's default is kDynamic: an index on first use).
 */
#define EMBER_DECLARE_BASE_OBJECT_INFO(TypeName, ParentType) \
  EMBER_DECLARE_OBJECT_INFO_(TypeName, ParentType, false)

/*! \brief Declares type info for a leaf class (IsInstance is then one comparison). */
#define EMBER_DECLARE_FINAL_OBJECT_INFO(TypeName, ParentType) \
  EMBER_DECLARE_OBJECT_INFO_(TypeName, ParentType, true)

/*! \brief Constructors and accessors every ObjectRef subclass needs. */
#define EMBER_DEFINE_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName)                \
  TypeName() = default;                                                                  \
  explicit TypeName(::ember::runtime::ObjectPtr<::ember::runtime::Object> n)             \
      : ParentType(std::move(n)) {}                                                      \
  const ObjectName* operator->() const { return static_cast<const ObjectName*>(get()); } \
  const ObjectName* get() const { return static_cast<const ObjectName*>(data_.get()); }  \
  using ContainerType = ObjectName

/*! \brief Like EMBER_DEFINE_OBJECT_REF_METHODS, plus a mutable operator-> for handle-like refs. */
#define EMBER_DEFINE_MUTABLE_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName)    \
  TypeName() = default;                                                              \
  explicit TypeName(::ember::runtime::ObjectPtr<::ember::runtime::Object> n)         \
      : ParentType(std::move(n)) {}                                                  \
  ObjectName* operator->() const { return static_cast<ObjectName*>(get_mutable()); } \
  ObjectName* get() const { return static_cast<ObjectName*>(get_mutable()); }        \
  using ContainerType = ObjectName

#endif  // EMBER_RUNTIME_OBJECT_H_
