// cxx_netsim: an omnetpp-like discrete-event simulation of a mesh network in C++.
// Messages are heap objects (new/delete) carrying a std::vector route record; the future
// event set is a std::multimap keyed by (time, sequence); each router keeps its gates in a
// std::map, a std::list output queue per gate, and per-source statistics in a
// std::unordered_map. Every event allocates and frees tree, list and hash nodes through the
// standard-library layers, interleaved with the long-lived per-router containers.
// usage: cxx_netsim <width> <height> <events>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wl_common.h"

namespace {

struct Message {
    long id;
    int src, dst;
    long created;
    int hops = 0;
    std::vector<int> route;  // routers visited
    Message(long id_, int s, int d, long t) : id(id_), src(s), dst(d), created(t) {}
};

struct Gate {
    int peer = -1;
    long busy_until = 0;
    std::list<Message *> queue;
    long sent = 0;
};

struct Stats {
    long count = 0;
    long latency = 0;
    long hops = 0;
};

enum EventKind { GENERATE, ARRIVE, DEPART };

struct Event {
    EventKind kind;
    int router;
    int gate;  // for DEPART
    Message *msg;
};

class Network {
  public:
    Network(int w, int h, uint64_t seed) : w_(w), h_(h), routers_(static_cast<size_t>(w * h)) {
        wl_seed(&rng_, seed);
        for (int y = 0; y < h_; y++)
            for (int x = 0; x < w_; x++) {
                Router &r = routers_[static_cast<size_t>(idx(x, y))];
                if (x + 1 < w_) r.gates[idx(x + 1, y)].peer = idx(x + 1, y);
                if (x > 0) r.gates[idx(x - 1, y)].peer = idx(x - 1, y);
                if (y + 1 < h_) r.gates[idx(x, y + 1)].peer = idx(x, y + 1);
                if (y > 0) r.gates[idx(x, y - 1)].peer = idx(x, y - 1);
            }
        for (int i = 0; i < w_ * h_; i++) schedule(static_cast<long>(wl_below(&rng_, 50)), Event{GENERATE, i, -1, nullptr});
    }

    ~Network() {
        for (auto &kv : fes_) delete kv.second.msg;
        for (auto &r : routers_)
            for (auto &g : r.gates)
                for (Message *m : g.second.queue) delete m;
    }

    void run(long max_events) {
        while (!fes_.empty() && processed_ < max_events) {
            auto it = fes_.begin();
            now_ = it->first.first;
            Event ev = it->second;
            fes_.erase(it);
            processed_++;
            switch (ev.kind) {
            case GENERATE: generate(ev.router); break;
            case ARRIVE: arrive(ev.router, ev.msg); break;
            case DEPART: depart(ev.router, ev.gate); break;
            }
        }
    }

    uint64_t checksum(long *delivered, long *total_hops) const {
        uint64_t h = 0;
        long d = 0, hops = 0;
        for (size_t i = 0; i < routers_.size(); i++) {
            const Router &r = routers_[i];
            // combine per-source stats without depending on the hash table's iteration order
            uint64_t rs = 0;
            for (const auto &kv : r.stats) {
                rs += wl_mix(static_cast<uint64_t>(kv.first), static_cast<uint64_t>(kv.second.count * 1000003 + kv.second.latency * 7 + kv.second.hops));
                d += kv.second.count;
                hops += kv.second.hops;
            }
            for (const auto &g : r.gates) rs = wl_mix(rs, static_cast<uint64_t>(g.first * 31 + g.second.sent));
            h = wl_mix(h, rs);
        }
        *delivered = d;
        *total_hops = hops;
        return wl_mix(h, static_cast<uint64_t>(processed_));
    }

    long processed() const { return processed_; }

  private:
    struct Router {
        std::map<int, Gate> gates;  // keyed by neighbour index
        std::unordered_map<int, Stats> stats;  // keyed by source router
        long generated = 0;
    };

    int idx(int x, int y) const { return y * w_ + x; }

    void schedule(long t, const Event &ev) { fes_.emplace(std::make_pair(t, seq_++), ev); }

    void generate(int r) {
        Router &router = routers_[static_cast<size_t>(r)];
        int dst = static_cast<int>(wl_below(&rng_, static_cast<uint32_t>(w_ * h_)));
        if (dst != r) {
            auto *m = new Message(next_id_++, r, dst, now_);
            m->route.reserve(4);
            router.generated++;
            arrive(r, m);
        }
        schedule(now_ + 60 + static_cast<long>(wl_below(&rng_, 120)), Event{GENERATE, r, -1, nullptr});
    }

    void arrive(int r, Message *m) {
        m->route.push_back(r);
        Router &router = routers_[static_cast<size_t>(r)];
        if (r == m->dst) {
            Stats &s = router.stats[m->src];
            s.count++;
            s.latency += now_ - m->created;
            s.hops += m->hops;
            delete m;
            return;
        }
        // XY routing
        int x = r % w_, y = r / w_, dx = m->dst % w_, dy = m->dst / w_;
        int next = x != dx ? idx(x + (dx > x ? 1 : -1), y) : idx(x, y + (dy > y ? 1 : -1));
        auto git = router.gates.find(next);
        if (git == router.gates.end()) {
            std::fprintf(stderr, "cxx_netsim: no gate\n");
            std::exit(4);
        }
        Gate &g = git->second;
        bool idle = g.queue.empty();
        g.queue.push_back(m);
        if (idle) schedule(now_ > g.busy_until ? now_ : g.busy_until, Event{DEPART, r, next, nullptr});
    }

    void depart(int r, int gate) {
        Gate &g = routers_[static_cast<size_t>(r)].gates.find(gate)->second;
        if (g.queue.empty()) return;
        Message *m = g.queue.front();
        g.queue.pop_front();
        m->hops++;
        g.sent++;
        long tx = 3 + static_cast<long>(m->route.size() % 4);
        g.busy_until = now_ + tx;
        schedule(now_ + tx + 2, Event{ARRIVE, g.peer, -1, m});
        if (!g.queue.empty()) schedule(g.busy_until, Event{DEPART, r, gate, nullptr});
    }

    int w_, h_;
    std::vector<Router> routers_;
    std::multimap<std::pair<long, long>, Event> fes_;
    wl_rng rng_;
    long now_ = 0;
    long seq_ = 0;
    long next_id_ = 0;
    long processed_ = 0;
};

}  // namespace

int main(int argc, char **argv) {
    int w = static_cast<int>(wl_arg(argc, argv, 1, 16));
    int h = static_cast<int>(wl_arg(argc, argv, 2, 16));
    long events = wl_arg(argc, argv, 3, 200000);
    if (w < 2 || h < 2) {
        std::fprintf(stderr, "cxx_netsim: width and height must be >= 2\n");
        return 2;
    }
    long delivered = 0, hops = 0;
    uint64_t sum;
    {
        Network net(w, h, 17);
        net.run(events);
        sum = net.checksum(&delivered, &hops);
        std::printf("events: %ld delivered: %ld hops: %ld\n", net.processed(), delivered, hops);
    }
    std::printf("checksum: %llu\n", static_cast<unsigned long long>(sum));
    return 0;
}
