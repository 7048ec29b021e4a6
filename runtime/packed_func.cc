// The out-of-line half of PackedFunc: owned return values, string conversions and the error
// messages that name a wrong argument.
#include <ember/runtime/packed_func.h>

#include <sstream>
#include <string>

namespace ember::runtime {

const char* ArgTypeCode2Str(int type_code) {
  switch (type_code) {
    case kTVMArgInt:
      return "int";
    case kDLUInt:
      return "uint";
    case kTVMArgFloat:
      return "float";
    case kTVMOpaqueHandle:
      return "handle";
    case kTVMNullptr:
      return "nullptr";
    case kTVMDataType:
      return "DLDataType";
    case kDLDevice:
      return "DLDevice";
    case kTVMDLTensorHandle:
      return "DLTensor*";
    case kTVMObjectHandle:
      return "Object";
    case kTVMModuleHandle:
      return "Module";
    case kTVMPackedFuncHandle:
      return "PackedFunc";
    case kTVMStr:
      return "str";
    case kTVMBytes:
      return "bytes";
    case kTVMNDArrayHandle:
      return "NDArray";
    case kTVMObjectRValueRefArg:
      return "ObjectRValueRef";
    case kTVMArgBool:
      return "bool";
    default:
      return "unknown type code";
  }
}

namespace detail {

void ThrowTypeMismatch(const char* expected, int got_code, const TVMValue& got) {
  std::ostringstream os;
  os << "expected " << expected << ", got ";
  if (got_code == kTVMObjectHandle || got_code == kTVMObjectRValueRefArg) {
    Object* obj = ObjectFromValue(got, got_code);
    os << (obj ? obj->GetTypeKey() : std::string("nullptr"));
  } else {
    os << ArgTypeCode2Str(got_code);
  }
  throw TypeMismatchError(os.str());
}

void ThrowArityMismatch(const std::string& name, int expected, int got) {
  EMBER_LOG_FATAL << name << ": expected " << expected << " argument" << (expected == 1 ? "" : "s")
                  << ", got " << got;
}

void ThrowArgumentError(const std::string& name, int index, const Error& e) {
  EMBER_LOG_FATAL << name << ": argument " << index << " " << e.what();
}

void ThrowArgIndex(int index, int num_args) {
  EMBER_LOG_FATAL << "argument index " << index << " out of range: the call has " << num_args
                  << " argument" << (num_args == 1 ? "" : "s");
}

std::string StringFromArg(const TVMValue& v, int code) {
  switch (code) {
    case kTVMStr:
      return v.v_str;
    case kTVMBytes: {
      const auto* arr = static_cast<const TVMByteArray*>(v.v_handle);
      return std::string(arr->data, arr->size);
    }
    case kTVMDataType:
      return DLDataTypeToString(v.v_type);
    default:
      if (IsObjectCode(code)) {
        Object* obj = ObjectFromValue(v, code);
        if (obj != nullptr && obj->IsInstance<StringObj>()) {
          const auto* s = static_cast<const StringObj*>(obj);
          return std::string(s->data, s->size);
        }
      }
      ThrowTypeMismatch("str", code, v);
  }
}

DLDataType DataTypeFromArg(const TVMValue& v, int code) {
  if (code == kTVMDataType) return v.v_type;
  if (code == kTVMStr || code == kTVMBytes || code == kTVMObjectHandle) {
    return StringToDLDataType(StringFromArg(v, code));
  }
  ThrowTypeMismatch("DLDataType", code, v);
}

void ArgsSetter::SetAnyObject(size_t i, const ObjectRef& v) const {
  Object* obj = const_cast<Object*>(v.get());
  if (obj == nullptr) {
    Set(i, kTVMNullptr).v_handle = nullptr;
  } else if (obj->IsInstance<NDArray::Container>()) {
    Set(i, kTVMNDArrayHandle).v_handle = &static_cast<NDArray::Container*>(obj)->dl_tensor;
  } else if (obj->IsInstance<ModuleNode>()) {
    Set(i, kTVMModuleHandle).v_handle = obj;
  } else if (obj->IsInstance<PackedFuncObj>()) {
    Set(i, kTVMPackedFuncHandle).v_handle = obj;
  } else {
    Set(i, kTVMObjectHandle).v_handle = obj;
  }
}

}  // namespace detail

void TVMPODValue_::ThrowOutOfRange() const {
  throw TypeMismatchError("expected int in range, got " + std::to_string(value_.v_int64));
}

std::string TVMRetValue::AsString() const {
  if (type_code_ == kTVMStr || type_code_ == kTVMBytes) return StringValue();
  return detail::StringFromArg(value_, type_code_);
}

DLDataType TVMRetValue::AsDataType() const {
  if (type_code_ == kTVMStr || type_code_ == kTVMBytes) return StringToDLDataType(StringValue());
  return detail::DataTypeFromArg(value_, type_code_);
}

const std::string& TVMRetValue::StringValue() const {
  EMBER_CHECK(type_code_ == kTVMStr || type_code_ == kTVMBytes)
      << "return value holds " << ArgTypeCode2Str(type_code_) << ", not a string";
  return *static_cast<const std::string*>(value_.v_handle);
}

TVMRetValue& TVMRetValue::operator=(std::string v) {
  Clear();
  value_.v_handle = new std::string(std::move(v));
  type_code_ = kTVMStr;
  return *this;
}

TVMRetValue& TVMRetValue::operator=(const TVMByteArray& v) {
  Clear();
  value_.v_handle = new std::string(v.data, v.size);
  type_code_ = kTVMBytes;
  return *this;
}

TVMRetValue& TVMRetValue::operator=(const ObjectRef& v) {
  Clear();
  Object* obj = const_cast<Object*>(v.get());
  if (obj == nullptr) {
    type_code_ = kTVMNullptr;
    value_.v_handle = nullptr;
    return *this;
  }
  if (obj->IsInstance<StringObj>()) {
    const auto* s = static_cast<const StringObj*>(obj);
    return *this = std::string(s->data, s->size);
  }
  obj->IncRef();
  if (obj->IsInstance<NDArray::Container>()) {
    type_code_ = kTVMNDArrayHandle;
    value_.v_handle = &static_cast<NDArray::Container*>(obj)->dl_tensor;
  } else if (obj->IsInstance<ModuleNode>()) {
    type_code_ = kTVMModuleHandle;
    value_.v_handle = obj;
  } else if (obj->IsInstance<PackedFuncObj>()) {
    type_code_ = kTVMPackedFuncHandle;
    value_.v_handle = obj;
  } else {
    type_code_ = kTVMObjectHandle;
    value_.v_handle = obj;
  }
  return *this;
}

TVMRetValue& TVMRetValue::operator=(const TVMArgValue& v) {
  const int code = v.type_code();
  if (code == kTVMStr || code == kTVMBytes) {
    std::string s = detail::StringFromArg(v.value(), code);
    if (code == kTVMStr) return *this = std::move(s);
    Clear();
    value_.v_handle = new std::string(std::move(s));
    type_code_ = kTVMBytes;
    return *this;
  }
  if (detail::IsObjectCode(code)) {
    Object* obj = detail::ObjectFromValue(v.value(), code);
    return *this = ObjectRef(ObjectPtr<Object>(obj));
  }
  Clear();
  value_ = v.value();
  type_code_ = code;
  return *this;
}

void TVMRetValue::Assign(const TVMRetValue& other) {
  switch (other.type_code_) {
    case kTVMStr:
    case kTVMBytes:
      Clear();
      value_.v_handle = new std::string(other.StringValue());
      type_code_ = other.type_code_;
      break;
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle: {
      Object* obj = detail::ObjectFromValue(other.value_, other.type_code_);
      obj->IncRef();
      Clear();
      value_ = other.value_;
      type_code_ = other.type_code_;
      break;
    }
    default:
      Clear();
      value_ = other.value_;
      type_code_ = other.type_code_;
      break;
  }
}

void TVMRetValue::ClearSlow() {
  switch (type_code_) {
    case kTVMStr:
    case kTVMBytes:
      delete static_cast<std::string*>(value_.v_handle);
      break;
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle:
      if (value_.v_handle != nullptr) detail::ObjectFromValue(value_, type_code_)->DecRef();
      break;
    default:
      break;
  }
  type_code_ = kTVMNullptr;
  value_.v_handle = nullptr;
}

void TVMRetValue::MoveToCHost(TVMValue* ret_value, int* ret_type_code) {
  EMBER_CHECK(type_code_ != kTVMStr && type_code_ != kTVMBytes)
      << "MoveToCHost: strings must be copied out, not moved";
  *ret_value = value_;
  *ret_type_code = type_code_;
  type_code_ = kTVMNullptr;
  value_.v_handle = nullptr;
}

TVMRetValue TVMRetValue::MoveFromCHost(TVMValue value, int type_code) {
  TVMRetValue rv;
  switch (type_code) {
    case kTVMStr:
      rv = std::string(value.v_str);
      break;
    case kTVMBytes: {
      const auto* arr = static_cast<const TVMByteArray*>(value.v_handle);
      rv = *arr;
      break;
    }
    case kTVMObjectRValueRefArg:
      EMBER_LOG_FATAL << "a C callee cannot return an rvalue-reference argument";
    default:
      // Objects: the reference the callee handed over becomes ours.
      rv.value_ = value;
      rv.type_code_ = type_code;
      break;
  }
  return rv;
}

}  // namespace ember::runtime
