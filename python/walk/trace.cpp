// The trace format: one JSON object per line, {"i": id, "op": "name", "arg": value, ...}, the
// argument names of WALK_OPS (walk.hpp).  Integers only, so the reader is a few lines.
#include "walk.hpp"

#include <cctype>
#include <cstdlib>

namespace walk {
namespace {

struct Entry {
    const char *name;
    std::vector<const char *> args;
};

const std::vector<Entry> &table()
{
    static const std::vector<Entry> entries = {
#define WALK_ENTRY(name, ...) {#name, {__VA_ARGS__}},
        WALK_OPS(WALK_ENTRY)
#undef WALK_ENTRY
    };
    return entries;
}

} // namespace

const char *op_name(Code code) { return table()[static_cast<size_t>(code)].name; }

const std::vector<const char *> &arg_names(Code code)
{
    return table()[static_cast<size_t>(code)].args;
}

std::optional<Code> code_of(const std::string &name)
{
    for (size_t i = 0; i < table().size(); ++i)
        if (name == table()[i].name)
            return static_cast<Code>(i);
    return std::nullopt;
}

std::string op_to_json(const Op &op)
{
    std::string out = "{\"i\": " + std::to_string(op.id) + ", \"op\": \"" + op_name(op.code) + "\"";
    const auto &names = arg_names(op.code);
    for (size_t k = 0; k < names.size(); ++k)
        out += std::string(", \"") + names[k] + "\": " + std::to_string(op.a[k]);
    return out + "}";
}

std::optional<Op> op_from_json(const std::string &line)
{
    // {"key": value, ...} with string or integer values
    std::map<std::string, std::string> fields;
    size_t p = line.find('{');
    if (p == std::string::npos)
        return std::nullopt;
    ++p;
    auto skip = [&] {
        while (p < line.size() && std::isspace(static_cast<unsigned char>(line[p])))
            ++p;
    };
    while (true) {
        skip();
        if (p >= line.size() || line[p] == '}')
            break;
        if (line[p] != '"')
            return std::nullopt;
        size_t end = line.find('"', p + 1);
        if (end == std::string::npos)
            return std::nullopt;
        std::string key = line.substr(p + 1, end - p - 1);
        p = line.find(':', end);
        if (p == std::string::npos)
            return std::nullopt;
        ++p;
        skip();
        std::string value;
        if (p < line.size() && line[p] == '"') {
            end = line.find('"', p + 1);
            if (end == std::string::npos)
                return std::nullopt;
            value = line.substr(p + 1, end - p - 1);
            p = end + 1;
        } else {
            size_t start = p;
            while (p < line.size() && line[p] != ',' && line[p] != '}')
                ++p;
            value = line.substr(start, p - start);
            while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
                value.pop_back();
        }
        fields[key] = value;
        skip();
        if (p < line.size() && line[p] == ',')
            ++p;
    }
    auto name = fields.find("op");
    auto id = fields.find("i");
    if (name == fields.end() || id == fields.end())
        return std::nullopt;
    auto code = code_of(name->second);
    if (!code)
        return std::nullopt;
    Op op;
    op.id = std::strtoull(id->second.c_str(), nullptr, 10);
    op.code = *code;
    const auto &names = arg_names(*code);
    for (size_t k = 0; k < names.size(); ++k) {
        auto it = fields.find(names[k]);
        op.a[k] = it == fields.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
    }
    return op;
}

} // namespace walk
