// The type registry: type keys to runtime indices and the parent links IsInstance walks.
#include <ember/runtime/container.h>
#include <ember/runtime/object.h>

#include <mutex>
#include <ostream>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ember::runtime {
namespace {

struct TypeInfo {
  std::string key;
  uint32_t parent{0};
  bool allocated{false};
};

class TypeTable {
 public:
  static TypeTable& Global() {
    // Leaked on purpose: objects may be destroyed by other static destructors after ours.
    static TypeTable* table = new TypeTable();
    return *table;
  }

  uint32_t GetOrAlloc(const char* key, uint32_t static_tindex, uint32_t parent) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = key2index_.find(key);
    if (it != key2index_.end()) return it->second;
    uint32_t index = static_tindex;
    if (static_tindex == TypeIndex::kDynamic) {
      index = static_cast<uint32_t>(std::max<size_t>(infos_.size(), TypeIndex::kStaticIndexEnd));
    }
    if (infos_.size() <= index) infos_.resize(index + 1);
    EMBER_CHECK(!infos_[index].allocated)
        << "type index " << index << " of " << key << " is already used by " << infos_[index].key;
    infos_[index] = TypeInfo{key, parent, true};
    key2index_.emplace(key, index);
    return index;
  }

  uint32_t Key2Index(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = key2index_.find(key);
    EMBER_CHECK(it != key2index_.end()) << "no object type registered with key \"" << key << "\"";
    return it->second;
  }

  std::string Index2Key(uint32_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    EMBER_CHECK(index < infos_.size() && infos_[index].allocated)
        << "unknown object type index " << index;
    return infos_[index].key;
  }

  bool DerivesFrom(uint32_t child, uint32_t parent) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (child < infos_.size() && infos_[child].allocated) {
      if (child == parent) return true;
      if (child == TypeIndex::kRoot) return false;
      child = infos_[child].parent;
    }
    return false;
  }

 private:
  TypeTable() {
    infos_.resize(TypeIndex::kStaticIndexEnd);
    auto add = [this](uint32_t index, const char* key) {
      infos_[index] = TypeInfo{key, TypeIndex::kRoot, true};
      key2index_.emplace(key, index);
    };
    // The fixed indices are known before any object of those types exists.
    add(TypeIndex::kRoot, Object::_type_key);
    add(TypeIndex::kRuntimeModule, "runtime.Module");
    add(TypeIndex::kRuntimeNDArray, "runtime.NDArray");
    add(TypeIndex::kRuntimeString, StringObj::_type_key);
    add(TypeIndex::kRuntimeArray, ArrayNode::_type_key);
    add(TypeIndex::kRuntimeMap, MapNode::_type_key);
    add(TypeIndex::kRuntimeShapeTuple, ShapeTupleObj::_type_key);
    add(TypeIndex::kRuntimePackedFunc, "runtime.PackedFunc");
  }

  std::mutex mutex_;
  std::vector<TypeInfo> infos_;
  std::unordered_map<std::string, uint32_t> key2index_;
};

}  // namespace

uint32_t Object::GetOrAllocRuntimeTypeIndex(const char* key, uint32_t static_tindex,
                                            uint32_t parent_tindex) {
  return TypeTable::Global().GetOrAlloc(key, static_tindex, parent_tindex);
}

std::string Object::TypeIndex2Key(uint32_t tindex) { return TypeTable::Global().Index2Key(tindex); }

uint32_t Object::TypeKey2Index(const std::string& key) {
  return TypeTable::Global().Key2Index(key);
}

bool Object::DerivesFrom(uint32_t child, uint32_t parent) {
  return TypeTable::Global().DerivesFrom(child, parent);
}

size_t ObjectPtrHash::operator()(const ObjectRef& a) const {
  if (const auto* s = a.as<StringObj>()) {
    return std::hash<std::string_view>()(std::string_view(s->data, s->size));
  }
  return std::hash<const Object*>()(a.get());
}

bool ObjectPtrEqual::operator()(const ObjectRef& a, const ObjectRef& b) const {
  if (a.same_as(b)) return true;
  const auto* sa = a.as<StringObj>();
  const auto* sb = b.as<StringObj>();
  if (sa != nullptr && sb != nullptr) {
    return std::string_view(sa->data, sa->size) == std::string_view(sb->data, sb->size);
  }
  return false;
}

std::ostream& operator<<(std::ostream& os, const ShapeTuple& shape) {
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) os << ", ";
    os << shape.data()[i];
  }
  return os << ']';
}

}  // namespace ember::runtime
