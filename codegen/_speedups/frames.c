/*
 * TFRecord framing in C (see codegen/runtime/io/framing.py): frame_records frames a batch of
 * records into one bytes object, scan_frames slices the verified records out of a buffer of
 * frames, and crc32c is the checksum both use.
 *
 * A frame is <u64 LE data length> <u32 LE masked crc32c of the 8 length bytes> <data>
 * <u32 LE masked crc32c of data>, with masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8.
 *
 * CRC32C (Castagnoli, reflected polynomial 0x82f63b78) uses the SSE4.2 crc32 instruction on
 * x86-64 CPUs that have it, three streams at a time over long buffers (their CRCs combined with
 * tables of the "append n zero bytes" operator, as in Mark Adler's crc32c.c), and a portable
 * slicing-by-8 table everywhere else. Both give the results of the crc32c package.
 */
#include "speedups.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TFR_HAVE_X86_CRC 1
#include <nmmintrin.h>
#endif

#define CRC32C_POLY 0x82f63b78u
#define MASK_DELTA 0xa282ead8u
#define HEADER_SIZE 12 /* length and its CRC */
#define FRAME_SIZE 16  /* header plus data CRC: the size of an empty record */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

/* --- CRC32C ------------------------------------------------------------------------------- */

/* The linear map on CRC registers that appends a fixed number of zero bytes, by register byte. */
typedef struct {
    uint32_t by_byte[4][256];
} Shift;

static uint32_t slice_table[8][256]; /* slicing-by-8: slice_table[0] is the byte-wise table */
static Shift long_shift;             /* appends LONG_BLOCK zero bytes to a CRC register */
static Shift short_shift;            /* appends SHORT_BLOCK zero bytes */
static int crc_ready;                /* the tables are filled */
static int crc_hardware;             /* the CPU has SSE4.2's crc32 instruction */

/* The CRC register after ``n`` bytes at ``p``, from register ``reg`` (portable). */
static uint32_t
crc_portable(uint32_t reg, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = reg ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
                             | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16
                      | (uint32_t)p[7] << 24;
        reg = slice_table[7][lo & 0xff] ^ slice_table[6][lo >> 8 & 0xff]
              ^ slice_table[5][lo >> 16 & 0xff] ^ slice_table[4][lo >> 24]
              ^ slice_table[3][hi & 0xff] ^ slice_table[2][hi >> 8 & 0xff]
              ^ slice_table[1][hi >> 16 & 0xff] ^ slice_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) {
        reg = (reg >> 8) ^ slice_table[0][(reg ^ *p++) & 0xff];
    }
    return reg;
}

/* The register after ``reg`` is followed by the zero bytes a shift table stands for. */
static uint32_t
crc_shift(const Shift *shift, uint32_t reg)
{
    return shift->by_byte[0][reg & 0xff] ^ shift->by_byte[1][reg >> 8 & 0xff]
           ^ shift->by_byte[2][reg >> 16 & 0xff] ^ shift->by_byte[3][reg >> 24];
}

/* Fill ``shift`` with the operator appending ``n`` zero bytes: the register update is linear
 * in the register when the data is zero, so each input bit has a fixed image. */
static void
fill_shift(Shift *shift, size_t n)
{
    static const unsigned char zeros[LONG_BLOCK];
    uint32_t columns[32];
    for (int bit = 0; bit < 32; bit++) {
        columns[bit] = crc_portable((uint32_t)1 << bit, zeros, n);
    }
    for (int i = 0; i < 4; i++) {
        uint32_t *table = shift->by_byte[i];
        table[0] = 0;
        for (unsigned byte = 1; byte < 256; byte++) {
            unsigned low = byte & (0u - byte);
            int index = 0;
            while (!((low >> index) & 1u)) {
                index++;
            }
            table[byte] = table[byte ^ low] ^ columns[8 * i + index];
        }
    }
}

#ifdef TFR_HAVE_X86_CRC
/* The register after the blocks of 3 * ``block`` bytes at *p (while *n allows), each as three
 * interleaved streams of ``block`` bytes whose CRCs ``shift`` joins; *p and *n advance. */
__attribute__((target("sse4.2"))) static inline uint64_t
crc_three_streams(uint64_t r0, const unsigned char **at, size_t *left, size_t block,
                  const Shift *shift)
{
    const unsigned char *p = *at;
    size_t n = *left;
    while (n >= 3 * block) {
        uint64_t r1 = 0, r2 = 0;
        const unsigned char *end = p + block;
        do {
            uint64_t a, b, c;
            memcpy(&a, p, 8);
            memcpy(&b, p + block, 8);
            memcpy(&c, p + 2 * block, 8);
            r0 = _mm_crc32_u64(r0, a);
            r1 = _mm_crc32_u64(r1, b);
            r2 = _mm_crc32_u64(r2, c);
            p += 8;
        } while (p < end);
        r0 = crc_shift(shift, (uint32_t)r0) ^ (uint32_t)r1;
        r0 = crc_shift(shift, (uint32_t)r0) ^ (uint32_t)r2;
        p += 2 * block;
        n -= 3 * block;
    }
    *at = p;
    *left = n;
    return r0;
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hardware_update(uint32_t reg, const unsigned char *p, size_t n)
{
    uint64_t r0 = reg;
    while (n && ((uintptr_t)p & 7)) {
        r0 = _mm_crc32_u8((uint32_t)r0, *p++);
        n--;
    }
    r0 = crc_three_streams(r0, &p, &n, LONG_BLOCK, &long_shift);
    r0 = crc_three_streams(r0, &p, &n, SHORT_BLOCK, &short_shift);
    while (n >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        r0 = _mm_crc32_u64(r0, a);
        p += 8;
        n -= 8;
    }
    while (n--) {
        r0 = _mm_crc32_u8((uint32_t)r0, *p++);
    }
    return (uint32_t)r0;
}
#endif

/* Fill the tables and detect the CPU (once; callers hold the GIL). */
static void
crc_prepare(void)
{
    if (crc_ready) {
        return;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) {
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        }
        slice_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int k = 1; k < 8; k++) {
            uint32_t previous = slice_table[k - 1][n];
            slice_table[k][n] = (previous >> 8) ^ slice_table[0][previous & 0xff];
        }
    }
    fill_shift(&long_shift, LONG_BLOCK);
    fill_shift(&short_shift, SHORT_BLOCK);
#ifdef TFR_HAVE_X86_CRC
    __builtin_cpu_init();
    crc_hardware = __builtin_cpu_supports("sse4.2") != 0;
#endif
    crc_ready = 1;
}

/* The crc32c of ``n`` bytes at ``p``; ``portable`` forces the table implementation. */
static uint32_t
crc32c_of(const unsigned char *p, size_t n, int portable)
{
#ifdef TFR_HAVE_X86_CRC
    if (crc_hardware && !portable) {
        return ~crc_hardware_update(0xffffffffu, p, n);
    }
#endif
    (void)portable;
    return ~crc_portable(0xffffffffu, p, n);
}

/* The masked CRC that TFRecord stores for ``n`` bytes at ``p``. */
static uint32_t
masked_crc(const unsigned char *p, size_t n)
{
    uint32_t c = crc32c_of(p, n, 0);
    return ((c >> 15) | (c << 17)) + MASK_DELTA;
}

static void
put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t
get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t
get_u64(const unsigned char *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* --- crc32c ------------------------------------------------------------------------------- */

PyDoc_STRVAR(crc32c_doc,
"crc32c(data, portable=False, /) -> int\n\n"
"The CRC32C of the bytes-like ``data``, as crc32c.crc32c(data). ``portable=True`` uses the\n"
"table implementation even on a CPU with the crc32 instruction (both give the same results).");

static PyObject *
frames_crc32c(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int portable = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*|p:crc32c", &view, &portable)) {
        return NULL;
    }
    crc_prepare();
    uint32_t crc;
    Py_BEGIN_ALLOW_THREADS
    crc = crc32c_of((const unsigned char *)view.buf, (size_t)view.len, portable);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* --- frame_records ------------------------------------------------------------------------ */

PyDoc_STRVAR(frame_records_doc,
"frame_records(records, start, limit, /) -> tuple[bytes, int]\n\n"
"Frames records[start:stop] of the list or tuple ``records`` as a TFRecord stream, one bytes\n"
"object, and returns it with ``stop``. Records are taken while the framed size is below\n"
"``limit``, and at least one when start < len(records): stop is len(records) or the first\n"
"index not taken. A record that is not bytes ends the batch before it, or raises TypeError\n"
"(the message of TFRecordWriter.write) when it would be the first; a start outside\n"
"0..len(records) raises ValueError.");

/* TypeError for a record that is not bytes, worded as TFRecordWriter.write words it. */
static PyObject *
not_bytes(PyObject *item)
{
    PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(item), "__name__");
    if (name != NULL) {
        PyErr_Format(PyExc_TypeError, "TFRecordWriter.write expects bytes, got %U", name);
        Py_DECREF(name);
    }
    return NULL;
}

static PyObject *
frame_records(PyObject *self, PyObject *args)
{
    PyObject *records;
    Py_ssize_t start, limit;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onn:frame_records", &records, &start, &limit)) {
        return NULL;
    }
    if (!PyList_Check(records) && !PyTuple_Check(records)) {
        return PyErr_Format(PyExc_TypeError, "frame_records expects a list or tuple of bytes, "
                            "got %.200s", Py_TYPE(records)->tp_name);
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(records);
    PyObject **items = PySequence_Fast_ITEMS(records);
    if (start < 0 || start > count) {
        return PyErr_Format(PyExc_ValueError, "start %zd is out of range for %zd records", start,
                            count);
    }
    Py_ssize_t total = 0, stop = start;
    while (stop < count && (total < limit || stop == start)) {
        PyObject *item = items[stop];
        if (!PyBytes_Check(item)) {
            if (stop == start) {
                return not_bytes(item);
            }
            break;
        }
        Py_ssize_t size = PyBytes_GET_SIZE(item);
        if (size > PY_SSIZE_T_MAX - FRAME_SIZE - total) {
            break; /* never for the first record: a bytes object is smaller than this */
        }
        total += size + FRAME_SIZE;
        stop++;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) {
        return NULL;
    }
    crc_prepare();
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = start; i < stop; i++) {
        const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(items[i]);
        size_t size = (size_t)PyBytes_GET_SIZE(items[i]);
        uint64_t length = size;
        for (int k = 0; k < 8; k++) {
            p[k] = (unsigned char)(length >> (8 * k));
        }
        put_u32(p + 8, masked_crc(p, 8));
        memcpy(p + HEADER_SIZE, data, size);
        put_u32(p + HEADER_SIZE + size, masked_crc(data, size));
        p += size + FRAME_SIZE;
    }
    return Py_BuildValue("(Nn)", out, stop);
}

/* --- scan_frames -------------------------------------------------------------------------- */

/* Where the whole (and, with ``verify``, checked) frames of buf[pos:size] end, and in ``*count``
 * how many there are: the frames are found without the GIL, and their records made after. */
static size_t
frames_end(const unsigned char *buf, size_t size, size_t pos, int verify, Py_ssize_t *count)
{
    *count = 0;
    while (size - pos >= FRAME_SIZE) {
        const unsigned char *header = buf + pos;
        uint64_t length = get_u64(header);
        if (verify && masked_crc(header, 8) != get_u32(header + 8)) {
            break;
        }
        if (length > size - pos - FRAME_SIZE) {
            break; /* cut off by the end of the buffer */
        }
        const unsigned char *data = header + HEADER_SIZE;
        if (verify && masked_crc(data, (size_t)length) != get_u32(data + length)) {
            break;
        }
        pos += (size_t)length + FRAME_SIZE;
        (*count)++;
    }
    return pos;
}

/* The buffer of ``buffer`` in ``view`` for a scan from ``start``: 0, or -1 with an error set (and
 * nothing held) when it has none or ``start`` lies outside it. */
static int
scan_view(PyObject *buffer, Py_ssize_t start, Py_buffer *view)
{
    if (PyObject_GetBuffer(buffer, view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (start < 0 || start > view->len) {
        PyErr_Format(PyExc_ValueError, "start %zd is out of range for a buffer of %zd bytes",
                     start, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(scan_frames_doc,
"scan_frames(buffer, start, verify, /) -> tuple[list[bytes], int]\n\n"
"The data of the whole frames at ``buffer[start:]`` (a bytes-like object), in order, and the\n"
"position after the last one taken: the first frame that is cut off by the end of the buffer\n"
"or, when ``verify`` is true, whose length CRC or data CRC is wrong, is not taken and ends\n"
"the scan (the caller examines it). A start outside 0..len(buffer) raises ValueError.");

static PyObject *
scan_frames(PyObject *self, PyObject *args)
{
    PyObject *buffer;
    Py_buffer view;
    Py_ssize_t start;
    int verify, views = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onp|p:scan_frames", &buffer, &start, &verify, &views)
        || scan_view(buffer, start, &view) < 0) {
        return NULL;
    }
    PyObject *records, *whole = NULL, *result = NULL;
    if (views && (whole = PyMemoryView_FromObject(buffer)) == NULL) {
        goto done;
    }
    crc_prepare();
    const unsigned char *buf = (const unsigned char *)view.buf;
    size_t size = (size_t)view.len, pos = (size_t)start;
    Py_ssize_t count;
    Py_BEGIN_ALLOW_THREADS
    frames_end(buf, size, pos, verify, &count);
    Py_END_ALLOW_THREADS
    records = PyList_New(count);
    if (records == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t length = get_u64(buf + pos);
        const unsigned char *data = buf + pos + HEADER_SIZE;
        Py_ssize_t at = (Py_ssize_t)(pos + HEADER_SIZE);
        PyObject *record = views ? PySequence_GetSlice(whole, at, at + (Py_ssize_t)length)
                                 : PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)length);
        if (record == NULL) {
            Py_DECREF(records);
            goto done;
        }
        PyList_SET_ITEM(records, i, record);
        pos += (size_t)length + FRAME_SIZE;
    }
    result = Py_BuildValue("(Nn)", records, (Py_ssize_t)pos);
done:
    Py_XDECREF(whole);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(scan_spans_doc,
"scan_spans(buffer, start, verify, /) -> tuple[Spans, int]\n\n"
"As scan_frames, with the records as a Spans of ``buffer`` (no object per record): the buffer\n"
"must stay as it is while the Spans, or anything made of it, lives.");

static PyObject *
scan_spans(PyObject *self, PyObject *args)
{
    PyObject *buffer;
    Py_buffer view;
    Py_ssize_t start;
    int verify;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onp:scan_spans", &buffer, &start, &verify)
        || scan_view(buffer, start, &view) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    crc_prepare();
    const unsigned char *buf = (const unsigned char *)view.buf;
    size_t size = (size_t)view.len, pos = (size_t)start;
    Py_ssize_t n;
    Py_BEGIN_ALLOW_THREADS
    frames_end(buf, size, pos, verify, &n);
    Py_END_ALLOW_THREADS
    TfrSpans *spans = tfr_spans_new(buffer, n);
    if (spans == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t length = get_u64(buf + pos);
        spans->data[i] = buf + pos + HEADER_SIZE;
        spans->sizes[i] = (Py_ssize_t)length;
        pos += (size_t)length + FRAME_SIZE;
    }
    result = Py_BuildValue("(Nn)", (PyObject *)spans, (Py_ssize_t)pos);
done:
    PyBuffer_Release(&view);
    return result;
}

PyMethodDef tfr_frames_methods[] = {
    {"scan_spans", scan_spans, METH_VARARGS, scan_spans_doc},
    {"crc32c", frames_crc32c, METH_VARARGS, crc32c_doc},
    {"frame_records", frame_records, METH_VARARGS, frame_records_doc},
    {"scan_frames", scan_frames, METH_VARARGS, scan_frames_doc},
    {NULL, NULL, 0, NULL},
};
