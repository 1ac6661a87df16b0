/*
 * Packed varints decoded several at a time: tfr_decode_varints, used by the Int64List decoders of
 * speedups.c and plan.c.
 *
 * Int64List payloads are mostly one- and two-byte varints (small counts, ids, pixel values). On
 * x86-64 CPUs with SSE4.1, the continuation bits of 64 bytes are gathered into one 64-bit mask
 * (pmovmskb); each 8-bit window of that mask indexes a table that says how many whole varints of
 * one or two bytes start the window, how many bytes they take, and the byte shuffle (pshufb) that
 * puts each into a 16-bit lane, where two masks and a shift join its 7-bit groups. Up to eight
 * values are widened to 64 bits and stored per step; the only serial work is the mask's offset. A
 * window that starts with a longer varint, the last bytes, and CPUs without SSE4.1 take the
 * portable loop, which reads eight one-byte varints at a time and the rest one by one.
 *
 * The caller has checked the payload: ``count`` of its bytes are below 0x80 and the last one is,
 * so every varint ends inside it. Loads stay inside d[0:size] and stores inside out[0:count].
 */
#include "speedups.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TFR_HAVE_X86_SIMD 1
#include <immintrin.h>
#endif

/* The whole one- and two-byte varints at the start of an 8-byte window, by its continuation bits
 * (bit i: byte i is >= 0x80). */
typedef struct {
    uint8_t count;       /* how many (0: the window starts with a longer varint) */
    uint8_t used;        /* the bytes they take */
    uint8_t shuffle[16]; /* byte lanes: value k's first byte to lane 2k, its second (if any) to
                          * lane 2k + 1; 0x80 clears a lane */
} Window;

static Window windows[256];
static int simd_ready; /* the table is filled and the CPU has SSE4.1 (and SSSE3) */

/* Store ``value`` as 8 little-endian bytes at out[i]. */
static inline void
store_value(uint64_t *out, Py_ssize_t i, uint64_t value)
{
#if PY_BIG_ENDIAN
    uint8_t *p = (uint8_t *)(out + i);
    for (int k = 0; k < 8; k++) {
        p[k] = (uint8_t)(value >> (8 * k));
    }
#else
    out[i] = value;
#endif
}

/* The varint at d[*pos] (which ends inside the payload); -1 when it is longer than 10 bytes. */
static inline int
one_varint(const uint8_t *d, Py_ssize_t *pos, uint64_t *value)
{
    uint64_t result = d[*pos] & 0x7F;
    if (d[(*pos)++] < 0x80) {
        *value = result;
        return 0;
    }
    for (int shift = 7; shift < 70; shift += 7) {
        uint64_t byte = d[(*pos)++];
        result |= (byte & 0x7F) << shift;
        if (byte < 0x80) {
            *value = result;
            return 0;
        }
    }
    return -1;
}

/* The portable loop from varint ``k`` at d[pos] on; see tfr_decode_varints. */
static Py_ssize_t
decode_portable(const uint8_t *d, Py_ssize_t size, Py_ssize_t pos, uint64_t *out,
                Py_ssize_t k, Py_ssize_t count)
{
    while (pos < size && k < count) {
        if (size - pos >= 8 && count - k >= 8) {
            uint64_t word;
            memcpy(&word, d + pos, 8);
            if (!(word & 0x8080808080808080u)) { /* eight one-byte varints */
                for (int j = 0; j < 8; j++) {
                    store_value(out, k + j, d[pos + j]);
                }
                pos += 8;
                k += 8;
                continue;
            }
        }
        Py_ssize_t at = pos;
        uint64_t value;
        if (one_varint(d, &pos, &value) < 0) {
            return at;
        }
        store_value(out, k++, value);
    }
    return -1;
}

#ifdef TFR_HAVE_X86_SIMD
/* The continuation bits of the 64 bytes at p, bit i for byte i. */
__attribute__((target("sse4.1"))) static inline uint64_t
continuation_bits(const uint8_t *p)
{
    uint64_t bits = 0;
    for (int i = 0; i < 4; i++) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)(p + 16 * i));
        bits |= (uint64_t)(uint16_t)_mm_movemask_epi8(bytes) << (16 * i);
    }
    return bits;
}

__attribute__((target("sse4.1"))) static Py_ssize_t
decode_simd(const uint8_t *d, Py_ssize_t size, uint64_t *out, Py_ssize_t count)
{
    const __m128i low = _mm_set1_epi16(0x007F), high = _mm_set1_epi16(0x7F00);
    Py_ssize_t pos = 0, k = 0;
    while (size - pos >= 64 && count - k >= 8) {
        uint64_t bits = continuation_bits(d + pos);
        unsigned offset = 0;
        while (offset <= 56 && count - k >= 8) {
            const Window *w = &windows[(bits >> offset) & 0xFF];
            if (w->count == 0) {
                break;
            }
            __m128i x = _mm_loadl_epi64((const __m128i *)(d + pos + offset));
            x = _mm_shuffle_epi8(x, _mm_loadu_si128((const __m128i *)w->shuffle));
            x = _mm_or_si128(_mm_and_si128(x, low), _mm_srli_epi16(_mm_and_si128(x, high), 1));
            _mm_storeu_si128((__m128i *)(out + k), _mm_cvtepu16_epi64(x));
            _mm_storeu_si128((__m128i *)(out + k + 2), _mm_cvtepu16_epi64(_mm_srli_si128(x, 4)));
            _mm_storeu_si128((__m128i *)(out + k + 4), _mm_cvtepu16_epi64(_mm_srli_si128(x, 8)));
            _mm_storeu_si128((__m128i *)(out + k + 6), _mm_cvtepu16_epi64(_mm_srli_si128(x, 12)));
            k += w->count;
            offset += w->used;
        }
        pos += offset;
        if (offset <= 56 && count - k >= 8) { /* a varint of three or more bytes */
            Py_ssize_t at = pos;
            uint64_t value;
            if (one_varint(d, &pos, &value) < 0) {
                return at;
            }
            out[k++] = value;
        }
    }
    return decode_portable(d, size, pos, out, k, count);
}
#endif

/* Fill the window table and learn whether the CPU can use it. */
void
tfr_varint_init(void)
{
    for (unsigned bits = 0; bits < 256; bits++) {
        Window *w = &windows[bits];
        memset(w->shuffle, 0x80, sizeof w->shuffle);
        unsigned i = 0, n = 0;
        while (i < 8) {
            if (!(bits >> i & 1)) { /* one byte */
                w->shuffle[2 * n] = (uint8_t)i;
                i += 1;
            }
            else if (i + 1 < 8 && !(bits >> (i + 1) & 1)) { /* two bytes */
                w->shuffle[2 * n] = (uint8_t)i;
                w->shuffle[2 * n + 1] = (uint8_t)(i + 1);
                i += 2;
            }
            else { /* longer, or cut off by the window's end */
                break;
            }
            n++;
        }
        w->count = (uint8_t)n;
        w->used = (uint8_t)i;
    }
#ifdef TFR_HAVE_X86_SIMD
    __builtin_cpu_init();
    simd_ready = __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3");
#endif
}

Py_ssize_t
tfr_decode_varints(const uint8_t *d, Py_ssize_t size, uint64_t *out, Py_ssize_t count,
                   int portable)
{
#ifdef TFR_HAVE_X86_SIMD
    if (simd_ready && !portable) {
        return decode_simd(d, size, out, count);
    }
#endif
    (void)portable;
    return decode_portable(d, size, 0, out, 0, count);
}

/* --- decode_varints (tests compare its two paths with the pure-Python decoder) --------------- */

static PyObject *
decode_varints(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    int portable = 0;
    if (!PyArg_ParseTuple(args, "y*|p:decode_varints", &view, &portable)) {
        return NULL;
    }
    const uint8_t *d = view.buf;
    Py_ssize_t size = view.len, count = 0;
    PyObject *result = NULL;
    if (size && d[size - 1] >= 0x80) {
        PyErr_SetString(PyExc_ValueError, "decode_varints: the last varint is unfinished");
        goto done;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        count += d[i] < 0x80;
    }
    result = PyByteArray_FromStringAndSize(NULL, 8 * count);
    if (result == NULL) {
        goto done;
    }
    /* a bytearray's buffer is malloc'ed: aligned for uint64_t */
    uint64_t *out = (uint64_t *)(void *)PyByteArray_AS_STRING(result);
    Py_ssize_t bad = tfr_decode_varints(d, size, out, count, portable);
    if (bad >= 0) {
        Py_CLEAR(result);
        PyErr_Format(PyExc_ValueError,
                     "decode_varints: the varint at byte offset %zd is longer than 10 bytes", bad);
    }
done:
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(decode_varints_doc,
"decode_varints(payload, portable=False, /) -> bytearray\n\n"
"The packed varints of ``payload`` as little-endian uint64 (their low 64 bits), decoded by the\n"
"accelerator's Int64List loop: the SIMD one where the CPU has it, the portable one when\n"
"``portable`` is true. ValueError for an unfinished last varint or one longer than 10 bytes.");

PyMethodDef tfr_varint_methods[] = {
    {"decode_varints", decode_varints, METH_VARARGS, decode_varints_doc},
    {NULL, NULL, 0, NULL},
};
