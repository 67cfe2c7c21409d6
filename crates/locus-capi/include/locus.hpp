// locus.hpp: a header-only C++ wrapper over Locus's C API (locus.h).
//
// RAII handles (runtime, data<T>, team, report, settings) that free what they hold;
// lambdas as task bodies and control programs; typed views (std::span under C++20, a
// small span otherwise) checked against the datum's element size; exceptions
// (locus::error, carrying the locus_status) instead of status codes.
//
//     locus::runtime rt("dsa-opt", "2x1");
//     auto x = rt.data_from<double>("x", values);
//     auto y = rt.data<double>("y", values.size());
//     rt.run([&](locus::context &ctx) {
//         ctx.spawn("double", {locus::read(x), locus::write(y)},
//                   [](locus::context &, locus::views v) {
//                       auto in = v.get<const double>(0);
//                       auto out = v.get<double>(1);
//                       for (size_t i = 0; i < in.size(); i++) out[i] = 2 * in[i];
//                   });
//     });
//     std::vector<double> result = rt.fetch(y);
//
// An exception thrown by a body fails the run: the run's error names the task and
// carries the exception's what(). Handles are move-only; a data<T> may outlive its
// runtime (destroying a runtime frees its data handles, and the data<T> then frees
// nothing).
#ifndef LOCUS_HPP
#define LOCUS_HPP

#include <locus.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if __cplusplus >= 202002L && defined(__has_include)
#if __has_include(<span>)
#include <span>
#define LOCUS_HPP_STD_SPAN 1
#endif
#endif

namespace locus {

// ---- errors ----

// A failed call of the C API: its status and message (locus_last_error()).
class error : public std::runtime_error {
  public:
    error(locus_status status, const std::string &message)
        : std::runtime_error(std::string(locus_status_name(status)) + ": " + message),
          status_(status) {}
    locus_status status() const noexcept { return status_; }

  private:
    locus_status status_;
};

// Throws locus::error for any status but LOCUS_OK.
inline void check(locus_status status) {
    if (status != LOCUS_OK) throw error(status, locus_last_error());
}

// ---- spans ----

#ifdef LOCUS_HPP_STD_SPAN
template <class T> using span = std::span<T>;
#else
// The part of std::span a task body needs, before C++20.
template <class T> class span {
  public:
    span() = default;
    span(T *data, std::size_t size) : data_(data), size_(size) {}
    T *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    T &operator[](std::size_t i) const noexcept { return data_[i]; }
    T *begin() const noexcept { return data_; }
    T *end() const noexcept { return data_ + size_; }

  private:
    T *data_ = nullptr;
    std::size_t size_ = 0;
};
#endif

// ---- settings ----

// The runtime builder's further options (see locus_settings_set for the names).
class settings {
  public:
    settings() { check(locus_settings_create(&h_)); }
    settings(const settings &) = delete;
    settings &operator=(const settings &) = delete;
    settings(settings &&o) noexcept : h_(o.h_) { o.h_ = locus_settings{}; }
    ~settings() {
        if (h_.bits) locus_settings_free(h_);
    }
    settings &set(const std::string &key, const std::string &value) {
        check(locus_settings_set(h_, key.c_str(), value.c_str()));
        return *this;
    }
    locus_settings handle() const noexcept { return h_; }

  private:
    locus_settings h_{};
};

// ---- data ----

// A datum of `count` elements of T (T trivially copyable): the handle, freed on
// destruction.
template <class T> class data {
    static_assert(std::is_trivially_copyable<T>::value, "data<T> needs a trivially copyable T");

  public:
    data() = default;
    // Takes ownership of a handle made for elements of sizeof(T) bytes.
    explicit data(locus_data handle) : h_(handle) {
        std::size_t elem = 0, count = 0;
        check(locus_data_size(h_, &elem, &count));
        if (elem != sizeof(T)) {
            locus_data_free(h_);
            throw error(LOCUS_E_SIZE, "datum of " + std::to_string(elem) +
                                          "-byte elements taken as data of " +
                                          std::to_string(sizeof(T)) + "-byte elements");
        }
        count_ = count;
    }
    data(const data &) = delete;
    data &operator=(const data &) = delete;
    data(data &&o) noexcept : h_(o.h_), count_(o.count_) { o.h_ = locus_data{}; }
    data &operator=(data &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = o.h_;
            count_ = o.count_;
            o.h_ = locus_data{};
        }
        return *this;
    }
    ~data() { reset(); }

    locus_data handle() const noexcept { return h_; }
    std::size_t size() const noexcept { return count_; }

  private:
    void reset() noexcept {
        if (h_.bits) locus_data_free(h_); // freed with its runtime already: ignored
        h_ = locus_data{};
    }
    locus_data h_{};
    std::size_t count_ = 0;
};

// One declared access: build them with read, write, read_write and the weak_ ones.
struct access {
    locus_access raw;
};
template <class T> access read(const data<T> &d) { return {{d.handle(), LOCUS_READ, 0, 0}}; }
// Elements [start, end) only.
template <class T> access read(const data<T> &d, std::size_t start, std::size_t end) {
    return {{d.handle(), LOCUS_READ, start, end}};
}
template <class T> access write(const data<T> &d) { return {{d.handle(), LOCUS_WRITE, 0, 0}}; }
template <class T> access read_write(const data<T> &d) {
    return {{d.handle(), LOCUS_READ_WRITE, 0, 0}};
}
template <class T> access weak_read(const data<T> &d) {
    return {{d.handle(), LOCUS_WEAK_READ, 0, 0}};
}
template <class T> access weak_write(const data<T> &d) {
    return {{d.handle(), LOCUS_WEAK_WRITE, 0, 0}};
}
template <class T> access weak_read_write(const data<T> &d) {
    return {{d.handle(), LOCUS_WEAK_READ_WRITE, 0, 0}};
}

// A body's views, in declaration order.
class views {
  public:
    views(const locus_view *v, std::size_t n) : v_(v), n_(n) {}
    std::size_t size() const noexcept { return n_; }
    const locus_view &raw(std::size_t i) const {
        if (i >= n_)
            throw error(LOCUS_E_ARGUMENT, "view " + std::to_string(i) + " of " +
                                              std::to_string(n_) + " declared");
        return v_[i];
    }
    // View i as elements of T: `const T` for a read, T for a write or read-write.
    template <class T> span<T> get(std::size_t i) const {
        const locus_view &v = raw(i);
        if (v.elem_size != sizeof(T))
            throw error(LOCUS_E_SIZE, "view " + std::to_string(i) + " has " +
                                          std::to_string(v.elem_size) + "-byte elements, not " +
                                          std::to_string(sizeof(T)));
        if (!std::is_const<T>::value && v.mode == LOCUS_READ)
            throw error(LOCUS_E_ARGUMENT,
                        "view " + std::to_string(i) + " is read-only: take it as const");
        return span<T>(static_cast<T *>(v.ptr), v.count);
    }

  private:
    const locus_view *v_;
    std::size_t n_;
};

// ---- teams ----

// A team: tasks placed as a unit on a set of nodes (runtime::team, runtime::spread);
// the handle, freed on destruction. A task spawned with hints().in(team) joins it, and
// so do its children; data attached to it (runtime::attach_team) move with it
// (runtime::move_team).
class team {
  public:
    team() = default;
    // Takes ownership of a handle.
    explicit team(locus_team handle) : h_(handle) {}
    team(const team &) = delete;
    team &operator=(const team &) = delete;
    team(team &&o) noexcept : h_(o.h_) { o.h_ = locus_team{}; }
    team &operator=(team &&o) noexcept {
        std::swap(h_, o.h_);
        return *this;
    }
    ~team() {
        if (h_.bits) locus_team_free(h_); // freed with its runtime already: ignored
    }
    // Only the team's nodes run its tasks spawned from now on (or, false, others may
    // steal them: the default).
    void set_strict(bool strict) { check(locus_team_set_strict(h_, strict)); }
    // Its nodes, in the order its tasks are dealt to them.
    std::vector<std::size_t> nodes() const {
        std::size_t n = 0;
        locus_status s = locus_team_nodes(h_, nullptr, 0, &n);
        if (s != LOCUS_E_SIZE) check(s);
        std::vector<std::size_t> out(n);
        check(locus_team_nodes(h_, out.data(), out.size(), &n));
        return out;
    }
    // How many data are attached to it.
    std::size_t attached() const {
        std::size_t n = 0;
        check(locus_team_attached(h_, &n));
        return n;
    }
    locus_team handle() const noexcept { return h_; }

  private:
    locus_team h_{};
};

// Hints of a task: cost estimate, affinity and team.
struct hints {
    std::uint64_t cost_ns = 0;
    locus_affinity affinity = LOCUS_AFFINITY_NONE;
    std::size_t index = 0;       // worker or node
    locus_data datum{};          // for LOCUS_AFFINITY_DATA
    bool strict = false;
    locus_team team{};           // the team the task joins (none: its parent's)
    static hints worker(std::size_t w, bool strict = false) {
        hints h;
        h.affinity = LOCUS_AFFINITY_WORKER;
        h.index = w;
        h.strict = strict;
        return h;
    }
    static hints node(std::size_t n, bool strict = false) {
        hints h;
        h.affinity = LOCUS_AFFINITY_NODE;
        h.index = n;
        h.strict = strict;
        return h;
    }
    template <class T> static hints near(const data<T> &d, bool strict = false) {
        hints h;
        h.affinity = LOCUS_AFFINITY_DATA;
        h.datum = d.handle();
        h.strict = strict;
        return h;
    }
    hints &cost(std::uint64_t ns) {
        cost_ns = ns;
        return *this;
    }
    // The task joins team `t` (which must outlive the spawn call only).
    hints &in(const locus::team &t) {
        team = t.handle();
        return *this;
    }
};

namespace detail {
// Runs a body, turning an exception into a failed task with its message.
template <class F>
std::int32_t call_body(locus_ctx ctx, F &&f) noexcept {
    try {
        f();
        return 0;
    } catch (const std::exception &e) {
        locus_ctx_fail(ctx, e.what());
    } catch (...) {
        locus_ctx_fail(ctx, "a C++ exception of unknown type");
    }
    return -1;
}

// A task named `name` declaring `raw` (which must outlive its spawn), whose body is a
// heap copy of `body` that `trampoline` calls and that is deleted once, when Locus is
// done with it (also if the spawn fails).
template <class F>
locus_task boxed_task(const std::string &name, const std::vector<locus_access> &raw, F &&body,
                      locus_task_fn trampoline) {
    using Fn = typename std::decay<F>::type;
    locus_task t{};
    t.name = name.c_str();
    t.body = trampoline;
    t.arg = new Fn(std::forward<F>(body));
    t.arg_free = [](void *arg) { delete static_cast<Fn *>(arg); };
    t.accesses = raw.data();
    t.naccesses = raw.size();
    return t;
}

// Calls the body `arg` (an `Fn`) with a `Ctx` made of the body's context and its views.
template <class Fn, class Ctx>
std::int32_t trampoline(locus_ctx c, const locus_view *v, std::size_t n, void *arg) {
    Fn *f = static_cast<Fn *>(arg);
    return call_body(c, [&] {
        Ctx ctx(c);
        (*f)(ctx, views(v, n));
    });
}

// The worker (`node`: its node) running the body of `c`.
inline std::size_t where(locus_ctx c, bool node) {
    std::size_t w = 0, n = 0;
    check(locus_ctx_where(c, &w, &n));
    return node ? n : w;
}

inline std::vector<locus_access> raw_accesses(std::initializer_list<access> accesses) {
    std::vector<locus_access> raw;
    raw.reserve(accesses.size());
    for (const access &a : accesses) raw.push_back(a.raw);
    return raw;
}
} // namespace detail

// What a body (or the control program) gets: spawn children, wait, data of its scope,
// migration tasks.
class context {
  public:
    explicit context(locus_ctx c) : c_(c) {}

    // Spawns a task whose body is `body(context &, views)`.
    template <class F>
    void spawn(const std::string &name, std::initializer_list<access> accesses, F &&body,
               const hints &h = hints()) {
        using Fn = typename std::decay<F>::type;
        std::vector<locus_access> raw = detail::raw_accesses(accesses);
        locus_task t =
            detail::boxed_task(name, raw, std::forward<F>(body), &detail::trampoline<Fn, context>);
        t.cost_ns = h.cost_ns;
        t.affinity = h.affinity;
        t.affinity_index = h.index;
        t.affinity_data = h.datum;
        t.affinity_strict = h.strict;
        t.team = h.team;
        check(locus_spawn(c_, &t));
    }

    // Waits for the children spawned so far (taskwait).
    void wait() { check(locus_wait(c_)); }

    // A datum in this body's scope, for its children's results.
    template <class T> locus::data<T> data(const std::string &name, std::size_t count) {
        locus_data h{};
        check(locus_ctx_data(c_, name.c_str(), sizeof(T), count, &h));
        return locus::data<T>(h);
    }

    // Waits for the children, then copies `d` as they left it.
    template <class T> std::vector<T> fetch(const locus::data<T> &d) {
        std::vector<T> out(d.size());
        check(locus_ctx_fetch(c_, d.handle(), out.data(), out.size()));
        return out;
    }

    std::size_t worker() const { return detail::where(c_, false); }
    std::size_t node() const { return detail::where(c_, true); }
    // Submits a migration task: in submission order, the shared datum's pages move
    // to `node` (locus_scope_migrate).
    template <class T> void migrate(const locus::data<T> &d, std::size_t node) {
        check(locus_scope_migrate(c_, d.handle(), node));
    }

    locus_ctx handle() const noexcept { return c_; }

  private:
    locus_ctx c_;
};

// ---- recorded graphs ----

// What a replayed body gets: its iteration (counting every iteration its graph has
// replayed) and where it runs.
class iteration {
  public:
    explicit iteration(locus_ctx c) : c_(c) {}
    std::uint64_t index() const {
        std::uint64_t i = 0;
        check(locus_ctx_iteration(c_, &i));
        return i;
    }
    std::size_t worker() const { return detail::where(c_, false); }
    std::size_t node() const { return detail::where(c_, true); }

  private:
    locus_ctx c_;
};

// Where runtime::record's program records tasks: nothing runs until runtime::replay.
class recorder {
  public:
    explicit recorder(locus_recorder r) : r_(r) {}

    // Records a task whose body is `body(iteration &, views)`, called once per replayed
    // iteration (the graph keeps it until it is destroyed).
    template <class F>
    void spawn(const std::string &name, std::initializer_list<access> accesses, F &&body) {
        using Fn = typename std::decay<F>::type;
        std::vector<locus_access> raw = detail::raw_accesses(accesses);
        // The body is deleted with the graph, or at once if the task is refused.
        locus_task t = detail::boxed_task(name, raw, std::forward<F>(body),
                                          &detail::trampoline<Fn, iteration>);
        check(locus_graph_spawn(r_, &t));
    }

  private:
    locus_recorder r_;
};

// A recorded graph (runtime::record), freed with its buffers when destroyed.
class graph {
  public:
    graph() = default;
    explicit graph(locus_graph g) : g_(g) {}
    graph(const graph &) = delete;
    graph &operator=(const graph &) = delete;
    graph(graph &&o) noexcept : g_(o.g_) { o.g_ = locus_graph{}; }
    graph &operator=(graph &&o) noexcept {
        std::swap(g_, o.g_);
        return *this;
    }
    ~graph() {
        if (g_.bits) locus_graph_free(g_);
    }
    locus_graph handle() const noexcept { return g_; }

  private:
    locus_graph g_{};
};

// ---- reports ----

class report {
  public:
    report() = default;
    explicit report(locus_report h) : h_(h) {}
    report(const report &) = delete;
    report &operator=(const report &) = delete;
    report(report &&o) noexcept : h_(o.h_) { o.h_ = locus_report{}; }
    report &operator=(report &&o) noexcept {
        std::swap(h_, o.h_);
        return *this;
    }
    ~report() {
        if (h_.bits) locus_report_free(h_);
    }
    // The whole report as JSON.
    std::string json() const {
        char *s = nullptr;
        check(locus_report_json(h_, &s));
        std::string out(s);
        locus_string_free(s);
        return out;
    }
    locus_figures figures() const {
        locus_figures f{};
        check(locus_report_figures(h_, &f));
        return f;
    }
    locus_report handle() const noexcept { return h_; }

  private:
    locus_report h_{};
};

// ---- runtime ----

class runtime {
  public:
    // `config` and `topology` as locus_runtime_create (nullptr: the defaults);
    // threads 0: one per CPU of the topology.
    explicit runtime(const char *config = nullptr, const char *topology = nullptr,
                     std::size_t threads = 0, const settings *s = nullptr) {
        check(locus_runtime_create(config, topology, threads, s ? s->handle() : locus_settings{},
                                   &h_));
    }
    runtime(const runtime &) = delete;
    runtime &operator=(const runtime &) = delete;
    runtime(runtime &&o) noexcept : h_(o.h_) { o.h_ = locus_runtime{}; }
    ~runtime() {
        if (h_.bits) locus_runtime_destroy(h_);
    }

    template <class T> locus::data<T> data(const std::string &name, std::size_t count) {
        locus_data h{};
        check(locus_data_create(h_, name.c_str(), sizeof(T), count, &h));
        return locus::data<T>(h);
    }
    template <class T> locus::data<T> data_from(const std::string &name, const std::vector<T> &v) {
        locus_data h{};
        check(locus_data_from(h_, name.c_str(), sizeof(T), v.size(), v.data(), &h));
        return locus::data<T>(h);
    }
    // Shared data placed by `policy` (`node` for LOCUS_POLICY_BIND); zeros if `init` is
    // empty.
    template <class T>
    locus::data<T> shared(const std::string &name, std::size_t count, locus_policy policy,
                          std::size_t node = 0, const std::vector<T> &init = {}) {
        if (!init.empty() && init.size() != count)
            throw error(LOCUS_E_SIZE, "shared datum `" + name + "`: " +
                                          std::to_string(init.size()) + " initial values for " +
                                          std::to_string(count) + " elements");
        locus_data h{};
        check(locus_data_shared(h_, name.c_str(), sizeof(T), count, policy, node,
                                init.empty() ? nullptr : init.data(), &h));
        return locus::data<T>(h);
    }
    template <class T> std::vector<T> fetch(const locus::data<T> &d) {
        std::vector<T> out(d.size());
        check(locus_fetch(h_, d.handle(), out.data(), out.size()));
        return out;
    }
    // The node of the datum's current contents, -1 if it has none yet.
    template <class T> std::int64_t node_of(const locus::data<T> &d) {
        std::int64_t n = -1;
        check(locus_node_of(h_, d.handle(), &n));
        return n;
    }

    // ---- memory (MaMI's API; the C functions say what each does) ----

    // Nanoseconds for a CPU of `from_node` to read (write) `bytes` of `data_node`'s
    // memory, and to migrate `bytes` in one call.
    double read_cost(std::uint64_t bytes, std::size_t data_node, std::size_t from_node) const {
        double ns = 0;
        check(locus_read_cost(h_, bytes, data_node, from_node, &ns));
        return ns;
    }
    double write_cost(std::uint64_t bytes, std::size_t data_node, std::size_t from_node) const {
        double ns = 0;
        check(locus_write_cost(h_, bytes, data_node, from_node, &ns));
        return ns;
    }
    double migration_cost(std::uint64_t bytes) const {
        double ns = 0;
        check(locus_migration_cost(h_, bytes, &ns));
        return ns;
    }
    // Free bytes of `node` (locus_free_memory).
    std::uint64_t free_memory(std::size_t node) const {
        std::uint64_t bytes = 0;
        check(locus_free_memory(h_, node, &bytes));
        return bytes;
    }
    // Pages and bytes migrated since the runtime was made, by reason.
    locus_migration_counts migrated() const {
        locus_migration_counts c{};
        check(locus_migrated(h_, &c));
        return c;
    }
    // Moves the datum's pages to `node` now; returns the pages moved. Between runs.
    template <class T> std::uint64_t migrate(const locus::data<T> &d, std::size_t node) {
        std::uint64_t pages = 0;
        check(locus_migrate(h_, d.handle(), node, &pages));
        return pages;
    }
    // The pages of elements [first, first + count) only.
    template <class T>
    std::uint64_t migrate_range(const locus::data<T> &d, std::size_t first, std::size_t count,
                                std::size_t node) {
        std::uint64_t pages = 0;
        check(locus_migrate_range(h_, d.handle(), first, count, node, &pages));
        return pages;
    }
    // Arms a shared datum's pages to move to their next toucher; returns the pages armed.
    template <class T> std::uint64_t migrate_on_next_touch(const locus::data<T> &d) {
        std::uint64_t pages = 0;
        check(locus_migrate_on_next_touch(h_, d.handle(), &pages));
        return pages;
    }

    // ---- teams and attached data (the C functions say what each does) ----

    // A team on `nodes`, in the order its tasks are dealt to them.
    locus::team team(const std::vector<std::size_t> &nodes) {
        locus_team t{};
        check(locus_team_create(h_, nodes.data(), nodes.size(), &t));
        return locus::team(t);
    }
    // One team per node with workers, in node order.
    std::vector<locus::team> spread() {
        std::size_t n = 0;
        locus_status s = locus_team_spread(h_, nullptr, 0, &n);
        if (s != LOCUS_E_SIZE) check(s);
        std::vector<locus_team> raw(n);
        check(locus_team_spread(h_, raw.data(), raw.size(), &n));
        std::vector<locus::team> out;
        out.reserve(n);
        for (locus_team t : raw) out.emplace_back(t);
        return out;
    }
    // Re-places `t` on `nodes` between runs, with its attached data if `take_data`;
    // returns the pages moved.
    std::uint64_t move_team(const locus::team &t, const std::vector<std::size_t> &nodes,
                            bool take_data) {
        std::uint64_t pages = 0;
        check(locus_team_move(h_, t.handle(), nodes.data(), nodes.size(), take_data, &pages));
        return pages;
    }
    // The placement policies treat `d` as its owner's data (nothing moves).
    template <class T> void attach_worker(const locus::data<T> &d, std::size_t worker) {
        check(locus_attach_worker(h_, d.handle(), worker));
    }
    template <class T> void attach_node(const locus::data<T> &d, std::size_t node) {
        check(locus_attach_node(h_, d.handle(), node));
    }
    template <class T> void attach_team(const locus::data<T> &d, const locus::team &t) {
        check(locus_attach_team(h_, d.handle(), t.handle()));
    }
    template <class T> void detach(const locus::data<T> &d) {
        check(locus_detach(h_, d.handle()));
    }

    std::size_t workers() const {
        std::size_t w = 0;
        check(locus_runtime_size(h_, &w, nullptr));
        return w;
    }
    std::size_t nodes() const {
        std::size_t n = 0;
        check(locus_runtime_size(h_, nullptr, &n));
        return n;
    }

    // Runs `root(context &)` as the control program; returns the run's report, or
    // throws locus::error (LOCUS_E_RUN_FAILED naming the task) if the run failed.
    template <class F> locus::report run(F &&root) {
        using Fn = typename std::remove_reference<F>::type;
        locus_report r{};
        locus_status s = locus_run(h_, &root_trampoline<Fn>, &root, &r);
        locus::report rep(r);
        check(s);
        return rep;
    }
    // Records `program(recorder &)` into a graph; nothing runs. Throws locus::error
    // with the first refused task, or if the program throws.
    template <class F> locus::graph record(const std::string &name, F &&program) {
        using Fn = typename std::remove_reference<F>::type;
        locus_graph g{};
        check(locus_graph_record(h_, name.c_str(), &record_trampoline<Fn>, &program, &g));
        return locus::graph(g);
    }

    // Replays `g` `iterations` times as one run; returns its report, or throws
    // locus::error (LOCUS_E_STATE for a graph whose data changed since it last ran,
    // LOCUS_E_RUN_FAILED naming a failed task).
    locus::report replay(const locus::graph &g, std::uint64_t iterations) {
        locus_report r{};
        locus_status s = locus_graph_replay(h_, g.handle(), iterations, &r);
        locus::report rep(r);
        check(s);
        return rep;
    }

    locus_runtime handle() const noexcept { return h_; }

  private:
    template <class Fn> static std::int32_t record_trampoline(locus_recorder r, void *arg) {
        try {
            recorder rec(r);
            (*static_cast<Fn *>(arg))(rec);
            return 0;
        } catch (...) {
            return -1;
        }
    }
    template <class Fn>
    static std::int32_t root_trampoline(locus_ctx c, const locus_view *, std::size_t, void *arg) {
        Fn *f = static_cast<Fn *>(arg);
        return detail::call_body(c, [&] {
            context ctx(c);
            (*f)(ctx);
        });
    }
    locus_runtime h_{};
};

} // namespace locus

#endif // LOCUS_HPP
