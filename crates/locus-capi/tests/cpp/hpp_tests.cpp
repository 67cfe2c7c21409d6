// The C++ wrapper's tests: exceptions from error codes, RAII handles that free what
// they hold, typed views checked against the datum, lambdas as bodies and an exception
// in a body failing the run with its message, the memory API, and teams and attached
// data. Ends with "N passed, N failed".
#include <locus.hpp>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

static int failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                              \
        }                                                                            \
    } while (0)

// `f` throws locus::error with `status` and a message containing `needle`.
template <class F> static void expect_error(F f, locus_status status, const char *needle) {
    try {
        f();
        std::fprintf(stderr, "no exception, expected %s\n", locus_status_name(status));
        failures++;
    } catch (const locus::error &e) {
        if (e.status() != status || !std::strstr(e.what(), needle)) {
            std::fprintf(stderr, "got \"%s\", expected %s naming \"%s\"\n", e.what(),
                         locus_status_name(status), needle);
            failures++;
        }
    }
}

static size_t live() {
    size_t n = 0;
    locus::check(locus_live_handles(&n));
    return n;
}

static void errors_are_exceptions() {
    expect_error([] { locus::runtime rt("dsa", "2x1"); }, LOCUS_E_CONFIG, "`dsa`");
    expect_error([] { locus::settings().set("windw", "1"); }, LOCUS_E_ARGUMENT, "windw");
    locus::runtime rt("dfa", "2x1", 2);
    expect_error([&] { rt.data<double>("zero", 1ull << 62); }, LOCUS_E_SIZE, "zero");
    auto x = rt.data<double>("x", 4);
    locus::runtime other("dfa", "2x1", 2);
    expect_error([&] { other.fetch(x); }, LOCUS_E_WRONG_RUNTIME, "`x`");
    expect_error([&] { rt.shared<int>("s", 4, LOCUS_POLICY_INTERLEAVE, 0, {1, 2}); },
                 LOCUS_E_SIZE, "2 initial values");
}

static void raii_frees_everything() {
    size_t before = live();
    {
        locus::settings s;
        s.set("window", "8");
        locus::runtime rt("dsa-opt", "2x1", 2, &s);
        auto x = rt.data_from<int>("x", {1, 2, 3});
        auto moved = std::move(x);
        CHECK(live() == before + 3);
        locus::report r = rt.run([&](locus::context &ctx) {
            ctx.spawn("inc", {locus::read_write(moved)}, [](locus::context &, locus::views v) {
                for (int &e : v.get<int>(0)) e += 1;
            });
        });
        CHECK(r.figures().tasks == 1);
        CHECK(r.json().find("\"tasks\":1") != std::string::npos);
        CHECK((rt.fetch(moved) == std::vector<int>{2, 3, 4}));
        CHECK(rt.node_of(moved) >= 0);
    }
    CHECK(live() == before);
}

static void body_exceptions_fail_the_run() {
    locus::runtime rt("dfa", "2x1", 2);
    auto x = rt.data<double>("x", 4);
    expect_error(
        [&] {
            rt.run([&](locus::context &ctx) {
                ctx.spawn("thrower", {locus::write(x)}, [](locus::context &, locus::views) {
                    throw std::runtime_error("no good input");
                });
            });
        },
        LOCUS_E_RUN_FAILED, "no good input");
    // A view taken with the wrong element type, or a read taken as writable.
    expect_error(
        [&] {
            rt.run([&](locus::context &ctx) {
                ctx.spawn("wrong-type", {locus::write(x)},
                          [](locus::context &, locus::views v) { v.get<float>(0); });
            });
        },
        LOCUS_E_RUN_FAILED, "8-byte elements, not 4");
    expect_error(
        [&] {
            rt.run([&](locus::context &ctx) {
                ctx.spawn("writes-a-read", {locus::read(x)},
                          [](locus::context &, locus::views v) { v.get<double>(0); });
            });
        },
        LOCUS_E_RUN_FAILED, "read-only");
    // A throwing root.
    expect_error([&] { rt.run([](locus::context &) { throw std::logic_error("root bug"); }); },
                 LOCUS_E_RUN_FAILED, "root bug");
    // The datum taken as the wrong type.
    locus_data h{};
    locus::check(locus_data_create(rt.handle(), "h", 8, 2, &h));
    expect_error([&] { locus::data<int> wrong(h); }, LOCUS_E_SIZE, "8-byte");
}

static void nested_and_hints() {
    locus::runtime rt("dfa", "2x1", 2);
    auto out = rt.data<long>("out", 1);
    rt.run([&](locus::context &ctx) {
        ctx.spawn("parent", {locus::write(out)},
                  [](locus::context &c, locus::views v) {
                      auto half = c.data<long>("half", 1);
                      c.spawn("child", {locus::write(half)},
                              [](locus::context &cc, locus::views w) {
                                  w.get<long>(0)[0] = 20 + static_cast<long>(cc.node() < 2);
                              },
                              locus::hints::node(1, true).cost(100));
                      v.get<long>(0)[0] = 2 * c.fetch(half)[0];
                  },
                  locus::hints::near(out));
    });
    CHECK(rt.fetch(out)[0] == 42);
}

static void memory_api() {
    locus::settings s;
    s.set("node_limit", "1048576");
    locus::runtime rt("dsa-opt", "4x1", 0, &s);
    CHECK(rt.migration_cost(0) == 0.0);
    CHECK(rt.read_cost(64, 1, 0) > rt.read_cost(64, 0, 0));
    CHECK(rt.write_cost(64, 0, 0) > 0);
    expect_error([&] { rt.read_cost(64, 4, 0); }, LOCUS_E_CONFIG, "node 4");
    CHECK(rt.free_memory(3) == 1u << 20);
    // 8 pages interleaved over 4 nodes; 6 move to node 3.
    auto v = rt.shared<double>("v", 4096, LOCUS_POLICY_INTERLEAVE);
    CHECK(rt.migrate(v, 3) == 6);
    CHECK(rt.free_memory(3) == (1u << 20) - 8 * 4096);
    CHECK(rt.migrate_range(v, 0, 512, 0) == 1);
    CHECK(rt.migrate_on_next_touch(v) == 8);
    expect_error([&] { rt.free_memory(4); }, LOCUS_E_CONFIG, "node 4");
    expect_error([&] { rt.migrate_range(v, 4000, 100, 0); }, LOCUS_E_SIZE, "4096 elements");
    rt.run([&](locus::context &ctx) {
        // Its first toucher is on node 2, then a migration task takes it to node 1.
        ctx.spawn("toucher", {locus::read_write(v)},
                  [](locus::context &, locus::views w) { w.get<double>(0)[0] = 1.5; },
                  locus::hints::node(2, true));
        ctx.migrate(v, 1);
        expect_error([&] { ctx.migrate(v, 9); }, LOCUS_E_DECLARATION, "node 9");
    });
    CHECK(rt.node_of(v) == 1);
    locus_migration_counts c = rt.migrated();
    CHECK(c.now_pages == 7 + 8 && c.next_touch_pages == 8);
    CHECK(rt.fetch(v)[0] == 1.5);
    auto x = rt.data<double>("x", 4);
    expect_error([&] { rt.migrate_on_next_touch(x); }, LOCUS_E_CONFIG, "versioned");
}

static void teams_and_attached_data() {
    locus::runtime rt("dsa-opt", "4x1");
    std::vector<locus::team> teams = rt.spread();
    CHECK(teams.size() == 4);
    std::vector<locus::data<long>> slots;
    for (int k = 0; k < 4; k++) slots.push_back(rt.data<long>("slot", 1));
    rt.run([&](locus::context &ctx) {
        for (std::size_t k = 0; k < 4; k++) {
            teams[k].set_strict(true);
            const locus::data<long> &slot = slots[k];
            // The leader's child joins the leader's team: it runs on node k.
            ctx.spawn("leader", {locus::weak_write(slot)},
                      [&slot](locus::context &c, locus::views) {
                          c.spawn("member", {locus::write(slot)},
                                  [](locus::context &cc, locus::views v) {
                                      v.get<long>(0)[0] = static_cast<long>(cc.node());
                                  });
                      },
                      locus::hints().in(teams[k]));
        }
    });
    for (int k = 0; k < 4; k++) CHECK(rt.fetch(slots[k])[0] == k);
    CHECK(teams[2].nodes() == std::vector<std::size_t>{2});
    // 8 pages on node 0 move with their team to node 3.
    auto v = rt.shared<double>("v", 4096, LOCUS_POLICY_BIND, 0);
    rt.attach_team(v, teams[0]);
    CHECK(teams[0].attached() == 1);
    CHECK(rt.move_team(teams[0], {3}, true) == 8);
    CHECK(rt.node_of(v) == 3);
    CHECK(teams[0].nodes() == std::vector<std::size_t>{3});
    rt.detach(v);
    CHECK(teams[0].attached() == 0);
    rt.attach_node(v, 1);
    rt.attach_worker(v, 2);
    locus::team pair = rt.team({3, 1});
    CHECK(pair.nodes() == (std::vector<std::size_t>{3, 1}));
    expect_error([&] { rt.team({}); }, LOCUS_E_CONFIG, "at least one node");
    expect_error([&] { rt.attach_node(v, 9); }, LOCUS_E_CONFIG, "node 9");
    locus::runtime other("dsa-opt", "2x1");
    expect_error([&] { other.move_team(pair, {0}, false); }, LOCUS_E_WRONG_RUNTIME,
                 "another runtime");
}

static void recorded_graphs() {
    locus::runtime rt("dsa-opt", "2x1", 2);
    auto x = rt.data_from<double>("x", {0, 0, 0});
    auto step = rt.data_from<double>("step", {1});
    {
        locus::graph g = rt.record("add", [&](locus::recorder &r) {
            r.spawn("add", {locus::read(step), locus::read_write(x)},
                    [](locus::iteration &it, locus::views v) {
                        double s = v.get<const double>(0)[0] + double(it.index());
                        for (double &e : v.get<double>(1)) e += s;
                    });
        });
        CHECK(rt.replay(g, 4).figures().tasks == 4);
        // 4 steps of 1 plus iterations 0 + 1 + 2 + 3.
        CHECK((rt.fetch(x) == std::vector<double>{10, 10, 10}));
        // Written outside the graph: the graph is stale, for good.
        rt.run([&](locus::context &ctx) {
            ctx.spawn("poke", {locus::write(x)}, [](locus::context &, locus::views v) {
                for (double &e : v.get<double>(0)) e = 0;
            });
        });
        expect_error([&] { rt.replay(g, 1); }, LOCUS_E_STATE, "written outside the graph");
    }
    // A body that throws fails the replay naming its task.
    locus::graph bad = rt.record("bad", [&](locus::recorder &r) {
        r.spawn("thrower", {locus::read_write(x)}, [](locus::iteration &, locus::views) {
            throw std::runtime_error("not this one");
        });
    });
    expect_error([&] { rt.replay(bad, 2); }, LOCUS_E_RUN_FAILED, "not this one");
    // A refused task fails the recording.
    expect_error(
        [&] {
            rt.record("weak", [&](locus::recorder &r) {
                r.spawn("weak", {locus::weak_read(x)}, [](locus::iteration &, locus::views) {});
            });
        },
        LOCUS_E_DECLARATION, "weak");
}

int main() {
    const std::pair<const char *, std::function<void()>> tests[] = {
        {"errors_are_exceptions", errors_are_exceptions},
        {"raii_frees_everything", raii_frees_everything},
        {"body_exceptions_fail_the_run", body_exceptions_fail_the_run},
        {"nested_and_hints", nested_and_hints},
        {"memory_api", memory_api},
        {"teams_and_attached_data", teams_and_attached_data},
        {"recorded_graphs", recorded_graphs},
    };
    int passed = 0, failed = 0;
    for (const auto &t : tests) {
        int before = failures;
        try {
            t.second();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "%s: unexpected exception: %s\n", t.first, e.what());
            failures++;
        }
        if (failures == before) {
            passed++;
        } else {
            failed++;
            std::fprintf(stderr, "FAILED: %s\n", t.first);
        }
    }
    if (live() != 0) {
        std::fprintf(stderr, "%zu live handles at the end\n", live());
        failed++;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
