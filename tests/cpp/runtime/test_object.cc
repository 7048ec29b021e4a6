#include <ember/runtime/object.h>
#include <gtest/gtest.h>

#include <string>

namespace ember::runtime {
namespace {

int g_destroyed = 0;

class AnimalNode : public Object {
 public:
  std::string name;
  static constexpr const char* _type_key = "test.Animal";
  EMBER_DECLARE_BASE_OBJECT_INFO(AnimalNode, Object);
  ~AnimalNode() { ++g_destroyed; }
};

class DogNode : public AnimalNode {
 public:
  int barks = 0;
  static constexpr const char* _type_key = "test.Dog";
  EMBER_DECLARE_FINAL_OBJECT_INFO(DogNode, AnimalNode);
};

class CatNode : public AnimalNode {
 public:
  static constexpr const char* _type_key = "test.Cat";
  EMBER_DECLARE_FINAL_OBJECT_INFO(CatNode, AnimalNode);
};

class Animal : public ObjectRef {
 public:
  EMBER_DEFINE_OBJECT_REF_METHODS(Animal, ObjectRef, AnimalNode);
};
class Dog : public Animal {
 public:
  EMBER_DEFINE_OBJECT_REF_METHODS(Dog, Animal, DogNode);
};
class Cat : public Animal {
 public:
  EMBER_DEFINE_OBJECT_REF_METHODS(Cat, Animal, CatNode);
};

TEST(Object, RefCountingAndDeleter) {
  g_destroyed = 0;
  {
    ObjectPtr<DogNode> p = make_object<DogNode>();
    EXPECT_EQ(p.use_count(), 1);
    {
      ObjectPtr<DogNode> q = p;
      EXPECT_EQ(p.use_count(), 2);
      ObjectPtr<Object> base = q;
      EXPECT_EQ(p.use_count(), 3);
    }
    EXPECT_EQ(p.use_count(), 1);
    ObjectPtr<DogNode> moved = std::move(p);
    EXPECT_EQ(moved.use_count(), 1);
    EXPECT_EQ(p.get(), nullptr);
    EXPECT_EQ(g_destroyed, 0);
  }
  EXPECT_EQ(g_destroyed, 1);
}

TEST(Object, TypeIndicesAreDistinctAndRegistered) {
  uint32_t dog = DogNode::RuntimeTypeIndex();
  uint32_t cat = CatNode::RuntimeTypeIndex();
  uint32_t animal = AnimalNode::RuntimeTypeIndex();
  EXPECT_NE(dog, cat);
  EXPECT_NE(dog, animal);
  EXPECT_GE(dog, static_cast<uint32_t>(TypeIndex::kStaticIndexEnd));
  EXPECT_EQ(Object::TypeKey2Index("test.Dog"), dog);
  EXPECT_EQ(Object::TypeIndex2Key(cat), "test.Cat");
  EXPECT_EQ(Object::TypeIndex2Key(TypeIndex::kRuntimeNDArray), "runtime.NDArray");
  EXPECT_THROW(Object::TypeKey2Index("test.NoSuchType"), Error);
}

TEST(Object, IsInstanceAsAndDowncastWithoutRtti) {
  Animal a(make_object<DogNode>());
  EXPECT_TRUE(a->IsInstance<DogNode>());
  EXPECT_TRUE(a->IsInstance<AnimalNode>());
  EXPECT_TRUE(a->IsInstance<Object>());
  EXPECT_FALSE(a->IsInstance<CatNode>());
  EXPECT_NE(a.as<DogNode>(), nullptr);
  EXPECT_EQ(a.as<CatNode>(), nullptr);
  Dog d = Downcast<Dog>(a);
  EXPECT_TRUE(d.same_as(a));
  EXPECT_EQ(d.GetTypeKey(), "test.Dog");
  try {
    Downcast<Cat>(a);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test.Dog to test.Cat"), std::string::npos) << e.what();
  }
  Animal null_ref;
  EXPECT_FALSE(null_ref.defined());
  EXPECT_FALSE(Downcast<Dog>(null_ref).defined());
}

TEST(Object, ObjectRefEqualityIsIdentity) {
  Animal a(make_object<DogNode>());
  Animal b(make_object<DogNode>());
  Animal c = a;
  EXPECT_TRUE(a == c);
  EXPECT_FALSE(a == b);
  EXPECT_EQ(a.use_count(), 2);
}

}  // namespace
}  // namespace ember::runtime
