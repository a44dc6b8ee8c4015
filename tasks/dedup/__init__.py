"""The `dedup` stage's plain functions: four sub-stages (exact → MinHash → Bloom → suffix array), each its own
dataset, split into phases that take paths and write paths so a flow can map them over shards, in threads,
processes or on a Dask cluster. Every phase is deterministic: same inputs → same bytes, whatever order the
shards finish in (global phases sort what they read; survivors are chosen by corpus order, never by timing).

Corpus order = (part index, row): `part_index` is the position of the part in the sorted input listing.

| sub-stage | phases (one call each) | reads → writes |
|---|---|---|
| exact | `exact_hash_shard` per part | part → `<w>/p{k}/part-{i}.parquet` (hash, part, row, paragraph, id) |
| | `exact_select` per partition k | every part's `p{k}` file → selection `p{k}.parquet` (rows to drop / paragraphs to cut + survivor id) |
| | `exact_filter_shard` per part | part + all selection files → kept, rejected, spans |
| minhash | `minhash_signature_shard` per part | part → `<w>/buckets/p{k}/part-{i}.npy` (band, key, doc ref), `<w>/docs/part-{i}.parquet`, shingles if `verify` |
| | `minhash_bucket_partition` per partition k | bucket files of k (+ shingles of candidates only) → `<w>/pairs/p{k}.npy` |
| | `minhash_cluster` once | all pair files + docs files → `clusters.parquet` (member → survivor id) |
| | `minhash_filter_shard` per part | part + clusters file → kept, rejected |
| bloom | `bloom_dedup_parts` once, or `bloom_dedup_shard` per part in order | part (+ previous part's filter file) → kept, rejected, spans (+ its filter file) |
| suffix array | `plan_suffix_array_groups` once | parts → groups of consecutive parts under `max_group_bytes` |
| | `suffix_array_find_group` per group | the group's parts → `<w>/plan/part-{i}.parquet` (row, byte span, survivor id) |
| | `suffix_array_filter_shard` per part | part + its plan file → kept, rejected, spans (`suffix_array_dedup_group` runs both in one process) |

Rejected rows keep every input column plus `reason` and `duplicate_of` (the survivor's id). Text cut out of kept
documents goes to the optional spans part (id, reason, character offsets, bytes, text, duplicate_of). Reasons:
`exact_duplicate`, `exact_duplicate_paragraph`, `exact_emptied`, `minhash_duplicate`, `bloom_duplicate`,
`bloom_duplicate_paragraph`, `bloom_emptied`, `suffix_array_repeat`, `suffix_array_too_short`.
Every filter phase applies its per-row `Decision`s through the shared `filter_shard` driver
(`decisions.apply_decisions`) and returns `ShardCounts`; `summarize_exact / summarize_minhash / summarize_bloom /
summarize_suffix_array` add their phase stats to `DEDUP_SUMMARY`'s manifest counts (`in`, `out`, `bytes_in`,
`bytes_out`, `dropped_<reason>`, `spans_removed_<reason>`). Text normalisation and hashing live in `dedup.text`,
the side files the phases pass each other in `dedup.sidefiles`.

Survivors: exact and MinHash keep the first document of a group in corpus order; Bloom keeps what came first
by construction (it only looks back); the suffix array keeps the first occurrence of every repeated window.
MinHash clusters are connected components of candidate pairs, so a chain A~B~C can join A and C (the usual
union-find behaviour; `verify` confirms each pair by true Jaccard first).

MinHash defaults (DESIGN §4): word 5-grams of normalised words, 112 permutations = 14 bands × 8 rows, seed 1.
A pair of Jaccard s becomes a candidate with probability 1 − (1 − s^8)^14: 0.05 at s = 0.5, 0.21 at 0.6, 0.56
at 0.7, 0.92 at 0.8, 0.9996 at 0.9 (50 % at 0.685, 99 % at 0.853; `minhash.s_curve`, `minhash.similarity_at`).
`threshold: 0.5` (say) picks bands × rows with that midpoint instead (22 × 5). The labelled pairs of the
MinHash articles have Jaccard ≈ 0.96, so the defaults find all of them (tests/test_dedup_minhash.py); on
near-duplicates made here with typos, inserted/deleted words and sentences, reordering and boilerplate, the
share found in each similarity band matches the curve (tests/test_dedup_near_duplicates.py, bench_dedup.py):
copies with a few edits (s ≥ 0.8) are found, heavily edited ones (s < 0.6) mostly are not — lower the
threshold for those, and turn on `verify` to keep precision.

Bloom survivors: `track_survivors` (default on) keeps 64-bit key → first document in sorted numpy runs
(16 bytes a key); the per-part flow passes them from part to part in `<filter>.survivors.npz` files.
"""

from tasks.dedup.params import BloomDedupParams, ExactDedupParams, MinhashDedupParams, SuffixArrayDedupParams

__all__ = ["BloomDedupParams", "ExactDedupParams", "MinhashDedupParams", "SuffixArrayDedupParams"]
