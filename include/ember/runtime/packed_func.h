/*!
 * \file ember/runtime/packed_func.h
 * \brief PackedFunc: the one type-erased calling convention, `void(TVMArgs, TVMRetValue*)`,
 * shared by C++ callers, the C ABI (TVMFuncCall), Python and compiled kernels.
 *
 *   PackedFunc add([](TVMArgs args, TVMRetValue* rv) { *rv = args[0].As<int>() + args[1].As<int>();
 * }); int three = add(1, 2); TypedPackedFunc<int(int, int)> typed([](int a, int b) { return a + b;
 * }, "add");
 *
 * Calls pack their arguments on the stack: a call allocates nothing (unless a value converts to
 * a newly built String or container). A conversion that does not fit throws Error; a
 * TypedPackedFunc says which argument: `add: argument 1 expected int, got str`.
 */
#ifndef EMBER_RUNTIME_PACKED_FUNC_H_
#define EMBER_RUNTIME_PACKED_FUNC_H_

#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/container.h>
#include <ember/runtime/data_type.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/module.h>
#include <ember/runtime/ndarray.h>
#include <ember/runtime/object.h>

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ember::runtime {

class TVMArgs;
class TVMArgValue;
class TVMRetValue;
template <typename FType>
class TypedPackedFunc;

/*! \brief Short name of a type code, as error messages print it ("int", "str", "NDArray"). */
const char* ArgTypeCode2Str(int type_code);

/*! \brief Thrown by a value conversion that does not fit; TypedPackedFunc adds the context. */
class TypeMismatchError : public Error {
 public:
  explicit TypeMismatchError(const std::string& msg) : Error(msg) {}
};

namespace detail {
/*! Throws TypeMismatchError "expected <expected>, got <name of code / object type>". */
[[noreturn]] void ThrowTypeMismatch(const char* expected, int got_code, const TVMValue& got);
/*! The Object* behind an object-carrying value (NDArray handles map back to their container). */
inline Object* ObjectFromValue(const TVMValue& v, int code) {
  if (code == kTVMNDArrayHandle) {
    return NDArray::ContainerFromHandle(static_cast<DLTensor*>(v.v_handle));
  }
  if (code == kTVMObjectRValueRefArg) return *static_cast<Object**>(v.v_handle);
  return static_cast<Object*>(v.v_handle);
}
inline bool IsObjectCode(int code) {
  return code == kTVMObjectHandle || code == kTVMNDArrayHandle || code == kTVMModuleHandle ||
         code == kTVMPackedFuncHandle || code == kTVMObjectRValueRefArg;
}
/*! The name an error prints for an expected C++ type. */
template <typename T>
const char* ExpectedName() {
  if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_integral_v<T>) {
    return "int";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "float";
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, String>) {
    return "str";
  } else if constexpr (std::is_same_v<T, NDArray>) {
    return "NDArray";
  } else if constexpr (std::is_same_v<T, Module>) {
    return "Module";
  } else if constexpr (std::is_base_of_v<ObjectRef, T>) {
    return T::ContainerType::_type_key;
  } else {
    return "value";
  }
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// PackedFunc

/*! \brief The object behind a PackedFunc: a call trampoline plus the callable (in a subclass). */
class PackedFuncObj : public Object {
 public:
  /*! \brief Calls the function. */
  inline void CallPacked(TVMArgs args, TVMRetValue* rv) const;

  static constexpr const char* _type_key = "runtime.PackedFunc";
  static constexpr uint32_t _type_index = TypeIndex::kRuntimePackedFunc;
  EMBER_DECLARE_FINAL_OBJECT_INFO(PackedFuncObj, Object);

 protected:
  using FCallPacked = void(const PackedFuncObj*, TVMArgs, TVMRetValue*);
  explicit PackedFuncObj(FCallPacked* f_call) : f_call_packed_(f_call) {}
  FCallPacked* f_call_packed_;
};

/*! \brief Holds a callable of type TCallable; one indirect call reaches it. */
template <typename TCallable>
class PackedFuncSubObj : public PackedFuncObj {
 public:
  explicit PackedFuncSubObj(TCallable callable)
      : PackedFuncObj(&Call), callable_(std::move(callable)) {}

 private:
  static void Call(const PackedFuncObj* self, TVMArgs args, TVMRetValue* rv);
  mutable TCallable callable_;
};

/*! \brief A reference-counted, type-erased function `void(TVMArgs, TVMRetValue*)`. */
class PackedFunc : public ObjectRef {
 public:
  PackedFunc() = default;
  PackedFunc(std::nullptr_t) {}  // NOLINT(runtime/explicit)
  explicit PackedFunc(ObjectPtr<Object> data) : ObjectRef(std::move(data)) {}
  /*! \brief Wraps any callable with signature `void(TVMArgs, TVMRetValue*)`. */
  template <
      typename TCallable,
      typename = std::enable_if_t<std::is_invocable_r_v<void, TCallable&, TVMArgs, TVMRetValue*> &&
                                  !std::is_base_of_v<ObjectRef, std::decay_t<TCallable>>>>
  explicit PackedFunc(TCallable callable)
      : ObjectRef(make_object<PackedFuncSubObj<std::decay_t<TCallable>>>(std::move(callable))) {}

  /*! \brief Calls with C++ arguments packed on the stack; returns the owned result. */
  template <typename... Args>
  inline TVMRetValue operator()(Args&&... args) const;
  /*! \brief Calls with already packed arguments. */
  void CallPacked(TVMArgs args, TVMRetValue* rv) const;

  bool operator==(std::nullptr_t) const { return data_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return data_ != nullptr; }

  const PackedFuncObj* get() const { return static_cast<const PackedFuncObj*>(data_.get()); }
  using ContainerType = PackedFuncObj;
};

// ---------------------------------------------------------------------------------------------
// Arguments

/*! \brief The packed arguments of one call: parallel arrays of values and type codes. */
class TVMArgs {
 public:
  const TVMValue* values;
  const int* type_codes;
  int num_args;

  TVMArgs(const TVMValue* values, const int* type_codes, int num_args)
      : values(values), type_codes(type_codes), num_args(num_args) {}
  int size() const { return num_args; }
  /*! \brief Argument \p i; throws naming the index if there are fewer. */
  inline TVMArgValue operator[](int i) const;
};

/*!
 * \brief Conversions shared by argument and return values: numbers, handles, tensors and
 * objects. Each checks the type code and throws TypeMismatchError when it does not fit.
 */
class TVMPODValue_ {
 public:
  int type_code() const { return type_code_; }
  const TVMValue& value() const { return value_; }

  operator double() const { return AsPOD<double>(); }
  operator float() const { return AsPOD<float>(); }
  operator int64_t() const { return AsPOD<int64_t>(); }
  operator uint64_t() const { return AsPOD<uint64_t>(); }
  operator int() const { return AsPOD<int>(); }
  operator bool() const { return AsPOD<bool>(); }
  operator void*() const { return AsPOD<void*>(); }
  operator DLTensor*() const { return AsPOD<DLTensor*>(); }
  operator DLDevice() const { return AsPOD<DLDevice>(); }

  /*! \brief The value as a number, bool, void*, DLTensor* or DLDevice. */
  template <typename T>
  T AsPOD() const {
    if constexpr (std::is_same_v<T, bool>) {
      if (type_code_ == kTVMArgInt || type_code_ == kTVMArgBool) return value_.v_int64 != 0;
    } else if constexpr (std::is_integral_v<T>) {
      if (EMBER_LIKELY(type_code_ == kTVMArgInt || type_code_ == kTVMArgBool)) {
        if constexpr (sizeof(T) < sizeof(int64_t)) {
          if (EMBER_UNLIKELY(value_.v_int64 < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
                             value_.v_int64 >
                                 static_cast<int64_t>(std::numeric_limits<T>::max()))) {
            ThrowOutOfRange();
          }
        }
        return static_cast<T>(value_.v_int64);
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      if (EMBER_LIKELY(type_code_ == kTVMArgFloat)) return static_cast<T>(value_.v_float64);
      if (type_code_ == kTVMArgInt) return static_cast<T>(value_.v_int64);
    } else if constexpr (std::is_same_v<T, void*>) {
      if (type_code_ == kTVMOpaqueHandle || type_code_ == kTVMDLTensorHandle ||
          type_code_ == kTVMNDArrayHandle) {
        return value_.v_handle;
      }
      if (type_code_ == kTVMNullptr) return nullptr;
    } else if constexpr (std::is_same_v<T, DLTensor*>) {
      if (type_code_ == kTVMDLTensorHandle || type_code_ == kTVMNDArrayHandle) {
        return static_cast<DLTensor*>(value_.v_handle);
      }
      if (type_code_ == kTVMNullptr) return nullptr;
    } else if constexpr (std::is_same_v<T, DLDevice>) {
      if (type_code_ == kDLDevice) return value_.v_device;
    } else {
      static_assert(sizeof(T) == 0, "AsPOD<T>: unsupported type");
    }
    detail::ThrowTypeMismatch(detail::ExpectedName<T>(), type_code_, value_);
  }

  /*! \brief The value as an ObjectRef subclass; null allowed only for nullable types. */
  template <typename TRef>
  TRef AsObjectRef() const {
    using Node = typename TRef::ContainerType;
    if (type_code_ == kTVMNullptr) {
      if (TRef::_type_is_nullable) return TRef(ObjectPtr<Object>());
    } else if (detail::IsObjectCode(type_code_)) {
      Object* obj = detail::ObjectFromValue(value_, type_code_);
      if (obj == nullptr) {
        if (TRef::_type_is_nullable) return TRef(ObjectPtr<Object>());
      } else if (obj->IsInstance<Node>()) {
        return TRef(ObjectPtr<Object>(obj));
      }
    }
    detail::ThrowTypeMismatch(detail::ExpectedName<TRef>(), type_code_, value_);
  }

 protected:
  TVMPODValue_() : type_code_(kTVMNullptr) { value_.v_handle = nullptr; }
  TVMPODValue_(const TVMValue& value, int type_code) : value_(value), type_code_(type_code) {}
  [[noreturn]] void ThrowOutOfRange() const;

  TVMValue value_;
  int type_code_;
};

/*!
 * The conversions TVMArgValue and TVMRetValue both add to TVMPODValue_'s: strings, data types,
 * objects and typed functions, each through the class's own As<T>() (where the two differ). The
 * using-declarations keep `v.operator int()` visible beside the conversion templates. A macro
 * rather than a base class because clang (14 at least) does not find a base's conversion
 * templates in explicit calls such as `args[0].operator Module()`.
 */
#define EMBER_PACKED_VALUE_CONVERSIONS_()                                                   \
  using TVMPODValue_::operator double;                                                      \
  using TVMPODValue_::operator float;                                                       \
  using TVMPODValue_::operator int64_t;                                                     \
  using TVMPODValue_::operator uint64_t;                                                    \
  using TVMPODValue_::operator int;                                                         \
  using TVMPODValue_::operator bool;                                                        \
  using TVMPODValue_::operator void*;                                                       \
  using TVMPODValue_::operator DLTensor*;                                                   \
  using TVMPODValue_::operator DLDevice;                                                    \
  /* str, bytes, a String object, or a DLDataType (printed). */                             \
  operator std::string() const { return As<std::string>(); }                                \
  /* A DLDataType, or a str naming one. */                                                  \
  operator DLDataType() const { return As<DLDataType>(); }                                  \
  /* Any ObjectRef subclass: NDArray, Module, PackedFunc, String, Array<T>, ... */          \
  template <typename TRef, typename = std::enable_if_t<std::is_base_of_v<ObjectRef, TRef>>> \
  operator TRef() const {                                                                   \
    return As<TRef>();                                                                      \
  }                                                                                         \
  template <typename FType>                                                                 \
  operator TypedPackedFunc<FType>() const {                                                 \
    return TypedPackedFunc<FType>(As<PackedFunc>());                                        \
  }                                                                                         \
  /*! \brief The value as T: every conversion above, named. */                              \
  template <typename T>                                                                     \
  inline T As() const

/*! \brief One argument of a call; borrows the caller's value (no ownership). */
class TVMArgValue : public TVMPODValue_ {
  friend class TVMArgs;

 public:
  TVMArgValue() = default;
  TVMArgValue(const TVMValue& value, int type_code) : TVMPODValue_(value, type_code) {}

  EMBER_PACKED_VALUE_CONVERSIONS_();
};

/*!
 * \brief A call's result, owning what it holds: strings are copied, objects referenced.
 * Strings (and String objects) are held as kTVMStr so C callers always receive text.
 */
class TVMRetValue : public TVMPODValue_ {
 public:
  TVMRetValue() = default;
  TVMRetValue(const TVMRetValue& other) : TVMPODValue_() { Assign(other); }
  TVMRetValue(TVMRetValue&& other) noexcept : TVMPODValue_(other.value_, other.type_code_) {
    other.type_code_ = kTVMNullptr;
    other.value_.v_handle = nullptr;
  }
  ~TVMRetValue() { Clear(); }

  EMBER_PACKED_VALUE_CONVERSIONS_();

  TVMRetValue& operator=(const TVMRetValue& other) {
    if (this != &other) {
      TVMRetValue tmp(other);
      Swap(tmp);
    }
    return *this;
  }
  TVMRetValue& operator=(TVMRetValue&& other) noexcept {
    TVMRetValue tmp(std::move(other));
    Swap(tmp);
    return *this;
  }
  TVMRetValue& operator=(double v) { return SetPOD(kTVMArgFloat, &TVMValue::v_float64, v); }
  TVMRetValue& operator=(std::nullptr_t) {
    return SetPOD(kTVMNullptr, &TVMValue::v_handle, nullptr);
  }
  TVMRetValue& operator=(void* v) { return SetPOD(kTVMOpaqueHandle, &TVMValue::v_handle, v); }
  TVMRetValue& operator=(int64_t v) { return SetPOD(kTVMArgInt, &TVMValue::v_int64, v); }
  TVMRetValue& operator=(uint64_t v) {
    return SetPOD(kTVMArgInt, &TVMValue::v_int64, static_cast<int64_t>(v));
  }
  TVMRetValue& operator=(int v) { return SetPOD(kTVMArgInt, &TVMValue::v_int64, int64_t{v}); }
  TVMRetValue& operator=(bool v) {
    return SetPOD(kTVMArgBool, &TVMValue::v_int64, static_cast<int64_t>(v));
  }
  TVMRetValue& operator=(DLDevice v) { return SetPOD(kDLDevice, &TVMValue::v_device, v); }
  TVMRetValue& operator=(DLDataType v) { return SetPOD(kTVMDataType, &TVMValue::v_type, v); }
  TVMRetValue& operator=(std::string v);
  TVMRetValue& operator=(const char* v) { return *this = std::string(v); }
  TVMRetValue& operator=(const TVMByteArray& v);
  TVMRetValue& operator=(const TVMArgValue& v);
  /*! \brief Any ObjectRef; NDArray, Module and PackedFunc keep their own type codes. */
  TVMRetValue& operator=(const ObjectRef& v);
  template <typename FType>
  TVMRetValue& operator=(const TypedPackedFunc<FType>& f) {
    return *this = ObjectRef(f.packed());
  }

  /*!
   * \brief Hands the value to a C caller: objects keep their reference (the caller frees it);
   * this becomes null. Strings and bytes cannot be moved this way (TVMFuncCall copies them).
   */
  void MoveToCHost(TVMValue* ret_value, int* ret_type_code);
  /*! \brief Adopts a value a C callee returned (an object's reference becomes ours). */
  static TVMRetValue MoveFromCHost(TVMValue value, int type_code);

  /*! \brief The stored string of a kTVMStr / kTVMBytes value. */
  const std::string& StringValue() const;

 private:
  std::string AsString() const;
  DLDataType AsDataType() const;
  template <typename M, typename V>
  TVMRetValue& SetPOD(int code, M TVMValue::*member, V v) {
    Clear();
    type_code_ = code;
    value_.*member = v;
    return *this;
  }
  void Assign(const TVMRetValue& other);
  void Swap(TVMRetValue& other) noexcept {
    std::swap(value_, other.value_);
    std::swap(type_code_, other.type_code_);
  }
  void Clear() {
    if (type_code_ == kTVMNullptr || type_code_ < kTVMObjectHandle) return;
    ClearSlow();
  }
  void ClearSlow();
};

// ---------------------------------------------------------------------------------------------
// Packing C++ arguments

namespace detail {

/*! Stores one C++ argument into the stack arrays of a call. */
class ArgsSetter {
 public:
  ArgsSetter(TVMValue* values, int* codes) : values_(values), codes_(codes) {}

  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  void operator()(size_t i, T v) const {
    values_[i].v_int64 = static_cast<int64_t>(v);
    codes_[i] = std::is_same_v<T, bool> ? kTVMArgBool : kTVMArgInt;
  }
  void operator()(size_t i, double v) const { Set(i, kTVMArgFloat).v_float64 = v; }
  void operator()(size_t i, float v) const { Set(i, kTVMArgFloat).v_float64 = v; }
  void operator()(size_t i, std::nullptr_t) const { Set(i, kTVMNullptr).v_handle = nullptr; }
  void operator()(size_t i, void* v) const { Set(i, kTVMOpaqueHandle).v_handle = v; }
  void operator()(size_t i, DLTensor* v) const {
    Set(i, v ? kTVMDLTensorHandle : kTVMNullptr).v_handle = v;
  }
  void operator()(size_t i, DLDevice v) const { Set(i, kDLDevice).v_device = v; }
  void operator()(size_t i, DLDataType v) const { Set(i, kTVMDataType).v_type = v; }
  void operator()(size_t i, const char* v) const { Set(i, kTVMStr).v_str = v; }
  void operator()(size_t i, const std::string& v) const { Set(i, kTVMStr).v_str = v.c_str(); }
  void operator()(size_t i, const String& v) const { Set(i, kTVMStr).v_str = v.c_str(); }
  void operator()(size_t i, const TVMByteArray& v) const {
    Set(i, kTVMBytes).v_handle = const_cast<TVMByteArray*>(&v);
  }
  void operator()(size_t i, const NDArray& v) const {
    if (v.defined()) {
      Set(i, kTVMNDArrayHandle).v_handle = NDArray::FFIGetHandle(v);
    } else {
      Set(i, kTVMNullptr).v_handle = nullptr;
    }
  }
  void operator()(size_t i, const Module& v) const { SetObject(i, kTVMModuleHandle, v); }
  void operator()(size_t i, const PackedFunc& v) const { SetObject(i, kTVMPackedFuncHandle, v); }
  template <typename FType>
  void operator()(size_t i, const TypedPackedFunc<FType>& v) const {
    (*this)(i, v.packed());
  }
  void operator()(size_t i, const TVMArgValue& v) const {
    values_[i] = v.value();
    codes_[i] = v.type_code();
  }
  void operator()(size_t i, const TVMRetValue& v) const {
    if (v.type_code() == kTVMStr || v.type_code() == kTVMBytes) {
      // A held std::string is passed as text; bytes keep their length through a TVMByteArray
      // the caller does not see, so pass them as text too (bytes with zeros need TVMByteArray).
      Set(i, kTVMStr).v_str = v.StringValue().c_str();
    } else {
      values_[i] = v.value();
      codes_[i] = v.type_code();
    }
  }
  /*! Other ObjectRefs (String, Array, Map, user objects): by their most specific code. */
  template <typename TRef, typename = std::enable_if_t<std::is_base_of_v<ObjectRef, TRef>>>
  void operator()(size_t i, const TRef& v) const {
    SetAnyObject(i, v);
  }

 private:
  TVMValue& Set(size_t i, int code) const {
    codes_[i] = code;
    return values_[i];
  }
  void SetObject(size_t i, int code, const ObjectRef& v) const {
    Object* obj = const_cast<Object*>(v.get());
    Set(i, obj ? code : kTVMNullptr).v_handle = obj;
  }
  void SetAnyObject(size_t i, const ObjectRef& v) const;

  TVMValue* values_;
  int* codes_;
};

template <size_t I, typename F>
inline void ForEachArg(const F&) {}
template <size_t I, typename F, typename T, typename... Rest>
inline void ForEachArg(const F& f, T&& v, Rest&&... rest) {
  f(I, std::forward<T>(v));
  ForEachArg<I + 1>(f, std::forward<Rest>(rest)...);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// TypedPackedFunc

namespace detail {

[[noreturn]] void ThrowArityMismatch(const std::string& name, int expected, int got);
[[noreturn]] void ThrowArgumentError(const std::string& name, int index, const Error& e);

/*! Converts argument \p i to T, naming the function and index on mismatch. */
template <typename T>
inline T ConvertArg(const TVMArgs& args, int i, const std::string& name) {
  if constexpr (std::is_same_v<T, TVMArgValue>) {
    return TVMArgValue(args.values[i], args.type_codes[i]);
  } else {
    try {
      return TVMArgValue(args.values[i], args.type_codes[i]).template As<T>();
    } catch (const TypeMismatchError& e) {
      ThrowArgumentError(name, i, e);
    }
  }
}

template <typename R, typename... Args, typename F, size_t... I>
inline void UnpackCall(const std::string& name, F& f, const TVMArgs& args, TVMRetValue* rv,
                       std::index_sequence<I...>) {
  constexpr int kArity = static_cast<int>(sizeof...(Args));
  if (EMBER_UNLIKELY(args.num_args != kArity)) ThrowArityMismatch(name, kArity, args.num_args);
  if constexpr (std::is_void_v<R>) {
    f(ConvertArg<std::decay_t<Args>>(args, static_cast<int>(I), name)...);
  } else {
    R result = f(ConvertArg<std::decay_t<Args>>(args, static_cast<int>(I), name)...);
    if constexpr (std::is_integral_v<R> && !std::is_same_v<R, bool>) {
      *rv = static_cast<int64_t>(result);
    } else if constexpr (std::is_floating_point_v<R>) {
      *rv = static_cast<double>(result);
    } else {
      *rv = std::move(result);
    }
  }
}

/*! The signature of a lambda, function pointer or functor. */
template <typename T>
struct FunctionSignature : FunctionSignature<decltype(&T::operator())> {};
template <typename R, typename... Args>
struct FunctionSignature<R(Args...)> {
  using type = R(Args...);
};
template <typename R, typename... Args>
struct FunctionSignature<R (*)(Args...)> {
  using type = R(Args...);
};
template <typename C, typename R, typename... Args>
struct FunctionSignature<R (C::*)(Args...) const> {
  using type = R(Args...);
};
template <typename C, typename R, typename... Args>
struct FunctionSignature<R (C::*)(Args...)> {
  using type = R(Args...);
};

}  // namespace detail

/*!
 * \brief A PackedFunc with a C++ signature: arguments are converted (and checked) once per call
 * with no allocation, and a wrong argument is reported by name and position.
 */
template <typename R, typename... Args>
class TypedPackedFunc<R(Args...)> {
 public:
  TypedPackedFunc() = default;
  TypedPackedFunc(std::nullptr_t) {}                                  // NOLINT(runtime/explicit)
  TypedPackedFunc(PackedFunc packed) : packed_(std::move(packed)) {}  // NOLINT(runtime/explicit)
  /*! \brief Wraps \p f; \p name appears in argument errors. */
  template <typename F,
            typename = std::enable_if_t<std::is_invocable_v<F&, Args...> &&
                                        !std::is_base_of_v<ObjectRef, std::decay_t<F>> &&
                                        !std::is_same_v<std::decay_t<F>, TypedPackedFunc>>>
  TypedPackedFunc(F f, std::string name = "<anonymous>") {  // NOLINT(runtime/explicit)
    packed_ = PackedFunc(
        [f = std::move(f), name = std::move(name)](TVMArgs args, TVMRetValue* rv) mutable {
          detail::UnpackCall<R, Args...>(name, f, args, rv, std::index_sequence_for<Args...>{});
        });
  }

  R operator()(Args... args) const {
    if constexpr (std::is_void_v<R>) {
      packed_(std::forward<Args>(args)...);
    } else {
      TVMRetValue rv = packed_(std::forward<Args>(args)...);
      if constexpr (std::is_same_v<R, TVMRetValue>) {
        return rv;
      } else {
        return rv.template As<R>();
      }
    }
  }

  const PackedFunc& packed() const { return packed_; }
  operator PackedFunc() const { return packed_; }  // NOLINT(runtime/explicit)
  bool operator==(std::nullptr_t) const { return packed_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return packed_ != nullptr; }

 private:
  PackedFunc packed_;
};

// ---------------------------------------------------------------------------------------------
// Inline definitions

inline void PackedFuncObj::CallPacked(TVMArgs args, TVMRetValue* rv) const {
  (*f_call_packed_)(this, args, rv);
}

template <typename TCallable>
void PackedFuncSubObj<TCallable>::Call(const PackedFuncObj* self, TVMArgs args, TVMRetValue* rv) {
  static_cast<const PackedFuncSubObj*>(self)->callable_(args, rv);
}

inline void PackedFunc::CallPacked(TVMArgs args, TVMRetValue* rv) const {
  get()->CallPacked(args, rv);
}

template <typename... Args>
inline TVMRetValue PackedFunc::operator()(Args&&... args) const {
  constexpr size_t kNumArgs = sizeof...(Args);
  constexpr size_t kArraySize = kNumArgs > 0 ? kNumArgs : 1;
  TVMValue values[kArraySize];
  int type_codes[kArraySize];
  detail::ForEachArg<0>(detail::ArgsSetter(values, type_codes), std::forward<Args>(args)...);
  TVMRetValue rv;
  get()->CallPacked(TVMArgs(values, type_codes, static_cast<int>(kNumArgs)), &rv);
  return rv;
}

namespace detail {
[[noreturn]] void ThrowArgIndex(int index, int num_args);
}  // namespace detail

inline TVMArgValue TVMArgs::operator[](int i) const {
  if (EMBER_UNLIKELY(static_cast<unsigned>(i) >= static_cast<unsigned>(num_args))) {
    detail::ThrowArgIndex(i, num_args);
  }
  TVMArgValue v;
  v.value_ = values[i];
  v.type_code_ = type_codes[i];
  return v;
}

namespace detail {
std::string StringFromArg(const TVMValue& v, int code);
DLDataType DataTypeFromArg(const TVMValue& v, int code);
}  // namespace detail

template <typename T>
inline T TVMArgValue::As() const {
  if constexpr (std::is_same_v<T, std::string>) {
    return detail::StringFromArg(value_, type_code_);
  } else if constexpr (std::is_same_v<T, DLDataType>) {
    return detail::DataTypeFromArg(value_, type_code_);
  } else if constexpr (std::is_same_v<T, TVMArgValue>) {
    return *this;
  } else if constexpr (std::is_same_v<T, TVMRetValue>) {
    TVMRetValue rv;
    rv = *this;
    return rv;
  } else if constexpr (std::is_same_v<T, String>) {
    if (type_code_ == kTVMStr || type_code_ == kTVMBytes) {
      return String(detail::StringFromArg(value_, type_code_));
    }
    return AsObjectRef<String>();
  } else if constexpr (std::is_same_v<T, ObjectRef>) {
    if (type_code_ == kTVMStr || type_code_ == kTVMBytes) {
      return String(detail::StringFromArg(value_, type_code_));
    }
    return AsObjectRef<ObjectRef>();
  } else if constexpr (std::is_base_of_v<ObjectRef, T>) {
    return AsObjectRef<T>();
  } else {
    return AsPOD<T>();
  }
}

template <typename T>
inline T TVMRetValue::As() const {
  if constexpr (std::is_same_v<T, std::string>) {
    return AsString();
  } else if constexpr (std::is_same_v<T, DLDataType>) {
    return AsDataType();
  } else if constexpr (std::is_same_v<T, TVMRetValue>) {
    return *this;
  } else if constexpr (std::is_same_v<T, String> || std::is_same_v<T, ObjectRef>) {
    if (type_code_ == kTVMStr || type_code_ == kTVMBytes) return String(StringValue());
    return AsObjectRef<T>();
  } else if constexpr (std::is_base_of_v<ObjectRef, T>) {
    return AsObjectRef<T>();
  } else {
    return AsPOD<T>();
  }
}

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_PACKED_FUNC_H_
