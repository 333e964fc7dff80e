// cxx_dom: a xalancbmk-like document transformer in C++. A DOM-like tree of element nodes,
// each with a std::map of string attributes, a std::vector of children and text nodes held
// in std::string, is built from a generated document; an id index lives in a
// std::unordered_map. Each pass evaluates path queries over the whole tree and builds (then
// destroys) a result tree with std::list of output records, so long-lived DOM nodes are
// allocated interleaved with their attribute-map nodes and strings through several template
// layers.
// usage: cxx_dom <items> <passes>
#include <cstdint>
#include <cstdio>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "wl_common.h"

namespace {

struct Node {
    virtual ~Node() = default;
    virtual bool is_text() const = 0;
};

struct Text : Node {
    std::string value;
    explicit Text(std::string v) : value(std::move(v)) {}
    bool is_text() const override { return true; }
};

struct Element : Node {
    std::string tag;
    std::map<std::string, std::string> attrs;
    std::vector<Node *> children;
    Element *parent = nullptr;
    explicit Element(std::string t) : tag(std::move(t)) {}
    ~Element() override {
        for (Node *c : children) delete c;
    }
    bool is_text() const override { return false; }
    Element *add(Element *e) {
        e->parent = this;
        children.push_back(e);
        return e;
    }
    void add_text(const std::string &s) { children.push_back(new Text(s)); }
    const std::string *attr(const std::string &k) const {
        auto it = attrs.find(k);
        return it == attrs.end() ? nullptr : &it->second;
    }
};

const char *const kCategories[] = {"books", "music", "garden", "tools", "toys", "food", "sports", "travel"};
const char *const kWords[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"};

std::string words(wl_rng *r, int n) {
    std::string s;
    for (int i = 0; i < n; i++) {
        if (i) s += ' ';
        s += kWords[wl_below(r, 10)];
    }
    return s;
}

Element *build(long items, wl_rng *r, std::unordered_map<std::string, Element *> &by_id) {
    auto *root = new Element("catalog");
    root->attrs["version"] = "1.0";
    Element *section = nullptr;
    for (long i = 0; i < items; i++) {
        if (i % 50 == 0) {
            section = root->add(new Element("section"));
            section->attrs["name"] = "section-" + std::to_string(i / 50);
        }
        auto *item = section->add(new Element("item"));
        std::string id = "item-" + std::to_string(i);
        item->attrs["id"] = id;
        item->attrs["category"] = kCategories[wl_below(r, 8)];
        if (wl_below(r, 3) == 0) item->attrs["featured"] = "yes";
        by_id[id] = item;
        auto *title = item->add(new Element("title"));
        title->add_text(words(r, 2 + static_cast<int>(wl_below(r, 4))));
        auto *price = item->add(new Element("price"));
        price->attrs["currency"] = wl_below(r, 4) == 0 ? "EUR" : "USD";
        price->add_text(std::to_string(100 + wl_below(r, 100000)));
        int nrev = static_cast<int>(wl_below(r, 4));
        for (int k = 0; k < nrev; k++) {
            auto *rev = item->add(new Element("review"));
            rev->attrs["stars"] = std::to_string(1 + wl_below(r, 5));
            rev->attrs["by"] = "user" + std::to_string(wl_below(r, 5000));
            rev->add_text(words(r, 5 + static_cast<int>(wl_below(r, 10))));
        }
        if (wl_below(r, 5) == 0) {
            // a cross reference to an earlier item
            auto *ref = item->add(new Element("related"));
            ref->attrs["ref"] = "item-" + std::to_string(wl_below(r, static_cast<uint32_t>(i + 1)));
        }
    }
    return root;
}

const std::string &text_of(const Element *e) {
    static const std::string empty;
    for (const Node *c : e->children)
        if (c->is_text()) return static_cast<const Text *>(c)->value;
    return empty;
}

struct OutRecord {
    std::string key;
    long value;
};

// one "transformation": select items of a category, follow related refs through the id
// index, and emit output records into a result list
uint64_t transform(const Element *root, const std::unordered_map<std::string, Element *> &by_id, int pass) {
    const std::string want = kCategories[pass % 8];
    const std::string k_category = "category", k_featured = "featured", k_stars = "stars", k_ref = "ref";
    std::list<OutRecord> out;
    std::map<std::string, long> per_section;
    long stars_total = 0;
    for (const Node *sn : root->children) {
        const auto *section = static_cast<const Element *>(sn);
        long section_sum = 0;
        for (const Node *in : section->children) {
            const auto *item = static_cast<const Element *>(in);
            const std::string *cat = item->attr(k_category);
            bool match = cat && *cat == want;
            for (const Node *cn : item->children) {
                if (cn->is_text()) continue;
                const auto *child = static_cast<const Element *>(cn);
                if (child->tag == "review") {
                    const std::string *s = child->attr(k_stars);
                    if (s) stars_total += (*s)[0] - '0';
                } else if (match && child->tag == "price") {
                    long p = std::stol(text_of(child));
                    section_sum += p;
                    out.push_back(OutRecord{text_of(static_cast<const Element *>(item->children[0])), p});
                } else if (match && child->tag == "related") {
                    const std::string *ref = child->attr(k_ref);
                    auto it = by_id.find(*ref);
                    if (it != by_id.end() && it->second->attr(k_featured)) section_sum += 1;
                }
            }
        }
        if (section_sum) per_section[*section->attr("name")] = section_sum;
    }
    uint64_t h = static_cast<uint64_t>(stars_total);
    for (const auto &kv : per_section) h = wl_mix(h, static_cast<uint64_t>(kv.second) + kv.first.size());
    for (const auto &rec : out) h = wl_mix(h, static_cast<uint64_t>(rec.value) * 131u + rec.key.size());
    return h;
}

}  // namespace

int main(int argc, char **argv) {
    long items = wl_arg(argc, argv, 1, 5000);
    long passes = wl_arg(argc, argv, 2, 8);
    wl_rng r;
    wl_seed(&r, 5);
    std::unordered_map<std::string, Element *> by_id;
    std::unique_ptr<Element> root(build(items, &r, by_id));
    uint64_t h = 0;
    for (long p = 0; p < passes; p++) h = wl_mix(h, transform(root.get(), by_id, static_cast<int>(p)));
    std::printf("items: %ld sections: %zu\n", items, root->children.size());
    std::printf("checksum: %llu\n", static_cast<unsigned long long>(h));
    return 0;
}
