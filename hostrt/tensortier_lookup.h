/* TensorTier host runtime: applies an exported placement policy (a lookup
 * file written by `tensortier export`, docs/lookup-format.md) without
 * LibTorch or any RL code. Depends on the C and C++ standard libraries only;
 * link with a C++ linker (CMake does this for TensorTier::lookup).
 *
 * A file holds
 *  - plan tables: for a (model signature, batch size, DRAM budget) the tier
 *    each tensor starts in and the migrations at kernel boundaries;
 *  - a generalised lookup for models without a plan: the observation the
 *    agent sees (docs/mdp.md), quantised into bins, mapped to the trained
 *    network's greedy action.
 *
 * Every query is constant time (plans are found through a hash index built
 * at open; a decision is one bin lookup per feature and one bit test).
 * A handle is immutable after open: queries may run on any number of
 * threads at once. */
#ifndef TENSORTIER_LOOKUP_H_
#define TENSORTIER_LOOKUP_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TT_LOOKUP_FORMAT_VERSION 1

#define TT_LOOKUP_TIER_DRAM 0
#define TT_LOOKUP_TIER_SLOW 1

/* Return codes; every error is negative. */
#define TT_LOOKUP_OK 0
#define TT_LOOKUP_ERR_IO (-1)          /* cannot open or read the file */
#define TT_LOOKUP_ERR_TRUNCATED (-2)   /* shorter than its header says */
#define TT_LOOKUP_ERR_BAD_MAGIC (-3)   /* not a lookup file */
#define TT_LOOKUP_ERR_VERSION (-4)     /* a format version this runtime does not read */
#define TT_LOOKUP_ERR_CHECKSUM (-5)    /* header or payload checksum mismatch: corrupt */
#define TT_LOOKUP_ERR_MALFORMED (-6)   /* checksums pass but the structure is inconsistent */
#define TT_LOOKUP_ERR_SIGNATURE (-7)   /* the file is not for the requested model */
#define TT_LOOKUP_ERR_NOT_FOUND (-8)   /* no plan for that key / no generalised lookup */
#define TT_LOOKUP_ERR_ARGUMENT (-9)    /* null handle, index out of range, wrong feature count */
#define TT_LOOKUP_ERR_NO_MEMORY (-10)

typedef struct tt_lookup tt_lookup;

/* Loads and validates `path`. On success stores a handle in *out and returns
 * TT_LOOKUP_OK; on failure stores NULL, returns an error code and writes a
 * message naming the file and what is wrong into errbuf (NUL-terminated,
 * truncated to errlen; errbuf may be NULL). */
int tt_lookup_open(const char* path, tt_lookup** out, char* errbuf, size_t errlen);

/* As tt_lookup_open, and refuses (TT_LOOKUP_ERR_SIGNATURE) a file that was
 * neither exported for `model_signature` nor holds a plan for it. */
int tt_lookup_open_for_model(const char* path, uint64_t model_signature, tt_lookup** out, char* errbuf,
                             size_t errlen);

/* As tt_lookup_open, from bytes in memory (copied; `path_for_messages` may be NULL). */
int tt_lookup_open_memory(const void* data, size_t bytes, const char* path_for_messages, tt_lookup** out,
                          char* errbuf, size_t errlen);

void tt_lookup_close(tt_lookup* handle); /* NULL is fine */

/* Returns a static description of a return code. */
const char* tt_lookup_status_name(int code);

/* ---- what the file holds */
uint64_t tt_lookup_primary_signature(const tt_lookup* handle); /* the model it was trained on */
uint32_t tt_lookup_plan_count(const tt_lookup* handle);
int tt_lookup_has_generalised(const tt_lookup* handle);        /* 1 or 0 */
uint32_t tt_lookup_observation_size(const tt_lookup* handle);  /* floats tt_lookup_decide takes */
uint64_t tt_lookup_file_bytes(const tt_lookup* handle);

typedef struct tt_lookup_plan_info {
  uint64_t model_signature;
  uint64_t dram_budget_bytes;
  uint32_t batch_size;
  uint32_t num_tensors;
  uint32_t num_kernels;
  uint32_t num_migrations;
  uint32_t async_copies; /* 1: migrations overlap the next kernel (see envs/placement_plan.h) */
} tt_lookup_plan_info;

typedef struct tt_lookup_generalised_info {
  uint32_t observation_size;
  uint32_t feature_count;   /* features that take part in the cell number */
  uint32_t cell_count;      /* product of the features' bin counts; bits in the bitmap */
  uint32_t fine_bins;
  uint64_t section_bytes;
} tt_lookup_generalised_info;

/* Per-feature quantisation (index < feature_count), for inspection. */
typedef struct tt_lookup_feature_info {
  uint32_t observation_index;
  uint32_t bins;
  uint32_t stride; /* cell = sum over features of bin * stride */
  float lo, scale; /* fine bin = (x - lo) * scale, clamped to [0, fine_bins - 1] */
} tt_lookup_feature_info;

int tt_lookup_plan_info_at(const tt_lookup* handle, int32_t plan, tt_lookup_plan_info* out);
int tt_lookup_generalised_info_get(const tt_lookup* handle, tt_lookup_generalised_info* out);
int tt_lookup_feature_info_at(const tt_lookup* handle, uint32_t index, tt_lookup_feature_info* out);
/* Constant `index` of the generalised section (docs/lookup-format.md: heat
 * weights, observation caps); NaN when absent. */
double tt_lookup_constant(const tt_lookup* handle, uint32_t index);
/* The file's info text ("key: value" lines), or "" when absent. Owned by the handle. */
const char* tt_lookup_info_text(const tt_lookup* handle);

/* ---- plan tables */

/* The plan for a key, as an id >= 0 for the *_at functions, or
 * TT_LOOKUP_ERR_NOT_FOUND. */
int32_t tt_lookup_find_plan(const tt_lookup* handle, uint64_t model_signature, uint32_t batch_size,
                            uint64_t dram_budget_bytes);

/* Tier a tensor is allocated in (TT_LOOKUP_TIER_*), or an error. */
int tt_lookup_plan_tier_at(const tt_lookup* handle, int32_t plan, uint32_t tensor_index);
int tt_lookup_plan_initial_tier(const tt_lookup* handle, uint64_t model_signature, uint32_t batch_size,
                                uint64_t dram_budget_bytes, uint32_t tensor_index);

typedef struct tt_lookup_migration {
  int32_t after_kernel; /* the copy starts when this kernel ends (-1: before the first) */
  uint32_t tensor;
  uint32_t to_tier;     /* TT_LOOKUP_TIER_* */
} tt_lookup_migration;

/* The migrations after `after_kernel`: writes up to `capacity` of them to
 * `out` (may be NULL when capacity is 0) and returns how many there are (so a
 * return above capacity means the buffer was too small), or an error. */
int32_t tt_lookup_plan_migrations_at(const tt_lookup* handle, int32_t plan, int32_t after_kernel,
                                     tt_lookup_migration* out, size_t capacity);
int32_t tt_lookup_plan_migrations(const tt_lookup* handle, uint64_t model_signature, uint32_t batch_size,
                                  uint64_t dram_budget_bytes, int32_t after_kernel, tt_lookup_migration* out,
                                  size_t capacity);

/* ---- generalised lookup */

/* The trained policy's action for one observation (n floats, laid out as
 * docs/mdp.md's table; n must equal tt_lookup_observation_size): 0 = DRAM,
 * 1 = slow tier, or a negative error (no generalised lookup, wrong n). When
 * the file carries the policy's network, its forward pass (the network's
 * own answer, on any model); otherwise the bitmap cell's. */
int tt_lookup_decide(const tt_lookup* handle, const float* features, size_t n);

/* The bitmap cell's action alone, whether or not the file carries the
 * network (for tools and tests that compare the two). */
int tt_lookup_decide_table(const tt_lookup* handle, const float* features, size_t n);

/* Layers of the policy's network in the file; 0 when it carries none. */
uint32_t tt_lookup_network_layers(const tt_lookup* handle);

/* The bitmap cell an observation falls in (for tools and tests), or an error. */
int64_t tt_lookup_cell(const tt_lookup* handle, const float* features, size_t n);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORTIER_LOOKUP_H_ */
