/*!
 * \file ember/runtime/registry.h
 * \brief The global function registry: named PackedFuncs shared by C++, the C ABI and Python.
 *
 *   EMBER_REGISTER_GLOBAL("runtime.Echo").set_body_typed([](int x) { return x; });
 *   const PackedFunc* f = Registry::Get("runtime.Echo");
 *
 * Registering a name twice is an error unless override is asked for. Registration and lookup
 * are safe from any thread; a pointer returned by Get stays valid for the life of the process,
 * even if the name is later removed or overridden.
 */
#ifndef EMBER_RUNTIME_REGISTRY_H_
#define EMBER_RUNTIME_REGISTRY_H_

#include <ember/runtime/packed_func.h>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember::runtime {

/*! \brief One registered global function; built by Register, filled by set_body*. */
class Registry {
 public:
  /*! \brief Sets the function; call once, before others look the name up. */
  Registry& set_body(PackedFunc f);
  /*! \brief Sets the function from a `void(TVMArgs, TVMRetValue*)` callable. */
  template <typename F,
            typename = std::enable_if_t<std::is_invocable_r_v<void, F&, TVMArgs, TVMRetValue*>>>
  Registry& set_body(F f) {
    return set_body(PackedFunc(std::move(f)));
  }
  /*! \brief Sets the function from a typed callable; arguments are converted and checked. */
  template <typename F>
  Registry& set_body_typed(F f) {
    using Sig = typename detail::FunctionSignature<std::decay_t<F>>::type;
    return set_body(TypedPackedFunc<Sig>(std::move(f), name_).packed());
  }
  /*!
   * \brief Sets the function to call a method: argument 0 is the object (an ObjectRef of type
   * TRef whose node is T, or T itself when T is an ObjectRef type), the rest are the method's.
   */
  template <typename TRef = void, typename T, typename R, typename... Args>
  Registry& set_body_method(R (T::*method)(Args...) const) {
    using Self = std::conditional_t<std::is_void_v<TRef>, T, TRef>;
    return set_body_typed([method](Self self, Args... args) -> R {
      return Call<T>(self, method, std::forward<Args>(args)...);
    });
  }
  template <typename TRef = void, typename T, typename R, typename... Args>
  Registry& set_body_method(R (T::*method)(Args...)) {
    using Self = std::conditional_t<std::is_void_v<TRef>, T, TRef>;
    return set_body_typed([method](Self self, Args... args) -> R {
      return Call<T>(self, method, std::forward<Args>(args)...);
    });
  }

  const std::string& name() const { return name_; }

  /*!
   * \brief Creates the entry \p name. Throws if the name exists and \p can_override is false.
   */
  static Registry& Register(const std::string& name, bool can_override = false);
  /*! \brief Removes \p name; returns false if it was not registered. */
  static bool Remove(const std::string& name);
  /*! \brief The function registered as \p name, or nullptr. */
  static const PackedFunc* Get(const std::string& name);
  /*! \brief Sorted names of every registered function. */
  static std::vector<std::string> ListNames();

 private:
  explicit Registry(std::string name) : name_(std::move(name)) {}

  template <typename T, typename Self, typename M, typename... Args>
  static decltype(auto) Call(Self& self, M method, Args&&... args) {
    if constexpr (std::is_base_of_v<ObjectRef, T>) {
      return (self.*method)(std::forward<Args>(args)...);
    } else {
      // Self is a reference type whose node is T.
      EMBER_CHECK(self.defined()) << "method called on a null " << T::_type_key;
      T* node = const_cast<T*>(static_cast<const T*>(self.get()));
      return (node->*method)(std::forward<Args>(args)...);
    }
  }

  std::string name_;
  PackedFunc func_;
  friend class RegistryTable;
};

}  // namespace ember::runtime

#define EMBER_STR_CONCAT_(a, b) a##b
#define EMBER_STR_CONCAT(a, b) EMBER_STR_CONCAT_(a, b)

/*!
 * \brief Registers a global function at static-initialisation time:
 * `EMBER_REGISTER_GLOBAL("name").set_body_typed(...)`.
 */
#define EMBER_REGISTER_GLOBAL(name)                                     \
  [[maybe_unused]] static ::ember::runtime::Registry& EMBER_STR_CONCAT( \
      ember_registry_, __COUNTER__) = ::ember::runtime::Registry::Register(name)

#endif  // EMBER_RUNTIME_REGISTRY_H_
