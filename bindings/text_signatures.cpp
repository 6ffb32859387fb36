// Text signatures, so that inspect.signature works on every function of ndk._core.
//
// CPython gives a builtin function a __text_signature__ when its docstring starts with
// "name(a, b=1)\n--\n\n" (and strips that part from __doc__); pybind11 starts the docstring
// with its own typed signature, "name(self: ndk._core.Pd, a: int, b: int = 1) -> ndk._core.Call",
// which CPython does not read.  This pass, run once every function is bound, derives the plain
// form from pybind11's line and prepends it: __doc__ and help() keep the typed line, and
// inspect.signature(ndk.Pd.create_qp) gives (self, receive_cq, initiator_cq, qp_context=0, ...).
// An overloaded function gets pybind11's own first line, (*args, **kwargs).  Like
// name_argument_errors, this walks the module's functions once, after every binding.
#include <pybind11/pybind11.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ndk::py {
namespace pyb = pybind11;
namespace {

// The parameters of a signature, split at the commas outside brackets and quotes.
std::vector<std::string_view> split_parameters(std::string_view list)
{
    std::vector<std::string_view> out;
    int depth = 0;
    char quote = 0;
    size_t start = 0;
    for (size_t i = 0; i < list.size(); ++i) {
        char c = list[i];
        if (quote) {
            if (c == '\\')
                ++i;
            else if (c == quote)
                quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '(' || c == '[' || c == '{') {
            ++depth;
        } else if (c == ')' || c == ']' || c == '}') {
            --depth;
        } else if (c == ',' && depth == 0) {
            out.push_back(list.substr(start, i - start));
            start = i + 1;
        }
    }
    if (list.find_first_not_of(' ', start) != std::string_view::npos)
        out.push_back(list.substr(start));
    return out;
}

std::string_view trim(std::string_view s)
{
    size_t first = s.find_first_not_of(' ');
    if (first == std::string_view::npos)
        return {};
    return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

// "name: type = default" -> "name=default"; "*args: type" -> "*args"; "*" and "/" as they are.
std::string plain_parameter(std::string_view parameter)
{
    parameter = trim(parameter);
    size_t colon = parameter.find(':');
    std::string out(trim(parameter.substr(0, colon)));
    size_t equals = parameter.find(" = ");
    if (equals != std::string_view::npos)
        out += "=" + std::string(trim(parameter.substr(equals + 3)));
    return out;
}

// The plain text signature of a pybind11 docstring that starts "name(...)", or nothing.
std::optional<std::string> text_signature(std::string_view name, std::string_view doc)
{
    if (doc.size() <= name.size() || doc.substr(0, name.size()) != name || doc[name.size()] != '(')
        return std::nullopt;
    int depth = 0;
    char quote = 0;
    for (size_t i = name.size(); i < doc.size() && doc[i] != '\n'; ++i) {
        char c = doc[i];
        if (quote) {
            if (c == '\\')
                ++i;
            else if (c == quote)
                quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '(' || c == '[' || c == '{') {
            ++depth;
        } else if ((c == ')' || c == ']' || c == '}') && --depth == 0) {
            std::string plain = "(";
            for (auto parameter : split_parameters(doc.substr(name.size() + 1, i - name.size() - 1)))
                plain += (plain.size() > 1 ? ", " : "") + plain_parameter(parameter);
            return std::string(name) + plain + ")";
        }
    }
    return std::nullopt;
}

void add_text_signature(pyb::handle function)
{
    PyObject *f = function.ptr();
    if (PyInstanceMethod_Check(f))
        f = PyInstanceMethod_GET_FUNCTION(f);
    else if (PyObject_TypeCheck(f, &PyStaticMethod_Type))
        f = pyb::reinterpret_borrow<pyb::object>(f).attr("__func__").ptr(); // the dict holds it
    if (!PyCFunction_Check(f))
        return;
    PyMethodDef *def = reinterpret_cast<PyCFunctionObject *>(f)->m_ml;
    if (!def->ml_doc || !def->ml_name)
        return;
    std::string_view doc = def->ml_doc;
    if (doc.find("\n--\n\n") != std::string_view::npos)
        return; // already has one
    auto signature = text_signature(def->ml_name, doc);
    if (!signature)
        return;
    // pybind11 owns ml_doc (strdup'd, freed with std::free when the function goes).
    std::string with_signature = *signature + "\n--\n\n" + std::string(doc);
    char *copy = static_cast<char *>(std::malloc(with_signature.size() + 1));
    if (!copy)
        throw std::bad_alloc();
    std::memcpy(copy, with_signature.c_str(), with_signature.size() + 1);
    std::free(const_cast<char *>(def->ml_doc));
    def->ml_doc = copy;
}

void add_to_namespace(pyb::handle names)
{
    for (auto item : pyb::reinterpret_borrow<pyb::dict>(names)) {
        pyb::handle value = item.second;
        if (PyType_Check(value.ptr())) {
            auto *type = reinterpret_cast<PyTypeObject *>(value.ptr());
            for (auto member : pyb::reinterpret_borrow<pyb::dict>(type->tp_dict))
                add_text_signature(member.second);
        } else {
            add_text_signature(value);
        }
    }
}

} // namespace

void add_text_signatures(pyb::module_ &m)
{
    add_to_namespace(m.attr("__dict__"));
    for (auto item : pyb::reinterpret_borrow<pyb::dict>(m.attr("__dict__")))
        if (PyModule_Check(item.second.ptr()))
            add_to_namespace(item.second.attr("__dict__"));
}

} // namespace ndk::py
