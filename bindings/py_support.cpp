#include "py_support.hpp"

#include "ndk/call.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ndk::py {
namespace {

// Immortal: Python objects must not be released by a static destructor after the interpreter
// has finalized.
std::mutex &deferred_mu = *new std::mutex;
std::vector<std::shared_ptr<void>> &deferred = *new std::vector<std::shared_ptr<void>>;

template <class T>
std::shared_ptr<void> gil_safe(std::unique_ptr<T> owned)
{
    return std::shared_ptr<void>(owned.release(), [](void *p) {
        auto *held = static_cast<T *>(p);
        if (PyGILState_Check()) {
            delete held;
            return;
        }
        std::lock_guard lock(deferred_mu);
        deferred.push_back(std::shared_ptr<void>(held, [](void *q) { delete static_cast<T *>(q); }));
    });
}

} // namespace

std::shared_ptr<void> keep_alive(std::unique_ptr<pyb::buffer_info> buffer)
{
    return gil_safe(std::move(buffer));
}

std::unique_ptr<pyb::buffer_info> contiguous_buffer(const pyb::buffer &buffer, bool writable)
{
    auto info = std::make_unique<pyb::buffer_info>(buffer.request(writable));
    pyb::ssize_t expected = info->itemsize;
    for (auto d = info->ndim; d-- > 0;) {
        if (info->shape[d] > 1 && info->strides[d] != expected) {
            PyErr_SetString(PyExc_BufferError, "the buffer must be C-contiguous memory");
            throw pyb::error_already_set();
        }
        expected *= info->shape[d];
    }
    return info;
}

void release_deferred()
{
    std::vector<std::shared_ptr<void>> now;
    {
        std::lock_guard lock(deferred_mu);
        now.swap(deferred);
    }
}

pyb::object enum_of(const char *name, long long value)
{
    try {
        return package_attr("ndk._constants", name)(value);
    } catch (pyb::error_already_set &e) {
        if (!e.matches(PyExc_ValueError))
            throw;
        return pyb::int_(value);
    }
}

std::chrono::duration<double> timeout_of(const pyb::object &timeout)
{
    constexpr double kYear = 365.0 * 24 * 3600; // "forever", and the cap: a huge duration
                                                // would overflow the clock arithmetic
    if (timeout.is_none())
        return std::chrono::duration<double>(kYear);
    if (!PyFloat_Check(timeout.ptr()) && !PyLong_Check(timeout.ptr()))
        throw pyb::type_error("timeout must be None or a number of seconds");
    double seconds = timeout.cast<double>();
    if (!(seconds >= 0))
        throw pyb::value_error("timeout must be None or a number of seconds >= 0");
    return std::chrono::duration<double>(std::min(seconds, kYear));
}

GROUP_AFFINITY affinity_of(const pyb::object &affinity)
{
    GROUP_AFFINITY a{};
    if (pyb::isinstance<pyb::tuple>(affinity)) {
        auto pair = affinity.cast<pyb::tuple>();
        if (pair.size() != 2)
            throw pyb::value_error("affinity is a CPU mask or a (mask, group) pair, not a "
                                   "tuple of " + std::to_string(pair.size()));
        a.Mask = unsigned_arg(pair[0], 64, "affinity mask");
        a.Group = static_cast<USHORT>(unsigned_arg(pair[1], 16, "affinity group"));
    } else if (PyLong_Check(affinity.ptr()) || PyIndex_Check(affinity.ptr())) {
        a.Mask = unsigned_arg(affinity, 64, "affinity");
    } else {
        throw pyb::type_error("affinity must be None, a CPU mask (int) or a (mask, group) "
                              "pair, not " + std::string(Py_TYPE(affinity.ptr())->tp_name));
    }
    return a;
}

namespace {

std::string range_text(unsigned bits)
{
    std::string max = bits >= 64 ? "18446744073709551615" : std::to_string((1ull << bits) - 1);
    return "an int in 0.." + max + " (" + std::to_string(bits) + "-bit unsigned)";
}

std::string type_name(pyb::handle value) { return Py_TYPE(value.ptr())->tp_name; }

// The exception for `why`, naming `what` (e.g. "Adapter.create_cq(): cq_depth").
[[noreturn]] void raise_failure(ArgumentFailure why, pyb::handle value, unsigned bits,
                                const std::string &what)
{
    PyObject *type = why == ArgumentFailure::NotInt     ? PyExc_TypeError
                     : why == ArgumentFailure::Negative ? PyExc_ValueError
                                                        : PyExc_OverflowError;
    std::string shown = why == ArgumentFailure::NotInt ? type_name(value)
                                                       : pyb::repr(value).cast<std::string>();
    PyErr_SetString(type, (what + " must be " + range_text(bits) + ", not " + shown).c_str());
    throw pyb::error_already_set();
}

struct NotedFailure {
    PyObject *value = nullptr; // borrowed: an argument of the call being dispatched
    unsigned bits = 0;
    ArgumentFailure why = ArgumentFailure::None;
};
thread_local NotedFailure noted;

} // namespace

ArgumentFailure check_unsigned(pyb::handle value, unsigned bits, uint64_t *out)
{
    pyb::object number = pyb::reinterpret_steal<pyb::object>(PyNumber_Index(value.ptr()));
    if (!number) {
        PyErr_Clear();
        return ArgumentFailure::NotInt;
    }
    int overflow = 0;
    long long small = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
    if (overflow < 0 || (overflow == 0 && small < 0))
        return ArgumentFailure::Negative;
    unsigned long long v = PyLong_AsUnsignedLongLong(number.ptr());
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return ArgumentFailure::TooLarge;
    }
    if (bits < 64 && v > (1ull << bits) - 1)
        return ArgumentFailure::TooLarge;
    *out = v;
    return ArgumentFailure::None;
}

void note_argument_failure(pyb::handle value, unsigned bits, ArgumentFailure why)
{
    if (noted.why == ArgumentFailure::None)
        noted = NotedFailure{value.ptr(), bits, why};
}

uint64_t unsigned_arg(pyb::handle value, unsigned bits, const char *parameter)
{
    uint64_t v = 0;
    ArgumentFailure why = PyLong_Check(value.ptr()) || PyIndex_Check(value.ptr())
                              ? check_unsigned(value, bits, &v)
                              : ArgumentFailure::NotInt;
    if (why != ArgumentFailure::None)
        raise_failure(why, value, bits, parameter);
    return v;
}

namespace {

using Record = pyb::detail::function_record;
using Impl = pyb::handle (*)(pyb::detail::function_call &);

// What a wrapped function record had: its impl, and the arguments declared .none(false), whose
// None the dispatcher would refuse with its own message (the check moves into named_impl).
struct Original {
    Impl impl;
    std::vector<size_t> not_none;
    std::string function; // the NDK function its docstring names first ("NdkCreateCq"), or ""
};

// ndk.Call: a Call a wrapped function returns is told its NDK function, for its timeout
// message (raise_call_timeout).
PyTypeObject *call_type = nullptr;
// Immortal, like the records themselves.
std::unordered_map<const Record *, Original> &originals =
    *new std::unordered_map<const Record *, Original>;

// The parameters of a pybind11 signature, "(self: ndk._core.Adapter, cq_depth: int, ...) ->
// ...": their type texts, in order.
std::vector<std::string> parameter_types(const char *signature)
{
    std::vector<std::string> types;
    if (!signature)
        return types;
    std::string text = signature;
    int depth = 0;
    std::string current;
    for (size_t i = 1; i < text.size(); ++i) {
        char c = text[i];
        if (depth == 0 && (c == ',' || c == ')')) {
            auto colon = current.find(": ");
            std::string type = colon == std::string::npos ? "" : current.substr(colon + 2);
            auto eq = type.find(" = ");
            if (eq != std::string::npos)
                type = type.substr(0, eq);
            types.push_back(type);
            current.clear();
            if (c == ')')
                break;
            continue;
        }
        if (c == '[' || c == '(')
            ++depth;
        if (c == ']' || c == ')')
            --depth;
        if (!(current.empty() && c == ' '))
            current += c;
    }
    return types;
}

std::string shown_type(std::string type)
{
    for (std::string prefix : {"ndk._core.", "ndk._status.", "ndk._constants."}) {
        for (size_t at; (at = type.find(prefix)) != std::string::npos;)
            type.replace(at, prefix.size(), "ndk.");
    }
    return type;
}

// The element types of "List[T]", "Tuple[A, B]", "Optional[T]" (the text inside the brackets,
// split at top-level commas).
std::vector<std::string> inner_types(const std::string &type)
{
    auto open = type.find('[');
    std::vector<std::string> parts;
    if (open == std::string::npos || type.back() != ']')
        return parts;
    std::string inside = type.substr(open + 1, type.size() - open - 2);
    int depth = 0;
    std::string current;
    for (char c : inside) {
        if (c == '[')
            ++depth;
        if (c == ']')
            --depth;
        if (c == ',' && depth == 0) {
            parts.push_back(current);
            current.clear();
            continue;
        }
        if (!(current.empty() && c == ' '))
            current += c;
    }
    parts.push_back(current);
    return parts;
}

struct Mismatch {
    std::string path;     // below the argument: "", "[2]"
    std::string expected; // "an ndk.Sge"
    pyb::handle value;    // what was there
};

// Where `value` does not fit `type`: nothing when it fits (or the type is not checked here).
std::optional<Mismatch> mismatch(pyb::handle value, const std::string &type)
{
    using Found = std::optional<Mismatch>;
    PyObject *v = value.ptr();
    auto expected = [&](const std::string &what) { return Found{Mismatch{"", what, value}}; };
    if (type == "int")
        return PyLong_Check(v) || PyIndex_Check(v) ? Found{} : expected("an int");
    if (type == "float")
        return PyFloat_Check(v) || PyLong_Check(v) || PyIndex_Check(v) ? Found{}
                                                                        : expected("a number");
    if (type == "str")
        return PyUnicode_Check(v) ? Found{} : expected("a str");
    if (type == "bool")
        return PyBool_Check(v) ? Found{} : expected("a bool");
    if (type == "bytes")
        return PyBytes_Check(v) ? Found{} : expected("bytes");
    if (type.rfind("Optional[", 0) == 0) {
        if (value.is_none())
            return Found{};
        auto inner = inner_types(type);
        return inner.size() == 1 ? mismatch(value, inner[0]) : Found{};
    }
    if (type.rfind("List[", 0) == 0) {
        if (!PyList_Check(v) && !PyTuple_Check(v))
            return expected("a list of " + shown_type(inner_types(type).at(0)));
        auto inner = inner_types(type);
        auto seq = pyb::reinterpret_borrow<pyb::sequence>(value);
        for (size_t i = 0; i < seq.size(); ++i)
            if (auto found = mismatch(seq[i], inner.at(0))) {
                found->path = "[" + std::to_string(i) + "]" + found->path;
                return found;
            }
        return Found{};
    }
    if (type.rfind("Tuple[", 0) == 0) {
        auto inner = inner_types(type);
        if ((!PyList_Check(v) && !PyTuple_Check(v)) || pyb::len(value) != inner.size())
            return expected("a tuple (" + shown_type(type.substr(6, type.size() - 7)) + ")");
        auto seq = pyb::reinterpret_borrow<pyb::sequence>(value);
        for (size_t i = 0; i < inner.size(); ++i)
            if (auto found = mismatch(seq[i], inner[i])) {
                found->path = "[" + std::to_string(i) + "]" + found->path;
                return found;
            }
        return Found{};
    }
    if (type == "ndk.Status") // an int does (see the Status caster)
        return PyLong_Check(v) ? Found{} : expected("an ndk.Status (an int)");
    if (type.rfind("ndk.", 0) == 0) { // a class of the binding (ndk.X is ndk._core.X)
        auto name = type.substr(type.rfind('.') + 1);
        auto cls = pyb::getattr(pyb::module_::import("ndk._core"), name.c_str(), pyb::none());
        if (cls.is_none()) // an enumeration (ndk._constants)
            cls = pyb::getattr(pyb::module_::import("ndk._constants"), name.c_str(), pyb::none());
        if (cls.is_none() || value.is_none() || pyb::isinstance(value, cls))
            return Found{};
        return expected("an " + shown_type(type));
    }
    return Found{};
}

std::string function_name(const pyb::detail::function_call &call)
{
    std::string name = call.func.name ? call.func.name : "function";
    // A constructor's first argument is pybind11's value_and_holder, not an object.
    if (call.func.is_constructor && call.init_self)
        name = std::string(Py_TYPE(call.init_self.ptr())->tp_name) + "." + name;
    else if (call.func.is_method && !call.args.empty() && call.args[0])
        name = std::string(Py_TYPE(call.args[0].ptr())->tp_name) + "." + name;
    else if (call.func.scope && PyType_Check(call.func.scope.ptr()))
        name = std::string(reinterpret_cast<PyTypeObject *>(call.func.scope.ptr())->tp_name) +
               "." + name;
    return shown_type(name) + "()";
}

std::string parameter_name(const pyb::detail::function_call &call, size_t i)
{
    if (i < call.func.args.size() && call.func.args[i].name)
        return call.func.args[i].name;
    return "argument " + std::to_string(i + 1);
}

// Whether `value` is an rpyc proxy (rpyc.core.netref.BaseNetref) of another process's object:
// what a test's process passes to an object of a remote peer (ndk._peer_process).
bool is_remote_proxy(pyb::handle value)
{
    PyObject *netref = PyDict_GetItemString(PyImport_GetModuleDict(), "rpyc.core.netref");
    if (netref == nullptr)
        return false; // rpyc is not loaded: nothing here is a proxy
    pyb::object base = pyb::getattr(netref, "BaseNetref", pyb::none());
    return !base.is_none() && PyObject_IsInstance(value.ptr(), base.ptr()) == 1;
}

// The arguments of `call` did not load: raise naming the parameter.
[[noreturn]] void raise_argument_error(const pyb::detail::function_call &call, NotedFailure failure)
{
    std::string function = function_name(call);
    // An object of this process given another process's value (a peer's MR given the test's
    // bytearray): memory cannot cross, so say where to allocate it instead.
    for (size_t i = call.func.is_method ? 1 : 0; i < call.args.size(); ++i) {
        if (call.args[i] && is_remote_proxy(call.args[i])) {
            PyErr_SetString(PyExc_TypeError,
                            (function + ": " + parameter_name(call, i) +
                             " is an object of another process (an rpyc proxy): an NDK object "
                             "takes memory of its own process; allocate the buffer beside it "
                             "with ndk.testing.new_buffer(object, size)")
                                .c_str());
            throw pyb::error_already_set();
        }
    }
    if (failure.why != ArgumentFailure::None) {
        // The noted value is an argument, or an element of a list/tuple argument.
        // (From 1 for a method: a constructor's args[0] is pybind11's value_and_holder.)
        for (size_t i = call.func.is_method ? 1 : 0; i < call.args.size(); ++i) {
            PyObject *arg = call.args[i].ptr();
            if (arg == failure.value)
                raise_failure(failure.why, arg, failure.bits,
                              function + ": " + parameter_name(call, i));
            if (arg && (PyList_Check(arg) || PyTuple_Check(arg))) {
                auto seq = pyb::reinterpret_borrow<pyb::sequence>(arg);
                for (size_t k = 0; k < seq.size(); ++k)
                    if (seq[k].ptr() == failure.value)
                        raise_failure(failure.why, failure.value, failure.bits,
                                      function + ": " + parameter_name(call, i) + "[" +
                                          std::to_string(k) + "]");
            }
        }
    }
    auto types = parameter_types(call.func.signature);
    for (size_t i = call.func.is_method ? 1 : 0; i < call.args.size() && i < types.size(); ++i) {
        if (!call.args[i])
            continue;
        if (auto found = mismatch(call.args[i], types[i])) {
            PyErr_SetString(PyExc_TypeError,
                            (function + ": " + parameter_name(call, i) + found->path +
                             " must be " + found->expected + ", not " + type_name(found->value))
                                .c_str());
            throw pyb::error_already_set();
        }
    }
    std::string given;
    for (size_t i = call.func.is_method ? 1 : 0; i < call.args.size(); ++i)
        given += (given.empty() ? "" : ", ") + parameter_name(call, i) + ": " +
                 (call.args[i] ? type_name(call.args[i]) : "?");
    PyErr_SetString(PyExc_TypeError,
                    (function + ": arguments of the wrong type (" + given + "); expected " +
                     shown_type(call.func.signature ? call.func.signature : "?"))
                        .c_str());
    throw pyb::error_already_set();
}

pyb::handle named_impl(pyb::detail::function_call &call)
{
    const Original &original = originals.at(&call.func);
    for (size_t i : original.not_none) {
        if (i < call.args.size() && call.args[i].is_none() && !(i == 0 && call.func.is_method)) {
            auto types = parameter_types(call.func.signature);
            std::string expected = i < types.size() ? shown_type(types[i]) : "an object";
            PyErr_SetString(PyExc_TypeError, (function_name(call) + ": " +
                                              parameter_name(call, i) + " must be an " +
                                              expected + ", not None")
                                                 .c_str());
            throw pyb::error_already_set();
        }
    }
    noted = NotedFailure{};
    pyb::handle result;
    try {
        result = original.impl(call);
    } catch (pyb::reference_cast_error &) {
        result = PYBIND11_TRY_NEXT_OVERLOAD;
    }
    if (result.ptr() != PYBIND11_TRY_NEXT_OVERLOAD) {
        if (result && call_type && !original.function.empty() &&
            PyObject_TypeCheck(result.ptr(), call_type)) {
            std::string function = original.function;
            if (function == "NdkCloseXxx" && !call.args.empty()) { // Object.close: NdkCloseCq
                std::string type = Py_TYPE(call.args[0].ptr())->tp_name;
                function = "NdkClose" + type.substr(type.rfind('.') + 1);
            }
            if (PyObject_SetAttrString(result.ptr(), "_function",
                                       pyb::str(function).ptr()) != 0)
                PyErr_Clear();
            if (call.func.is_method && !call.args.empty())
                remember_owner(result, call.args[0]);
        }
        return result;
    }
    NotedFailure failure = noted;
    noted = NotedFailure{};
    raise_argument_error(call, failure);
}

Record *record_of(pyb::handle function)
{
    pyb::handle f = pyb::detail::get_function(function);
    if (!f || !PyCFunction_Check(f.ptr()))
        return nullptr;
    pyb::handle self = PyCFunction_GET_SELF(f.ptr());
    if (!self || !pyb::isinstance<pyb::capsule>(self))
        return nullptr;
    auto capsule = pyb::reinterpret_borrow<pyb::capsule>(self);
    if (!pyb::detail::is_function_record_capsule(capsule))
        return nullptr;
    return capsule.get_pointer<Record>();
}

void wrap(pyb::handle function)
{
    pyb::object target = pyb::reinterpret_borrow<pyb::object>(function);
    if (PyObject_TypeCheck(function.ptr(), &PyStaticMethod_Type))
        target = target.attr("__func__");
    Record *record = record_of(target);
    // Overloads keep pybind11's own resolution, and operators must return NotImplemented.
    if (!record || record->next || record->is_operator || originals.count(record))
        return;
    Original original{record->impl, {}, {}};
    if (record->doc && std::strncmp(record->doc, "Ndk", 3) == 0) {
        const char *end = record->doc;
        while (std::isalnum(static_cast<unsigned char>(*end)))
            ++end;
        original.function.assign(record->doc, static_cast<size_t>(end - record->doc));
    }
    for (size_t i = 0; i < record->args.size(); ++i) {
        if (!record->args[i].none) {
            original.not_none.push_back(i);
            record->args[i].none = true;
        }
    }
    originals.emplace(record, std::move(original));
    record->impl = &named_impl;
}

} // namespace

std::string call_function(pyb::handle call)
{
    if (call && pyb::hasattr(call, "_function"))
        return pyb::str(call.attr("_function")).cast<std::string>();
    return "the NDK call";
}

void raise_call_timeout(pyb::handle call, const pyb::object &timeout)
{
    std::string function = call_function(call);
    std::string within =
        timeout.is_none() ? "in time" : "within " + pyb::str(timeout).cast<std::string>() + " s";
    std::string message = function + " did not complete " + within +
                          " (waiting for its completion callback); if the adapter runs with "
                          "progress='manual', call adapter.step()";
    PyErr_SetString(PyExc_TimeoutError, message.c_str());
    throw pyb::error_already_set();
}

void name_argument_errors(pyb::module_ &m)
{
    call_type = reinterpret_cast<PyTypeObject *>(m.attr("Call").ptr());
    auto walk_namespace = [](pyb::handle names) {
        for (auto item : pyb::reinterpret_borrow<pyb::dict>(names)) {
            pyb::handle value = item.second;
            if (PyType_Check(value.ptr())) {
                auto dict = pyb::reinterpret_borrow<pyb::object>(
                    reinterpret_cast<PyTypeObject *>(value.ptr())->tp_dict);
                for (auto member : pyb::reinterpret_borrow<pyb::dict>(dict))
                    wrap(member.second);
            } else {
                wrap(value);
            }
        }
    };
    walk_namespace(m.attr("__dict__"));
    for (auto item : pyb::reinterpret_borrow<pyb::dict>(m.attr("__dict__")))
        if (PyModule_Check(item.second.ptr()))
            walk_namespace(item.second.attr("__dict__"));
}

void let_go_now()
{
    release_parked();
    release_deferred();
}

namespace {

// What an ndk.Call's `_owner` holds: what the call was issued on, weakly (a pending Call keeps
// neither its object nor its adapter alive).
struct CallOwner {
    // Throws ClosedError once the call can no longer complete.
    std::function<void(const std::string &function)> check;
    // Registers `wake` with the closes that change what check() answers (WAIT-CLOSED).
    std::function<std::vector<CloseSignal::Watch>(const CloseSignal::Wake &wake)> watch;
};

void check_adapter(const std::shared_ptr<Adapter> &adapter, const std::string &function)
{
    if (adapter && adapter->inherited())
        adapter->check_open(); // InheritedError
    if (!adapter || !adapter->accepts_closes())
        throw ClosedError(function + " will not complete: its adapter is closed");
}

CallOwner adapter_owner(std::weak_ptr<Adapter> weak)
{
    return CallOwner{
        [weak](const std::string &function) { check_adapter(weak.lock(), function); },
        [weak](const CloseSignal::Wake &wake) {
            std::vector<CloseSignal::Watch> watches;
            if (auto adapter = weak.lock())
                watches.push_back(adapter->watch_close(wake));
            return watches;
        }};
}

// `function` is the NDK function of the Call (NdkCloseCq for a CQ's close).
std::optional<CallOwner> call_owner_of(pyb::handle self, const std::string &function)
{
    if (pyb::isinstance<Adapter>(self))
        return adapter_owner(self.cast<std::shared_ptr<Adapter>>());
    // An object's own close ends with its completion (which marks the object closed just
    // before the Call is done): only its adapter's teardown ends that wait otherwise.
    if (pyb::isinstance<Object>(self) && function.rfind("NdkClose", 0) == 0)
        return adapter_owner(self.cast<std::shared_ptr<Object>>()->adapter());
    if (pyb::isinstance<Object>(self)) {
        auto object = self.cast<std::shared_ptr<Object>>();
        std::weak_ptr<Object> weak = object;
        std::weak_ptr<Adapter> weak_adapter = object->adapter();
        std::string type = object_type_name(object->type());
        return CallOwner{
            [weak, weak_adapter, type](const std::string &function) {
                check_adapter(weak_adapter.lock(), function);
                if (auto object = weak.lock(); object && object->close_completed())
                    throw ClosedError(function + " will not complete: its " + type +
                                      " is closed");
            },
            [weak, adapter = adapter_owner(weak_adapter)](const CloseSignal::Wake &wake) {
                if (auto object = weak.lock())
                    return object->watch_close(wake);
                return adapter.watch(wake);
            }};
    }
    return std::nullopt;
}

} // namespace

void remember_owner(pyb::handle call, pyb::handle self)
{
    auto found = call_owner_of(self, call_function(call));
    if (!found)
        return;
    pyb::capsule owner(new CallOwner(std::move(*found)),
                       [](void *p) { delete static_cast<CallOwner *>(p); });
    if (PyObject_SetAttrString(call.ptr(), "_owner", owner.ptr()) != 0)
        PyErr_Clear();
}

bool wait_released(pyb::handle self, const Call &call, double seconds)
{
    std::optional<std::chrono::duration<double>> timeout;
    if (seconds >= 0)
        timeout = Call::Seconds(seconds);
    const CallOwner *owner = nullptr;
    pyb::object capsule; // keeps *owner alive for the wait
    if (self && pyb::hasattr(self, "_owner")) {
        capsule = self.attr("_owner");
        if (PyCapsule_CheckExact(capsule.ptr()))
            owner = capsule.cast<pyb::capsule>().get_pointer<CallOwner>();
    }
    const std::string function = owner ? call_function(self) : std::string();
    // A close of the owner wakes the wait at once; the slices are for Ctrl-C.
    std::atomic<bool> woken{false};
    std::vector<CloseSignal::Watch> watches;
    if (owner != nullptr)
        watches = owner->watch([&] {
            woken.store(true);
            call.wake();
        });
    return wait_interruptibly(timeout, [&](std::chrono::duration<double> slice) {
        woken.store(false); // before the check: a close after it wakes the wait below
        if (owner != nullptr && !call.done())
            owner->check(function);
        return call.wait(slice, &woken);
    });
}

} // namespace ndk::py
