/*
 * The C sources of codegen._speedups: one extension module built from several files, each named
 * for what it holds. speedups.c holds the Example wire decoder and the module itself; every other
 * source exports its functions as a NULL-terminated method table declared here, which the module
 * adds at import.
 */
#ifndef TFR_GEN_SPEEDUPS_H
#define TFR_GEN_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* Method tables of the other sources (each ends with {NULL}), added by PyInit__speedups. */

/* frames.c: TFRecord framing (frame_records, scan_frames, scan_spans) and crc32c. */
extern PyMethodDef tfr_frames_methods[];

/* encode.c: encode_examples, many Examples serialized from columns. */
extern PyMethodDef tfr_encode_methods[];

/* encode.c: write the packed varints of ``count`` native int64 at ``values`` to ``out`` (exactly sized: as many
 * bytes as the varints take); returns the end. */
uint8_t *tfr_put_packed(uint8_t *out, const char *values, Py_ssize_t count);

/* strings.c: join_strings, a list of str or bytes as an Arrow array's offsets and data. */
extern PyMethodDef tfr_strings_methods[];

/* arrays.c: adjacent_arrays, where arrays that follow each other lie in one buffer. */
extern PyMethodDef tfr_arrays_methods[];

/* export.c: export_arrow, a tree of Arrow arrays as one ArrowArray of the Arrow C data interface. */
extern PyMethodDef tfr_export_methods[];

/* hashes.c: hash_values, the FNV-1a hash of each joined bytes value, and tally_values, those hashes
 * grouped. */
extern PyMethodDef tfr_hashes_methods[];

/* hashes.c: check that ``sizes`` (a buffer of native int64) are the sizes of values joined in
 * ``blob``, non-negative and adding up to its size, and set ``*n`` to their number; -1 with a
 * ValueError set when they are not. */
int tfr_joined_sizes(const Py_buffer *blob, const Py_buffer *sizes, Py_ssize_t *n);

/* hashes.c: 0 when ``ends`` (``n`` int64) are the ends of values joined in ``blob_len`` bytes (not
 * decreasing, the last at blob_len; none: blob_len is 0), else -1 (no error set). */
int tfr_joined_ends(const int64_t *ends, Py_ssize_t n, Py_ssize_t blob_len);

/* joined.c: joined_traits, the NUL bytes, image signatures and short values of joined values. */
extern PyMethodDef tfr_joined_methods[];

/* varint.c: decode_varints, a test hook for the loop below. */
extern PyMethodDef tfr_varint_methods[];

/* varint.c: fill the varint tables; call once before tfr_decode_varints. */
void tfr_varint_init(void);

/*
 * varint.c: decode the ``count`` packed varints of d[0:size] into out[0:count] as
 * little-endian uint64 (their low 64 bits). The caller has checked that ``count`` bytes of the
 * payload are below 0x80, the last one among them. Returns -1, or the offset of the first varint
 * longer than 10 bytes (then out holds the values before it). ``portable`` forces the portable
 * loop (the SIMD one is used where the CPU has it).
 */
Py_ssize_t tfr_decode_varints(const uint8_t *d, Py_ssize_t size, uint64_t *out,
                              Py_ssize_t count, int portable);

/*
 * blocks.c: Block, the writable buffer the decoders fill (large ones of batch columns
 * recycled through a pool). tfr_block_new gives an empty Block with room for ``capacity`` bytes,
 * whose memory is pooled when ``pooled`` (NULL with an error set); tfr_block_grow makes room for
 * ``capacity`` keeping the first ``keep`` bytes of a Block the caller made and has not handed out
 * (-1 when out of memory, with no error set: it runs without the GIL too), and
 * tfr_block_finish sets the bytes the buffer exposes, fitting its memory (0, or -1 with an error
 * set). tfr_add_block_type adds the type to the module.
 */
PyObject *tfr_block_new(Py_ssize_t capacity, int pooled);
uint8_t *tfr_block_data(PyObject *block);
Py_ssize_t tfr_block_capacity(PyObject *block);
int tfr_block_grow(PyObject *block, Py_ssize_t capacity, Py_ssize_t keep);
int tfr_block_finish(PyObject *block, Py_ssize_t size);
int tfr_add_block_type(PyObject *module);
extern PyMethodDef tfr_blocks_methods[];

/*
 * spans.c: Spans, records that are stretches of buffers (a sequence of bytes to Python; scan_batch
 * reads them in place). tfr_spans_new gives one of ``n`` records (their stretches for the caller
 * to set) kept by a memoryview of ``buffer`` (NULL with an error set); tfr_spans_check says whether
 * an object is one; tfr_add_spans_type adds the type to the module.
 */
typedef struct {
    PyObject_HEAD
    Py_ssize_t n;          /* records */
    const uint8_t **data;  /* where each record starts */
    Py_ssize_t *sizes;     /* its size */
    PyObject *owners;      /* a tuple of memoryviews of the buffers the records lie in */
} TfrSpans;
TfrSpans *tfr_spans_new(PyObject *buffer, Py_ssize_t n);
int tfr_spans_check(PyObject *object);
int tfr_add_spans_type(PyObject *module);
extern PyMethodDef tfr_spans_methods[];

/* inflate.c: gzip members inflated by libdeflate without the GIL. */
extern PyMethodDef tfr_inflate_methods[];

/* plan.c: add the type ExamplePlan to the module; -1 with an error set on failure. */
int tfr_add_plan_type(PyObject *module);

/* Whether p[0:size] is all ASCII (eight bytes at a time). */
static inline int
tfr_is_ascii(const uint8_t *p, Py_ssize_t size)
{
    uint64_t bits = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        bits |= word;
    }
    for (; i < size; i++) {
        bits |= p[i];
    }
    return !(bits & 0x8080808080808080u);
}

/* The str of the UTF-8 bytes p[0:size] as PyUnicode_DecodeUTF8(p, size, NULL) gives it (NULL with
 * UnicodeDecodeError when they are not strict UTF-8); an ASCII one is made by a single copy. */
static inline PyObject *
tfr_utf8_text(const uint8_t *p, Py_ssize_t size)
{
    if (!tfr_is_ascii(p, size)) {
        return PyUnicode_DecodeUTF8((const char *)p, size, NULL);
    }
    PyObject *text = PyUnicode_New(size, 127);
    if (text != NULL && size) {
        memcpy(PyUnicode_DATA(text), p, (size_t)size);
    }
    return text;
}

#endif
