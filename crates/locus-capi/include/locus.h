/*
 * locus.h: the C API of Locus, a NUMA-aware task-parallel dataflow runtime.
 *
 * Generated from crates/locus-capi by cbindgen: do not edit; change the Rust
 * sources and run `LOCUS_BLESS=1 cargo test -p locus-capi --test header`.
 *
 * Every function returns a locus_status (LOCUS_OK is 0); on failure
 * locus_last_error() names the bad value. Objects are handles (64-bit values, the
 * all-zero value is null), checked on every call: a null, freed or made-up handle,
 * or one of another runtime, is an error code, never a crash.
 *
 * A task body must return (0 on success): no longjmp out of it, no C++ exception
 * through it (locus.hpp catches them). It may write only its writable views, within
 * their counts, and only until it returns.
 */

#ifndef LOCUS_H
#define LOCUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * What a call of the C API did. `LOCUS_OK` is zero; every failure is non-zero and
 * leaves a message in `locus_last_error`.
 */
typedef enum locus_status {
  /**
   * Success.
   */
  LOCUS_OK = 0,
  /**
   * A pointer argument that must not be NULL was NULL.
   */
  LOCUS_E_NULL = 1,
  /**
   * A handle that is null, freed, or was never made by this library.
   */
  LOCUS_E_HANDLE = 2,
  /**
   * A handle of another runtime than the one the call is about.
   */
  LOCUS_E_WRONG_RUNTIME = 3,
  /**
   * An invalid argument: an unknown name, mode, policy or setting, a string that is
   * not UTF-8.
   */
  LOCUS_E_ARGUMENT = 4,
  /**
   * A bad size: a zero element size, a count that does not match the datum, a
   * range out of bounds or on an access other than a read, sizes that overflow.
   */
  LOCUS_E_SIZE = 5,
  /**
   * The runtime could not be built: configuration, topology, worker threads.
   */
  LOCUS_E_CONFIG = 6,
  /**
   * The runtime refused a task's declaration (a datum declared twice with a write,
   * a wait for children that need the task's own output, ...).
   */
  LOCUS_E_DECLARATION = 7,
  /**
   * The run failed: a task body returned non-zero, a declaration was refused, or a
   * buffer could not be allocated. The report of the failed run is still given.
   */
  LOCUS_E_RUN_FAILED = 8,
  /**
   * Memory could not be allocated.
   */
  LOCUS_E_OUT_OF_MEMORY = 9,
  /**
   * A task context used outside the body it was given to (after the body returned,
   * or on another thread), or an operation the context cannot do.
   */
  LOCUS_E_CONTEXT = 10,
  /**
   * The call is not allowed now: a run inside a task, a fetch of data being
   * written, a datum poisoned by a failed in-place writer.
   */
  LOCUS_E_STATE = 11,
  /**
   * A bug in Locus (a caught panic); the message says where.
   */
  LOCUS_E_INTERNAL = 12
} locus_status;

/**
 * Access modes (`locus_access::mode`).
 */
typedef enum locus_mode {
  /**
   * Reads (a range of) the datum: the task waits for its last writer.
   */
  LOCUS_READ = 1,
  /**
   * Writes the whole datum: a new version whose initial contents are unspecified.
   */
  LOCUS_WRITE = 2,
  /**
   * Reads and writes the whole datum: a new version starting as a copy of the
   * current one.
   */
  LOCUS_READ_WRITE = 3,
  /**
   * Weak read: the task only hands the datum to its children (view NULL).
   */
  LOCUS_WEAK_READ = 5,
  /**
   * Weak write: as weak read, for children that write it.
   */
  LOCUS_WEAK_WRITE = 6,
  /**
   * Weak read-write.
   */
  LOCUS_WEAK_READ_WRITE = 7
} locus_mode;

/**
 * Placement policies of shared data (`locus_data_shared`).
 */
typedef enum locus_policy {
  /**
   * Round-robin over all nodes, page by page.
   */
  LOCUS_POLICY_INTERLEAVE = 0,
  /**
   * Every page on one node (the `node` argument).
   */
  LOCUS_POLICY_BIND = 1,
  /**
   * One contiguous block of pages per node, in node order.
   */
  LOCUS_POLICY_BLOCKED = 2,
  /**
   * Each page on the node of the first task that touches it.
   */
  LOCUS_POLICY_FIRST_TOUCH = 3
} locus_policy;

/**
 * Affinity kinds (`locus_task::affinity`), paper 3's hints.
 */
typedef enum locus_affinity {
  /**
   * No affinity.
   */
  LOCUS_AFFINITY_NONE = 0,
  /**
   * To worker `affinity_index` (wraps modulo the number of workers).
   */
  LOCUS_AFFINITY_WORKER = 1,
  /**
   * To node `affinity_index` (wraps modulo the number of nodes).
   */
  LOCUS_AFFINITY_NODE = 2,
  /**
   * To the node holding `affinity_data` when the task becomes ready.
   */
  LOCUS_AFFINITY_DATA = 3
} locus_affinity;

/**
 * How to cut a datum (`locus_partition_spec::kind`).
 */
typedef enum locus_partition_kind {
  /**
   * Consecutive parts of `block_len` elements, the last one shorter.
   */
  LOCUS_PARTITION_BLOCKS = 0,
  /**
   * The `range_count` ranges at `ranges`, in that order (they may overlap).
   */
  LOCUS_PARTITION_RANGES = 1,
  /**
   * The `tile_rows x tile_cols` tiles of a row-major `rows x cols` matrix, in
   * row-major order of tiles; a tile's view holds its elements row after row.
   */
  LOCUS_PARTITION_TILES = 2
} locus_partition_kind;

/**
 * A runtime: pinned workers over a topology with a scheduling configuration. Made by
 * `locus_runtime_create`, freed by `locus_runtime_destroy`. The all-zero value is
 * the null handle.
 */
typedef struct locus_runtime {
  /**
   * Opaque: a slot and its generation in Locus's table of runtimes.
   */
  uint64_t bits;
} locus_runtime;

/**
 * A datum: a logical array of `count` elements of `elem_size` bytes, versioned or
 * shared. Made by `locus_data_create`, `locus_data_from`, `locus_data_shared` or, in a
 * task, `locus_ctx_data`; freed by `locus_data_free` or with its runtime. The
 * all-zero value is the null handle.
 */
typedef struct locus_data {
  /**
   * Opaque: a slot and its generation in Locus's table of data.
   */
  uint64_t bits;
} locus_data;

/**
 * Pages (4 KiB) and bytes a runtime has migrated since it was made, by reason
 * (`locus_migrated`).
 */
typedef struct locus_migration_counts {
  /**
   * Moved by `locus_migrate`, `locus_migrate_range`, migration tasks
   * (`locus_scope_migrate`) and the `now` migration setting.
   */
  uint64_t now_pages;
  /**
   * `now_pages` in bytes.
   */
  uint64_t now_bytes;
  /**
   * Moved on next touch (`locus_migrate_on_next_touch`, the `next-touch` setting).
   */
  uint64_t next_touch_pages;
  /**
   * `next_touch_pages` in bytes.
   */
  uint64_t next_touch_bytes;
  /**
   * Moved by the `auto` migration setting.
   */
  uint64_t auto_pages;
  /**
   * `auto_pages` in bytes.
   */
  uint64_t auto_bytes;
} locus_migration_counts;

/**
 * The context of a running body: valid only inside that body, on its thread. The
 * all-zero value is the null handle.
 */
typedef struct locus_ctx {
  /**
   * Opaque: the token of the body's frame on its worker.
   */
  uint64_t bits;
} locus_ctx;

/**
 * A range of elements, `begin` included, `end` excluded.
 */
typedef struct locus_range {
  /**
   * First element.
   */
  size_t begin;
  /**
   * One past the last element.
   */
  size_t end;
} locus_range;

/**
 * A partition, in elements: `kind` (a `locus_partition_kind`) says which fields count.
 */
typedef struct locus_partition_spec {
  /**
   * A `locus_partition_kind`.
   */
  uint32_t kind;
  /**
   * `LOCUS_PARTITION_BLOCKS`: elements per part (at least 1).
   */
  size_t block_len;
  /**
   * `LOCUS_PARTITION_RANGES`: the ranges (NULL only when `range_count` is 0).
   */
  const struct locus_range *ranges;
  /**
   * `LOCUS_PARTITION_RANGES`: how many ranges.
   */
  size_t range_count;
  /**
   * `LOCUS_PARTITION_TILES`: rows of the matrix.
   */
  size_t rows;
  /**
   * `LOCUS_PARTITION_TILES`: columns of the matrix.
   */
  size_t cols;
  /**
   * `LOCUS_PARTITION_TILES`: rows of a tile (must divide `rows`).
   */
  size_t tile_rows;
  /**
   * `LOCUS_PARTITION_TILES`: columns of a tile (must divide `cols`).
   */
  size_t tile_cols;
} locus_partition_spec;

/**
 * The report of one run, from `locus_run`; freed by
 * `locus_report_free`. The all-zero value is the null handle.
 */
typedef struct locus_report {
  /**
   * Opaque: a slot and its generation in Locus's table of reports.
   */
  uint64_t bits;
} locus_report;

/**
 * The main figures of a report (every field of the JSON report is described in
 * Locus's `docs/guide.md`, "Reading the report").
 */
typedef struct locus_figures {
  /**
   * Wall-clock time of the run, seconds.
   */
  double wall_s;
  /**
   * Tasks run (the root excluded).
   */
  uint64_t tasks;
  /**
   * Bytes read by tasks from buffers on their own node.
   */
  uint64_t read_local_bytes;
  /**
   * Bytes read from buffers on other nodes.
   */
  uint64_t read_remote_bytes;
  /**
   * Bytes written to buffers on the task's own node.
   */
  uint64_t write_local_bytes;
  /**
   * Bytes written to buffers on other nodes.
   */
  uint64_t write_remote_bytes;
  /**
   * Local bytes over all bytes accessed (paper 1's R_loc^RT), 0 to 1.
   */
  double r_loc_rt;
  /**
   * Successful steals from a worker of the same node.
   */
  uint64_t steals_same_node;
  /**
   * Successful steals from a worker of another node.
   */
  uint64_t steals_remote;
  /**
   * Peak bytes in use in the per-node pools.
   */
  uint64_t peak_bytes;
} locus_figures;

/**
 * The builder options of a runtime beyond configuration, topology and threads, set
 * by name with `locus_settings_set`. The all-zero value is the null handle.
 */
typedef struct locus_settings {
  /**
   * Opaque: a slot and its generation in Locus's table of settings.
   */
  uint64_t bits;
} locus_settings;

/**
 * What a body sees of one declared access.
 */
typedef struct locus_view {
  /**
   * The elements (the declared range of a read); NULL for a weak access, which the
   * task only hands to its children. Aligned for the element type. Valid until the
   * body returns; writable only for `LOCUS_WRITE` and `LOCUS_READ_WRITE`.
   */
  void *ptr;
  /**
   * Number of elements.
   */
  size_t count;
  /**
   * Bytes per element.
   */
  size_t elem_size;
  /**
   * The access mode declared (a `locus_mode`).
   */
  uint32_t mode;
} locus_view;

/**
 * One declared access: a datum, a mode and, for reads, a range of elements
 * `[start, end)`; `start == end == 0` means the whole datum (required for the other
 * modes).
 */
typedef struct locus_access {
  /**
   * The datum.
   */
  struct locus_data data;
  /**
   * A `locus_mode`.
   */
  uint32_t mode;
  /**
   * First element of a read's range.
   */
  size_t start;
  /**
   * One past the last element of a read's range.
   */
  size_t end;
} locus_access;

/**
 * A team: tasks placed as a unit on a set of nodes. Made by `locus_team_create` or
 * `locus_team_spread`, freed by `locus_team_free` or with its runtime. The all-zero
 * value is the null handle (in `locus_task::team`: no team).
 */
typedef struct locus_team {
  /**
   * Opaque: a slot and its generation in Locus's table of teams.
   */
  uint64_t bits;
} locus_team;

/**
 * A task to spawn. Zero-initialise it, then set what you need: `body` is required;
 * a NULL `name` is `"task"`.
 */
typedef struct locus_task {
  /**
   * The task's name in reports, traces and errors (copied).
   */
  const char *name;
  /**
   * The body.
   */
  int32_t (*body)(struct locus_ctx ctx, const struct locus_view *views, size_t nviews, void *arg);
  /**
   * The argument passed to the body.
   */
  void *arg;
  /**
   * 0: `arg` is borrowed (passed as is; it must stay valid until the task is done
   * and be usable from any thread). Otherwise `arg` points to `arg_size` bytes that
   * are copied (16-byte aligned) and the body gets the copy.
   */
  size_t arg_size;
  /**
   * If set, called exactly once with the body's argument (the copy, when copied)
   * once the task is done with it, or when `locus_spawn` fails or the task is
   * dropped unrun after its run failed.
   */
  void (*arg_free)(void *arg);
  /**
   * The accesses, in the order of the body's views.
   */
  const struct locus_access *accesses;
  /**
   * Number of accesses. A task of none is a control task: its children go to its
   * parent's scope and it cannot wait for them (`locus_wait` and `locus_ctx_fetch`
   * are `LOCUS_E_DECLARATION`); give it an access, a weak read being enough, to
   * wait for its children.
   */
  size_t naccesses;
  /**
   * Estimated cost of the body in nanoseconds (0: none).
   */
  uint64_t cost_ns;
  /**
   * A `locus_affinity`.
   */
  uint32_t affinity;
  /**
   * Only the affinity's domain may run the task (otherwise others may steal it).
   */
  bool affinity_strict;
  /**
   * Worker or node index for `LOCUS_AFFINITY_WORKER` and `LOCUS_AFFINITY_NODE`.
   */
  size_t affinity_index;
  /**
   * The datum for `LOCUS_AFFINITY_DATA`.
   */
  struct locus_data affinity_data;
  /**
   * A team for the task to join (`locus_team_create`), with every task its body
   * spawns at any depth unless one names another team. Without an affinity of its
   * own, a member runs on one of the team's nodes. The null handle (zero): no team
   * of its own, the task stays in its parent's, if any.
   */
  struct locus_team team;
} locus_task;

/**
 * The recording a program of `locus_graph_record` records into, valid until the
 * program returns, on its thread.
 */
typedef struct locus_recorder {
  /**
   * Opaque: names the recording in progress.
   */
  uint64_t bits;
} locus_recorder;

/**
 * A recorded graph (`locus_graph_record`), freed by `locus_graph_free`. The all-zero
 * value is the null handle.
 */
typedef struct locus_graph {
  /**
   * Opaque: a slot and its generation in Locus's table of graphs.
   */
  uint64_t bits;
} locus_graph;

/**
 * A task body (and the run's root): returns 0 on success; anything else fails the run,
 * naming the task (and the message given to `locus_ctx_fail`, if any). `views`
 * holds one view per declared access, in declaration order; `arg` is the task's
 * argument (its copy when `arg_size` was not 0).
 */
typedef int32_t (*locus_task_fn)(struct locus_ctx ctx,
                                 const struct locus_view *views,
                                 size_t nviews,
                                 void *arg);

/**
 * Frees a task's argument (`locus_task::arg_free`).
 */
typedef void (*locus_free_fn)(void *arg);

#ifdef __cplusplus
extern "C" {
#endif /* __cplusplus */

/**
 * Writes to `*count` the number of live handles of every kind (runtimes, data,
 * teams, reports, settings, graphs): a program that freed everything it made sees 0, which makes
 * handle leaks easy to test for.
 *
 * # Safety
 *
 * `count` is NULL (an error) or valid for a write.
 */
enum locus_status locus_live_handles(size_t *count);

/**
 * The version of the library, e.g. `"0.1.0"`: a static string, do not free it.
 */
const char *locus_version(void);

/**
 * Makes a datum of `count` elements of `elem_size` bytes, zero until a task writes
 * it (versioned; shared under `shm-base`).
 *
 * # Safety
 *
 * `name` is NULL (an error) or NUL-terminated; `out` is NULL (an error) or valid for
 * a write.
 */
enum locus_status locus_data_create(struct locus_runtime runtime,
                                    const char *name,
                                    size_t elem_size,
                                    size_t count,
                                    struct locus_data *out);

/**
 * Makes a datum holding a copy of `count` elements of `elem_size` bytes at `values`.
 *
 * # Safety
 *
 * `name` is NULL (an error) or NUL-terminated; `values` is valid for reads of
 * `elem_size * count` bytes (NULL is an error unless that is 0); `out` is NULL (an
 * error) or valid for a write.
 */
enum locus_status locus_data_from(struct locus_runtime runtime,
                                  const char *name,
                                  size_t elem_size,
                                  size_t count,
                                  const void *values,
                                  struct locus_data *out);

/**
 * Makes a *shared* datum: one buffer placed now by `policy` (a `locus_policy`; `node`
 * is the node for `LOCUS_POLICY_BIND` and ignored otherwise) and updated in place by
 * the tasks that write it. It holds a copy of `values`, or zeros if `values` is NULL.
 * A bad policy is `LOCUS_E_ARGUMENT`; a node outside the topology `LOCUS_E_CONFIG`; a
 * size larger than the machine's memory (RAM and swap) `LOCUS_E_OUT_OF_MEMORY` at
 * once, before anything is mapped or touched.
 *
 * # Safety
 *
 * As `locus_data_from`, with `values` allowed to be NULL.
 */
enum locus_status locus_data_shared(struct locus_runtime runtime,
                                    const char *name,
                                    size_t elem_size,
                                    size_t count,
                                    uint32_t policy,
                                    size_t node,
                                    const void *values,
                                    struct locus_data *out);

/**
 * Makes a *registered* datum: the caller's `count` elements of `elem_size` bytes at
 * `ptr` become a shared datum without a copy (its pages stay where they are; on real
 * NUMA nodes Locus reads their nodes from the kernel), updated in place by the tasks
 * that write it. `release(ptr)` is called exactly once, when the last handle and task
 * let go of the datum, or before this function returns if it fails; with `release`
 * NULL the caller frees the memory itself, after freeing every handle of the datum
 * and destroying the runtime. `ptr` must be aligned for the C type of the elements.
 * Memory that overlaps a datum registered and alive is refused (`LOCUS_E_ARGUMENT`),
 * and then `release` is not called: the memory is the other datum's.
 *
 * # Safety
 *
 * `name` is NULL (an error) or NUL-terminated; `ptr` is valid for reads and writes of
 * `elem_size * count` bytes, which nothing but Locus touches until `release` is called
 * (or, without `release`, until the runtime is destroyed); `out` is NULL (an error)
 * or valid for a write.
 */
enum locus_status locus_data_register(struct locus_runtime runtime,
                                      const char *name,
                                      size_t elem_size,
                                      size_t count,
                                      void *ptr,
                                      void (*release)(void *ptr),
                                      struct locus_data *out);

/**
 * Frees a datum's handle. Tasks already submitted that declare it still run; its
 * memory goes back once the last of them is done. A datum attached to an owner
 * (`locus_attach_*`) is detached.
 */
enum locus_status locus_data_free(struct locus_data data);

/**
 * The datum's element size and count (either pointer may be NULL).
 *
 * # Safety
 *
 * `elem_size` and `count` are NULL or valid for a write.
 */
enum locus_status locus_data_size(struct locus_data data, size_t *elem_size, size_t *count);

/**
 * Copies the datum's current contents, `count` elements (which must be the datum's
 * count), to `buf`. `LOCUS_E_STATE` while a run is in progress on another thread
 * (rather than waiting for it: one of its bodies may be waiting for this thread);
 * from inside a task it is `LOCUS_E_DECLARATION` (use `locus_ctx_fetch` for
 * children's results).
 *
 * # Safety
 *
 * `buf` is valid for writes of `elem_size * count` bytes (NULL is an error unless
 * that is 0).
 */
enum locus_status locus_fetch(struct locus_runtime runtime,
                              struct locus_data data,
                              void *buf,
                              size_t count);

/**
 * Writes to `*node` the node holding the datum's current contents (for shared data,
 * the node holding most of its pages), or -1 while it has no memory (a versioned
 * datum never written). `LOCUS_E_STATE` while a run is in progress on another
 * thread (rather than waiting for it: one of its bodies may be waiting for this
 * thread); from inside a task it is `LOCUS_E_DECLARATION`.
 *
 * # Safety
 *
 * `node` is NULL (an error) or valid for a write.
 */
enum locus_status locus_node_of(struct locus_runtime runtime,
                                struct locus_data data,
                                int64_t *node);

/**
 * Writes to `*ns` the cost in nanoseconds for a CPU of `from_node` to read `bytes`
 * bytes of `data_node`'s memory: one miss per 64-byte line at the topology's local
 * read latency times its read factor (MaMI's `mami_cost_for_read_access`). A node
 * outside the topology is `LOCUS_E_CONFIG`.
 *
 * # Safety
 *
 * `ns` is NULL (an error) or valid for a write.
 */
enum locus_status locus_read_cost(struct locus_runtime runtime,
                                  uint64_t bytes,
                                  size_t data_node,
                                  size_t from_node,
                                  double *ns);

/**
 * As `locus_read_cost`, for writes (the write latency and factors).
 *
 * # Safety
 *
 * `ns` is NULL (an error) or valid for a write.
 */
enum locus_status locus_write_cost(struct locus_runtime runtime,
                                   uint64_t bytes,
                                   size_t data_node,
                                   size_t from_node,
                                   double *ns);

/**
 * Writes to `*ns` the cost in nanoseconds of migrating `bytes` bytes in one call:
 * `a + b x pages`, the topology's migration model.
 *
 * # Safety
 *
 * `ns` is NULL (an error) or valid for a write.
 */
enum locus_status locus_migration_cost(struct locus_runtime runtime, uint64_t bytes, double *ns);

/**
 * Writes to `*bytes` the free memory of `node`: on the host's real nodes the kernel's
 * `MemFree` for the node; on virtual nodes (`2x1`, presets) the `node_limit` setting
 * minus what Locus holds there (task buffers and shared pages), or without a limit
 * the node's share of the host's free memory (the Rust guide's "Memory" says how).
 * A node outside the topology is `LOCUS_E_CONFIG`.
 *
 * # Safety
 *
 * `bytes` is NULL (an error) or valid for a write.
 */
enum locus_status locus_free_memory(struct locus_runtime runtime, size_t node, uint64_t *bytes);

/**
 * Writes to `*counts` the pages (and bytes) the runtime has migrated since it was
 * made, by reason.
 *
 * # Safety
 *
 * `counts` is NULL (an error) or valid for a write.
 */
enum locus_status locus_migrated(struct locus_runtime runtime,
                                 struct locus_migration_counts *counts);

/**
 * Moves every page of the datum to `node` now (MaMI's `mami_migrate_on_node`) and
 * writes the pages moved to `*pages` (4 KiB each; `pages` may be NULL). A shared
 * datum's pages move in place; a versioned one is copied into a block of `node`'s
 * pool, which becomes its current version. Between runs only: from a body, or while
 * another thread runs a program on the runtime, `LOCUS_E_STATE`. A node outside the
 * topology is `LOCUS_E_CONFIG`; a datum of another runtime `LOCUS_E_WRONG_RUNTIME`; a
 * node limit the pages do not fit under `LOCUS_E_OUT_OF_MEMORY`.
 *
 * # Safety
 *
 * `pages` is NULL or valid for a write.
 */
enum locus_status locus_migrate(struct locus_runtime runtime,
                                struct locus_data data,
                                size_t node,
                                uint64_t *pages);

/**
 * Moves the pages holding elements `[first, first + count)` of the datum to `node`,
 * as `locus_migrate` does for the whole datum (pages partly in the range move whole),
 * and writes the pages moved to `*pages` (which may be NULL). A range outside the
 * datum is `LOCUS_E_SIZE`; a versioned datum moves whole only (another range of it is
 * `LOCUS_E_CONFIG`). Other errors as for `locus_migrate`.
 *
 * # Safety
 *
 * `pages` is NULL or valid for a write.
 */
enum locus_status locus_migrate_range(struct locus_runtime runtime,
                                      struct locus_data data,
                                      size_t first,
                                      size_t count,
                                      size_t node,
                                      uint64_t *pages);

/**
 * Arms every page of a shared datum for migration on next touch (MaMI's
 * `mami_migrate_on_next_touch`): each page moves to the node of the first task that
 * declares an access to it, when that task starts. Writes the pages armed to `*pages`
 * (which may be NULL). A versioned datum is `LOCUS_E_CONFIG` (its next version is
 * placed where its producer runs). Other errors as for `locus_migrate`.
 *
 * # Safety
 *
 * `pages` is NULL or valid for a write.
 */
enum locus_status locus_migrate_on_next_touch(struct locus_runtime runtime,
                                              struct locus_data data,
                                              uint64_t *pages);

/**
 * From a body (or the run's root): submits a *migration task* into its scope. In
 * submission order, after the tasks that use the shared datum before it and before
 * those that use it after, the datum's pages move to `node`; the task runs preferably
 * on `node` and the run's report counts the pages (`migration.now_pages`). A
 * versioned datum, or a node outside the topology, is `LOCUS_E_DECLARATION`; a
 * context not the running body's `LOCUS_E_CONTEXT`; a datum of another runtime
 * `LOCUS_E_WRONG_RUNTIME`.
 */
enum locus_status locus_scope_migrate(struct locus_ctx ctx, struct locus_data data, size_t node);

/**
 * Cuts `data` into parts as `spec` says (between runs: from inside a task body it is
 * `LOCUS_E_STATE`) and
 * writes a handle for each part to `parts[0..n]`, and `n` to `*count`. `capacity` is
 * the length of `parts`: if it is less than `n`, nothing is partitioned, `*count` is
 * still `n`, and the status is `LOCUS_E_SIZE`, so that a caller can ask for the
 * number first with `capacity` 0. A part's element size is the datum's; its count is
 * its length in elements. Bad partitions (a range past the end, tiles that do not
 * divide the matrix, a kind that does not exist) are `LOCUS_E_ARGUMENT` or
 * `LOCUS_E_CONFIG`, naming the datum.
 *
 * # Safety
 *
 * `spec` is NULL (an error) or valid for a read, with `spec->ranges` valid for reads
 * of `spec->range_count` ranges when the kind is `LOCUS_PARTITION_RANGES`; `parts` is
 * valid for writes of `capacity` handles (NULL allowed when `capacity` is 0); `count`
 * is NULL (an error) or valid for a write.
 */
enum locus_status locus_partition(struct locus_runtime runtime,
                                  struct locus_data data,
                                  const struct locus_partition_spec *spec,
                                  struct locus_data *parts,
                                  size_t capacity,
                                  size_t *count);

/**
 * Writes the report as one JSON object (the format of `locus run --json`'s runtime
 * part) to `*json`, a NUL-terminated string to free with `locus_string_free`.
 *
 * # Safety
 *
 * `json` is NULL (an error) or valid for a write.
 */
enum locus_status locus_report_json(struct locus_report report, char **json);

/**
 * Writes the report's main figures to `*figures`.
 *
 * # Safety
 *
 * `figures` is NULL (an error) or valid for a write.
 */
enum locus_status locus_report_figures(struct locus_report report, struct locus_figures *figures);

/**
 * Frees a report.
 */
enum locus_status locus_report_free(struct locus_report report);

/**
 * Frees a string Locus returned (`locus_report_json`). NULL is accepted and does
 * nothing.
 *
 * # Safety
 *
 * `s` is NULL or a string Locus returned and that was not freed yet: a string
 * from anywhere else, or freed twice, is undefined behaviour (strings are not
 * handles and cannot be checked).
 */
void locus_string_free(char *s);

/**
 * Makes an empty settings object (every option at the builder's default).
 *
 * # Safety
 *
 * `out` is NULL (an error) or valid for a write.
 */
enum locus_status locus_settings_create(struct locus_settings *out);

/**
 * Sets one option by name, from its text: `window` (a number of tasks, or `none`),
 * `node_limit` and `push_threshold` (bytes), `push_weights` (`READ,WRITE`),
 * `vicinity` (workers), `allocation` (`immediate` or `deferred`),
 * `last_victim_first`, `steal_half` and `huge_pages` (`true` or `false`; `huge_pages`:
 * the memory pools ask for transparent huge pages, off by default), `shared_placement`
 * (`interleave`, `bind:NODE`, `blocked`, `first-touch`), `proc_bind` (`spread`, the
 * default: one CPU of each node in turn; `close`: fill a node before the next, when
 * there are fewer workers than CPUs), `migration` (`none`, the default: a task
 * accesses shared data where it lies; `now` and `next-touch`: its pages on other nodes
 * move to the task's node before the body runs; `auto`: when that costs less than the
 * remote accesses it saves), `trace` (a file path for a Chrome trace of every
 * run), `worker_stack` (bytes of stack of each worker thread: 8 MiB by default, at
 * least 256 KiB; a task waiting in `locus_wait` or `locus_ctx_fetch` runs others on
 * its worker's stack, so a recursion that waits at every level needs a stack as deep
 * as it is; with less than a quarter of it left (at most 1 MiB) the run fails with
 * `LOCUS_E_RUN_FAILED` instead of overflowing it). An unknown name or a bad value is
 * `LOCUS_E_ARGUMENT`, naming it; the object is then unchanged. Values no runtime
 * accepts are refused here, not at `locus_runtime_create`: a `window` or `vicinity`
 * of 0, negative or infinite `push_weights`, a `worker_stack` under 262144.
 *
 * # Safety
 *
 * `key` and `value` are NULL (an error) or NUL-terminated strings.
 */
enum locus_status locus_settings_set(struct locus_settings settings,
                                     const char *key,
                                     const char *value);

/**
 * Frees a settings object. A runtime made with it keeps its options.
 */
enum locus_status locus_settings_free(struct locus_settings settings);

/**
 * Makes a runtime and starts its workers.
 *
 * - `config`: a configuration name (`ws`, `dsa-base`, `push-in`, `push-out`,
 *   `push-weighted`, `dfa`, `dsa-opt`, `shm-base`, `home`, `bf`), or NULL for the
 *   default (`dsa-opt`).
 * - `topology`: `host`, `NxC` (virtual nodes laid over the host's CPUs), a spec with
 *   distances, or a preset name; NULL for the host.
 * - `threads`: number of workers, 0 for one per CPU of the topology.
 * - `settings`: further options (`locus_settings_set`), or the null handle.
 *
 * On success writes the runtime's handle to `out`. A bad name or spec is
 * `LOCUS_E_CONFIG`, and the message names it.
 *
 * # Safety
 *
 * The strings are NULL or NUL-terminated; `out` is NULL (an error) or valid for a
 * write.
 */
enum locus_status locus_runtime_create(const char *config,
                                       const char *topology,
                                       size_t threads,
                                       struct locus_settings settings,
                                       struct locus_runtime *out);

/**
 * Stops a runtime's workers and frees it, with every data and team handle it made
 * (their handles become invalid). A run in progress on another thread finishes first.
 * Calling it from inside a task of its own run frees the handle; the workers stop
 * when the run is over.
 */
enum locus_status locus_runtime_destroy(struct locus_runtime runtime);

/**
 * The runtime's number of workers and of NUMA nodes (either pointer may be NULL).
 *
 * # Safety
 *
 * `workers` and `nodes` are NULL or valid for a write.
 */
enum locus_status locus_runtime_size(struct locus_runtime runtime, size_t *workers, size_t *nodes);

/**
 * Bytes the runtime holds now: in use from its per-node pools (task buffers) and in
 * shared data. Both are zero once every datum is freed and no run is in progress.
 *
 * # Safety
 *
 * `pool_bytes` and `shared_bytes` are NULL or valid for a write.
 */
enum locus_status locus_runtime_bytes_in_use(struct locus_runtime runtime,
                                             uint64_t *pool_bytes,
                                             uint64_t *shared_bytes);

/**
 * Runs a program: `root`, the control program, runs as the run's root task on
 * worker 0 with `arg`, and spawns tasks with `locus_spawn`
 * on the context it gets (it has no views). Returns once every task has finished.
 *
 * If `report` is not NULL, the run's report is written there, also for a failed run
 * (free it with `locus_report_free`). A run fails (`LOCUS_E_RUN_FAILED`, the message
 * naming the task) when a body returns non-zero, a `locus_spawn` is refused (the
 * message names the refused task, its status and the reason), a declaration is
 * refused or a buffer cannot be allocated. A root that returns non-zero, or whose
 * spawn was refused, fails the run too, after its tasks have finished.
 *
 * What a failed run leaves, by one rule the program's text decides (never where its
 * tasks ran): a versioned datum keeps its last complete version, the contents written
 * by the last task that wrote it and returned 0 (a task that returned non-zero never
 * publishes what it wrote, even when it updated the buffer in place, and even if it
 * wrote nothing); a shared datum (`locus_data_shared`, written in place) that a failed
 * task declared `LOCUS_WRITE` or `LOCUS_READ_WRITE` is poisoned (unless the task saw
 * it through a gathered copy, covering several segments of partitioned data, which is
 * written back only after the body): `locus_fetch` and tasks reading it get
 * `LOCUS_E_STATE` until a task writes it whole (`LOCUS_WRITE`).
 * Called from inside a task, or from any thread while a run of the runtime is in
 * progress: `LOCUS_E_STATE` (rather than waiting for that run: one of its bodies may be
 * waiting for the calling thread, and the wait would never end).
 *
 * # Safety
 *
 * `root` is a valid function; `report` is NULL or valid for a write; `arg` is
 * whatever `root` expects.
 */
enum locus_status locus_run(struct locus_runtime runtime,
                            int32_t (*root)(struct locus_ctx ctx,
                                            const struct locus_view *views,
                                            size_t nviews,
                                            void *arg),
                            void *arg,
                            struct locus_report *report);

/**
 * The message of the last call that failed on the calling thread, naming the bad
 * value; an empty string if none has. The string stays valid until the next failing
 * call on this thread; do not free it.
 */
const char *locus_last_error(void);

/**
 * The name of a status code (`"LOCUS_E_HANDLE"`), or `"LOCUS_E_UNKNOWN"` for a value
 * that is not one. A static string: do not free it.
 */
const char *locus_status_name(int32_t status);

/**
 * Spawns a task from a body (or the root) into its scope: a child of the running
 * task, bound to what the task declared (strongly or weakly) and to the data of its
 * scope, and a member of `task->team` if set (else of the running task's team, if
 * any). Errors (each also names the bad value in `locus_last_error`): a context not
 * the running body's (`LOCUS_E_CONTEXT`); a null or freed datum, a freed team
 * (`LOCUS_E_HANDLE`), a datum or team of another runtime (`LOCUS_E_WRONG_RUNTIME`);
 * an unknown mode or affinity (`LOCUS_E_ARGUMENT`); a bad range (`LOCUS_E_SIZE`); a
 * declaration Locus refuses (`LOCUS_E_DECLARATION`). Every refused spawn also fails
 * the run: the body (or root) that called it fails when it returns, whatever it
 * returns, and `locus_run` returns `LOCUS_E_RUN_FAILED` naming the refused task.
 *
 * # Safety
 *
 * `task` is NULL (an error) or points to a valid `locus_task` whose pointers are as
 * its fields' documentation says.
 */
enum locus_status locus_spawn(struct locus_ctx ctx, const struct locus_task *task);

/**
 * Writes the worker running the body, and its node (either pointer may be NULL).
 *
 * # Safety
 *
 * `worker` and `node` are NULL or valid for a write.
 */
enum locus_status locus_ctx_where(struct locus_ctx ctx, size_t *worker, size_t *node);

/**
 * Waits until every child the task spawned so far is complete (taskwait); the worker
 * runs other tasks meanwhile. Refused (`LOCUS_E_DECLARATION`) when children need the
 * task's own outputs (declare those accesses weak), and in a task of no access (a
 * control task: its children are its parent's); `LOCUS_E_CONTEXT` in the root. A wait
 * refused with `LOCUS_E_DECLARATION` also fails the run, as a refused spawn does: the
 * body fails when it returns, whatever it returns (a body that went on without its
 * children's results would otherwise compute a wrong value silently).
 */
enum locus_status locus_wait(struct locus_ctx ctx);

/**
 * Makes a datum in the body's scope (zero until written): the task's children may
 * read and write it, and the task reads their result with `locus_ctx_fetch`.
 * Free its handle with `locus_data_free` (the runtime's destruction frees it too).
 *
 * # Safety
 *
 * `name` is NULL (an error) or NUL-terminated; `out` is NULL (an error) or valid for
 * a write.
 */
enum locus_status locus_ctx_data(struct locus_ctx ctx,
                                 const char *name,
                                 size_t elem_size,
                                 size_t count,
                                 struct locus_data *out);

/**
 * Waits for the task's children (as `locus_wait`), then copies `data` as they left
 * it (a datum of the task's scope, or one it declared and its children wrote) to
 * `buf`, `count` elements (the datum's count).
 *
 * # Safety
 *
 * `buf` is valid for writes of `elem_size * count` bytes (NULL is an error unless
 * that is 0).
 */
enum locus_status locus_ctx_fetch(struct locus_ctx ctx,
                                  struct locus_data data,
                                  void *buf,
                                  size_t count);

/**
 * Records why the body is failing: if it then returns non-zero, the run's error
 * names the task, the status and `message` (copied; NULL clears it).
 *
 * # Safety
 *
 * `message` is NULL or NUL-terminated.
 */
enum locus_status locus_ctx_fail(struct locus_ctx ctx, const char *message);

/**
 * Makes a team on the `count` nodes at `nodes` (in the order its tasks are dealt to
 * them), non-strict, and writes its handle to `*out`. A task spawned into it without
 * an affinity of its own gets a node hint to one of its nodes, round robin; so do its
 * descendants. An empty list, or a node outside the topology or without workers, is
 * `LOCUS_E_CONFIG`, naming it.
 *
 * # Safety
 *
 * `nodes` is valid for reads of `count` values (NULL is an error unless `count` is
 * 0); `out` is NULL (an error) or valid for a write.
 */
enum locus_status locus_team_create(struct locus_runtime runtime,
                                    const size_t *nodes,
                                    size_t count,
                                    struct locus_team *out);

/**
 * Makes one team per node with workers, in node order (ForestGOMP's `spread`: a
 * nested parallel region with one team per node), writes their handles to
 * `teams[0..n]` and `n` to `*count`. `capacity` is the length of `teams`: if it is
 * less than `n`, no team is made, `*count` is still `n`, and the status is
 * `LOCUS_E_SIZE`, so that a caller can ask for the number first with `capacity` 0.
 *
 * # Safety
 *
 * `teams` is valid for writes of `capacity` handles (NULL allowed when `capacity` is
 * 0); `count` is NULL (an error) or valid for a write.
 */
enum locus_status locus_team_spread(struct locus_runtime runtime,
                                    struct locus_team *teams,
                                    size_t capacity,
                                    size_t *count);

/**
 * Frees a team's handle. Tasks already spawned into it stay its members (and their
 * children join it); the data attached to it stay attached.
 */
enum locus_status locus_team_free(struct locus_team team);

/**
 * Makes the team strict (only its nodes' workers run its tasks) or not (its tasks may
 * be stolen by other nodes' workers once its own are busy: the default). Applies to
 * the tasks spawned afterwards.
 */
enum locus_status locus_team_set_strict(struct locus_team team, bool strict);

/**
 * Writes the team's nodes, in the order its tasks are dealt to them, to
 * `nodes[0..n]` and `n` to `*count`; with `capacity` less than `n`, writes only
 * `*count` and returns `LOCUS_E_SIZE` (ask with `capacity` 0 first).
 *
 * # Safety
 *
 * `nodes` is valid for writes of `capacity` values (NULL allowed when `capacity` is
 * 0); `count` is NULL (an error) or valid for a write.
 */
enum locus_status locus_team_nodes(struct locus_team team,
                                   size_t *nodes,
                                   size_t capacity,
                                   size_t *count);

/**
 * Writes to `*count` how many data are attached to the team (`locus_attach_team`).
 *
 * # Safety
 *
 * `count` is NULL (an error) or valid for a write.
 */
enum locus_status locus_team_attached(struct locus_team team, size_t *count);

/**
 * Re-places the team on the `count` nodes at `nodes` (paper 2's "update memory
 * hints"): its tasks spawned from now on go there. With `take_data`, every datum
 * attached to it migrates too, the `k`-th to the `k mod count`-th new node (as
 * `locus_migrate`); without, they stay where they are. Writes the pages moved to
 * `*pages` (which may be NULL). Between runs: from a body it is `LOCUS_E_STATE`, and
 * so is a move with data to migrate while another thread runs a program on the
 * runtime (re-placing the team alone is allowed then: it applies to the tasks
 * spawned afterwards). A team of another runtime is `LOCUS_E_WRONG_RUNTIME`; the node
 * list as for `locus_team_create`; other errors as for `locus_migrate`.
 *
 * # Safety
 *
 * `nodes` is valid for reads of `count` values (NULL is an error unless `count` is
 * 0); `pages` is NULL or valid for a write.
 */
enum locus_status locus_team_move(struct locus_runtime runtime,
                                  struct locus_team team,
                                  const size_t *nodes,
                                  size_t count,
                                  bool take_data,
                                  uint64_t *pages);

/**
 * Attaches the datum to worker `worker` (MaMI's `mami_attach`): from now on the
 * placement policies treat it as that worker's data wherever its pages lie (an
 * affinity to the datum, `LOCUS_AFFINITY_DATA`, is an affinity to the worker;
 * work-pushing and the `auto` migration setting count its bytes on the worker's
 * node). Its memory does not move. Attaching again replaces the owner. A worker that
 * does not exist is `LOCUS_E_CONFIG`; a datum of another runtime
 * `LOCUS_E_WRONG_RUNTIME`.
 */
enum locus_status locus_attach_worker(struct locus_runtime runtime,
                                      struct locus_data data,
                                      size_t worker);

/**
 * As `locus_attach_worker`, to node `node` (an affinity to the datum is an affinity
 * to the node). A node outside the topology is `LOCUS_E_CONFIG`.
 */
enum locus_status locus_attach_node(struct locus_runtime runtime,
                                    struct locus_data data,
                                    size_t node);

/**
 * As `locus_attach_worker`, to a team: the datum counts on the team's first node and
 * migrates with the team when `locus_team_move` is asked to take its data. A team of
 * another runtime is `LOCUS_E_WRONG_RUNTIME`.
 */
enum locus_status locus_attach_team(struct locus_runtime runtime,
                                    struct locus_data data,
                                    struct locus_team team);

/**
 * Detaches the datum from its owner, if it has one: the policies go by where its
 * memory lies again. Freeing a datum's handle detaches it too.
 */
enum locus_status locus_detach(struct locus_runtime runtime, struct locus_data data);

/**
 * Records the graph `name` (copied; NULL: "graph") of runtime `runtime`: calls
 * `program(recorder, arg)`, which records tasks with `locus_graph_spawn`, and writes
 * the graph to `*out`; the program returns 0 (anything else fails the recording).
 * Nothing runs. Fails with the first refused task
 * (`LOCUS_E_DECLARATION`, `LOCUS_E_ARGUMENT`, ... as `locus_graph_spawn` says) or
 * when the program returns non-zero (`LOCUS_E_RUN_FAILED`); no graph is made then,
 * and the arguments of the tasks recorded so far are freed. Called from inside a body:
 * `LOCUS_E_STATE`.
 *
 * # Safety
 *
 * `name` is NULL or NUL-terminated; `program` is a valid function; `out` is valid for
 * a write.
 */
enum locus_status locus_graph_record(struct locus_runtime runtime,
                                     const char *name,
                                     int32_t (*program)(struct locus_recorder recorder, void *arg),
                                     void *arg,
                                     struct locus_graph *out);

/**
 * Records a task into the graph `recorder` records, described as for `locus_spawn`:
 * its accesses (no weak ones), its body, its argument (kept with the graph, and given
 * to `arg_free` when the graph is freed, or at once when the task is refused). Its
 * `affinity` and `team` must be unset: a recorded graph places its tasks itself.
 * Errors: a recorder not the running program's (`LOCUS_E_CONTEXT`); what
 * `locus_spawn` refuses; weak accesses, partitioned data (`LOCUS_E_DECLARATION`).
 * Any refusal also fails the recording.
 *
 * # Safety
 *
 * As for `locus_spawn`.
 */
enum locus_status locus_graph_spawn(struct locus_recorder recorder, const struct locus_task *task);

/**
 * Replays `graph` `iterations` times on `runtime` (the one it was recorded with), as
 * one run. If `report` is not NULL the run's report is written there, also for a
 * failed replay (free it with `locus_report_free`). Errors: a graph of another runtime
 * (`LOCUS_E_WRONG_RUNTIME`); a graph whose data changed since it was recorded or last
 * replayed (a datum freed, partitioned, written outside the graph) or whose earlier
 * replay failed (`LOCUS_E_STATE`, for good: record it again); a body returning
 * non-zero (`LOCUS_E_RUN_FAILED`, naming the task; each datum keeps the contents of
 * the last complete iteration); from inside a body (`LOCUS_E_STATE`).
 *
 * # Safety
 *
 * `report` is NULL or valid for a write.
 */
enum locus_status locus_graph_replay(struct locus_runtime runtime,
                                     struct locus_graph graph,
                                     uint64_t iterations,
                                     struct locus_report *report);

/**
 * Writes to `*iteration` the index of the iteration a replayed body runs for (counting
 * every iteration the graph has replayed, from 0). `LOCUS_E_CONTEXT` for the context
 * of anything but a replayed body.
 *
 * # Safety
 *
 * `iteration` is NULL (an error) or valid for a write.
 */
enum locus_status locus_ctx_iteration(struct locus_ctx ctx, uint64_t *iteration);

/**
 * Frees a graph, its buffers and the arguments of its tasks (each task's `arg_free`).
 * A freed, null or made-up handle: `LOCUS_E_HANDLE`.
 */
enum locus_status locus_graph_free(struct locus_graph graph);

#ifdef __cplusplus
} /* extern "C" */
#endif /* __cplusplus */

#endif  /* LOCUS_H */
