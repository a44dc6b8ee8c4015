/* Which suffixes of a suffix array share their first k bytes with the suffix before them, for the suffix-array
 * dedup (suffix_array.py, `adjacent_repeats`). It replaces building the whole LCP array (Kasai's algorithm: a rank
 * array and an LCP array of n entries, random access in both) when all that is asked is "at least k bytes".
 *
 * The permuted-LCP idea (Kärkkäinen, Manzini and Puglisi, 2009): with phi[p] the suffix just before suffix p in
 * suffix-array order, the common prefix of p + 1 and phi[p + 1] is at least that of p and phi[p] less one, so a pass
 * in text order reuses all but one byte of each comparison. The common prefix counted here stops at the separator
 * byte and at k: it keeps that property (what p and phi[p] share without a separator, p + 1 and phi[p] + 1 share
 * too, and phi[p + 1] lies between them in suffix order), and every pass over a range of text positions can start
 * from nothing, so ranges run on threads of their own.
 *
 * Built by the Makefile into .venv/lib (cc -O2 -shared -fPIC); suffix_array.py loads it with ctypes, which
 * releases the GIL during each call, and runs the ranges on Python threads.
 */
#include <stdint.h>

/* phi[sa[i]] = sa[i - 1] for i in [lo, hi), lo >= 1 (the caller sets phi[sa[0]] = -1) */
#define PHI(name, T)                                                                                                \
    void name(const T *sa, int64_t lo, int64_t hi, T *phi) {                                                          \
        for (int64_t i = lo; i < hi; i++) phi[sa[i]] = sa[i - 1];                                                     \
    }

/* marks[p] = 1 for p in [lo, hi) when text[p, p + k) equals text[phi[p], phi[p] + k) and holds no `sep` byte, else 0
 * (phi[p] < 0: p has no suffix before it) */
#define MARKS(name, T)                                                                                              \
    void name(const uint8_t *text, int64_t n, const T *phi, int64_t lo, int64_t hi, int64_t k, uint8_t sep,          \
              uint8_t *marks) {                                                                                      \
        int64_t l = 0;                                                                                               \
        for (int64_t p = lo; p < hi; p++) {                                                                          \
            int64_t q = phi[p];                                                                                      \
            if (q < 0) {                                                                                             \
                marks[p] = 0;                                                                                        \
                l = 0;                                                                                               \
                continue;                                                                                            \
            }                                                                                                        \
            int64_t limit = k;                                                                                       \
            if (n - p < limit) limit = n - p;                                                                        \
            if (n - q < limit) limit = n - q;                                                                        \
            if (l > limit) l = limit;                                                                                \
            while (l < limit && text[p + l] == text[q + l] && text[p + l] != sep) l++;                               \
            marks[p] = l >= k;                                                                                       \
            if (l > 0) l--;                                                                                          \
        }                                                                                                            \
    }

/* pairs[i] = marks[sa[i + 1]] for i in [lo, hi): the suffixes sa[i] and sa[i + 1] share their first k bytes */
#define PAIRS(name, T)                                                                                              \
    void name(const T *sa, const uint8_t *marks, int64_t lo, int64_t hi, uint8_t *pairs) {                          \
        for (int64_t i = lo; i < hi; i++) pairs[i] = marks[sa[i + 1]];                                               \
    }

PHI(chatlike_phi32, int32_t)
PHI(chatlike_phi64, int64_t)
MARKS(chatlike_marks32, int32_t)
MARKS(chatlike_marks64, int64_t)
PAIRS(chatlike_pairs32, int32_t)
PAIRS(chatlike_pairs64, int64_t)
