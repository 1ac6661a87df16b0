/*
 * codegen._speedups: the optional C accelerator of the tf.train.Example wire codec.
 *
 * Same contracts as codegen/runtime/wire.py (see its module docstring): identical results and
 * identical RecordError messages, byte offsets included. Plain C99 and the Python C API; numeric
 * values come back as little-endian bytearrays for np.frombuffer.
 *
 * The work is linear in the input: a map entry not in protobuf's canonical form is read twice
 * (its keys, then its value pieces) and a replaced or merged list body once more, as wire.py
 * checks them. A length read from the input is compared with what is left before it is used, so
 * no allocation is ever sized by it: output arrays hold what the input holds, and the only other
 * memory is the stack of open unknown groups (4 bytes per start-group tag below 4 GiB) and
 * scan_batch's table of the requested keys.
 */
#include "speedups.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_START_GROUP = 3, WT_END_GROUP = 4, WT_I32 = 5 };

/* Feature.kind oneof members (their field numbers), and the scan_batch marker of a missing key. */
enum { KIND_NONE = 0, KIND_BYTES = 1, KIND_FLOAT = 2, KIND_INT64 = 3, KIND_ABSENT = 255 };

static const char *const KIND_NAMES[4] = {"Feature", "BytesList", "FloatList", "Int64List"};

/*
 * Packed int64 runs longer than this many bytes are checked the way
 * codegen.runtime.varint.decode_packed_int64 checks them: an unfinished last varint is reported
 * first ("longer than 10 bytes" past ten bytes, else "truncated ... the packed values end at byte
 * offset N"). Shorter runs are read one varint at a time, like read_varint. Exposed as
 * SMALL_DECODE_BYTES; the tests keep it equal to varint's.
 */
#define SMALL_DECODE_BYTES 8

#define LENGTH_PAST_END "%s: length %llu at byte offset %zd runs past the end of the message at " \
                        "byte offset %zd"

static PyObject *RecordError; /* codegen.errors.RecordError */

#if defined(_MSC_VER)
#define THREAD_LOCAL __declspec(thread)
#else
#define THREAD_LOCAL _Thread_local
#endif

/*
 * Set while this thread decodes without holding the GIL (scan_batch): then nothing may touch a
 * Python object, so an error is only -1 (no exception is set) and whatever would need an object
 * (an error message, a merged list body, a key to check with Python's UTF-8 decoder) gives up
 * with -1; scan_batch then decodes the batch again with the GIL held, which gives the exact
 * result or error.
 */
static THREAD_LOCAL int detached;

/* --- errors ------------------------------------------------------------------------------- */

/* MemoryError (unless detached); return -1. */
static int
no_memory(void)
{
    if (!detached) {
        PyErr_NoMemory();
    }
    return -1;
}

/* Raise RecordError with a printf-style message (PyUnicode_FromFormat codes); return -1. */
static int
fail(const char *format, ...)
{
    if (detached) {
        return -1;
    }
    va_list args;
    va_start(args, format);
    PyErr_FormatV(RecordError, format, args);
    va_end(args);
    return -1;
}

/* The exception being raised, normalized, taken out of the error indicator (new reference). */
static PyObject *
take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value != NULL && traceback != NULL) {
        PyException_SetTraceback(value, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
#endif
}

/* Raise ``exception`` again (steals the reference). */
static void
give_exception(PyObject *exception)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exception);
#else
    PyObject *type = (PyObject *)Py_TYPE(exception);
    Py_INCREF(type);
    PyErr_Restore(type, exception, PyException_GetTraceback(exception));
#endif
}

/* The message of the RecordError being raised, taken out of the error indicator (a new
 * reference); NULL with any other exception left raised. */
static PyObject *
take_record_error_message(void)
{
    PyObject *exception = take_exception();
    if (exception == NULL) {
        return NULL;
    }
    if (!PyErr_GivenExceptionMatches(exception, RecordError)) {
        give_exception(exception);
        return NULL;
    }
    PyObject *message = PyObject_Str(exception);
    Py_DECREF(exception);
    return message;
}

/* --- reading fields ------------------------------------------------------------------------ */

/* One field: its number and wire type, and where its value starts and ends (the next field
 * starts at ``end``; a length-delimited value starts after the length, a group's value ends
 * after its end-group tag). */
typedef struct {
    uint32_t number;
    int wire_type;
    Py_ssize_t start;
    Py_ssize_t end;
} Field;

/* Read the varint at ``pos`` (ending before ``end``): its low 64 bits and the next position. */
static int
read_varint(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what, uint64_t *value,
            Py_ssize_t *next)
{
    Py_ssize_t start = pos;
    uint64_t result = 0;
    int shift = 0;
    while (pos < end) {
        uint8_t byte = d[pos++];
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *value = result;
            *next = pos;
            return 0;
        }
        shift += 7;
        if (shift == 70) {
            return fail("%s: the varint at byte offset %zd is longer than 10 bytes", what, start);
        }
    }
    return fail("%s: truncated varint at byte offset %zd (the message ends at byte offset %zd)",
                what, start, end);
}

/* Read the tag at ``pos`` (pos < end): field number, wire type and next position. Field number 0
 * is refused but ``in_group`` (protobuf checks no field number inside an unknown group, only that
 * each end-group tag closes the group it matches). */
static int
read_tag(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what, int in_group,
         uint32_t *number, int *wire_type, Py_ssize_t *next)
{
    uint64_t tag;
    Py_ssize_t after;
    if (d[pos] < 0x80) {
        tag = d[pos];
        after = pos + 1;
    }
    else {
        if (read_varint(d, pos, end, what, &tag, &after) < 0) {
            return -1;
        }
        if (after - pos > 5 || tag > 0xFFFFFFFFu) {
            return fail("%s: the tag at byte offset %zd is longer than 32 bits", what, pos);
        }
    }
    if (tag < 8 && !in_group) {
        return fail("%s: field number 0 in the tag at byte offset %zd", what, pos);
    }
    *number = (uint32_t)(tag >> 3);
    *wire_type = (int)(tag & 7);
    *next = after;
    return 0;
}

/* Skip the value of a non-group field whose tag (at ``tag_pos``) ended at ``pos``. */
static int
skip_value(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, int wire_type, Py_ssize_t tag_pos,
           const char *what, Py_ssize_t *next)
{
    uint64_t value;
    Py_ssize_t start;
    switch (wire_type) {
    case WT_VARINT:
        return read_varint(d, pos, end, what, &value, next);
    case WT_LEN:
        if (read_varint(d, pos, end, what, &value, &start) < 0) {
            return -1;
        }
        if (value > (uint64_t)(end - start)) {
            return fail(LENGTH_PAST_END, what, (unsigned long long)value, pos, end);
        }
        *next = start + (Py_ssize_t)value;
        return 0;
    case WT_I64:
    case WT_I32: {
        int size = wire_type == WT_I64 ? 8 : 4;
        if (end - pos < size) {
            return fail("%s: truncated fixed%d value at byte offset %zd (the message ends at "
                        "byte offset %zd)",
                        what, size * 8, pos, end);
        }
        *next = pos + size;
        return 0;
    }
    case WT_END_GROUP:
        return fail("%s: end-group tag at byte offset %zd without a matching start-group tag",
                    what, tag_pos);
    default:
        return fail("%s: invalid wire type %d in the tag at byte offset %zd (expected 0 to 5)",
                    what, wire_type, tag_pos);
    }
}

/*
 * The open groups of skip_group: the byte offsets of their start-group tags (the field numbers
 * are read again from there), relative to the outermost one, 4 bytes each when its group can
 * span at most 4 GiB, else 8.
 */
typedef struct {
    void *offsets;
    int wide;
} GroupStack;

#define LOCAL_GROUPS 32

static Py_ssize_t
group_offset(const GroupStack *stack, Py_ssize_t i)
{
    return stack->wide ? (Py_ssize_t)((const uint64_t *)stack->offsets)[i]
                       : (Py_ssize_t)((const uint32_t *)stack->offsets)[i];
}

static void
set_group_offset(GroupStack *stack, Py_ssize_t i, Py_ssize_t offset)
{
    if (stack->wide) {
        ((uint64_t *)stack->offsets)[i] = (uint64_t)offset;
    }
    else {
        ((uint32_t *)stack->offsets)[i] = (uint32_t)offset;
    }
}

/* The field number of the (already read) tag at ``pos``. */
static uint32_t
field_at(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what)
{
    uint32_t number = 0;
    int wire_type;
    Py_ssize_t after;
    (void)read_tag(d, pos, end, what, 1, &number, &wire_type, &after);
    return number;
}

/* Skip the group opened by the start-group tag at ``tag_pos`` that ends at ``pos`` (nested
 * groups included). */
static int
skip_group(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t tag_pos, const char *what,
           Py_ssize_t *next)
{
    uint64_t local[LOCAL_GROUPS];
    int wide = (uint64_t)(end - tag_pos) > UINT32_MAX;
    size_t width = wide ? sizeof(uint64_t) : sizeof(uint32_t);
    GroupStack stack = {local, wide};
    Py_ssize_t depth = 1;
    Py_ssize_t capacity = (Py_ssize_t)(sizeof local / width);
    int status = -1;
    set_group_offset(&stack, 0, 0);
    while (depth > 0) {
        if (pos >= end) {
            Py_ssize_t opened = tag_pos + group_offset(&stack, depth - 1);
            fail("%s: the group of field %u opened at byte offset %zd is not closed before byte "
                 "offset %zd",
                 what, (unsigned int)field_at(d, opened, end, what), opened, end);
            goto done;
        }
        Py_ssize_t at = pos;
        uint32_t field;
        int wire_type;
        if (read_tag(d, pos, end, what, 1, &field, &wire_type, &pos) < 0) {
            goto done;
        }
        if (wire_type == WT_START_GROUP) {
            if (depth == capacity) {
                /* Every open group took at least one byte of the input. */
                void *grown = PyMem_RawMalloc((size_t)capacity * 2 * width);
                if (grown == NULL) {
                    no_memory();
                    goto done;
                }
                memcpy(grown, stack.offsets, (size_t)depth * width);
                if (stack.offsets != (void *)local) {
                    PyMem_RawFree(stack.offsets);
                }
                stack.offsets = grown;
                capacity *= 2;
            }
            set_group_offset(&stack, depth++, at - tag_pos);
        }
        else if (wire_type == WT_END_GROUP) {
            Py_ssize_t opened = tag_pos + group_offset(&stack, --depth);
            uint32_t expected = field_at(d, opened, end, what);
            if (field != expected) {
                fail("%s: end-group tag of field %u at byte offset %zd does not match the group "
                     "of field %u opened at byte offset %zd",
                     what, (unsigned int)field, at, (unsigned int)expected, opened);
                goto done;
            }
        }
        else if (skip_value(d, pos, end, wire_type, at, what, &pos) < 0) {
            goto done;
        }
    }
    *next = pos;
    status = 0;
done:
    if (stack.offsets != (void *)local) {
        PyMem_RawFree(stack.offsets);
    }
    return status;
}

/* Read the field at ``pos`` (pos < end) into ``f``. */
static int
next_field(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what, Field *f)
{
    Py_ssize_t tag_pos = pos;
    uint8_t byte = d[pos];
    if (byte >= 8 && byte < 0x80) {
        f->number = byte >> 3;
        f->wire_type = byte & 7;
        pos++;
    }
    else if (read_tag(d, pos, end, what, 0, &f->number, &f->wire_type, &pos) < 0) {
        return -1;
    }
    if (f->wire_type == WT_LEN) {
        uint64_t length;
        Py_ssize_t start;
        if (pos < end && d[pos] < 0x80) {
            length = d[pos];
            start = pos + 1;
        }
        else if (read_varint(d, pos, end, what, &length, &start) < 0) {
            return -1;
        }
        if (length > (uint64_t)(end - start)) {
            return fail(LENGTH_PAST_END, what, (unsigned long long)length, pos, end);
        }
        f->start = start;
        f->end = start + (Py_ssize_t)length;
        return 0;
    }
    f->start = pos;
    if (f->wire_type == WT_START_GROUP) {
        return skip_group(d, pos, end, tag_pos, what, &f->end);
    }
    return skip_value(d, pos, end, f->wire_type, tag_pos, what, &f->end);
}

/* Raise unless d[pos:end] is a sequence of well-formed fields. */
static int
check_message(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what)
{
    Field f;
    while (pos < end) {
        if (next_field(d, pos, end, what, &f) < 0) {
            return -1;
        }
        pos = f.end;
    }
    return 0;
}

/* Raise unless the map key d[start:end] is UTF-8 (Python's decoder gives the reason). */
static int
check_key(const uint8_t *d, Py_ssize_t start, Py_ssize_t end, const char *what)
{
    if (tfr_is_ascii(d + start, end - start)) {
        return 0;
    }
    if (detached) {
        return -1;
    }
    PyObject *text = PyUnicode_DecodeUTF8((const char *)d + start, end - start, "strict");
    if (text != NULL) {
        Py_DECREF(text);
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        return -1;
    }
    PyObject *exception = take_exception();
    if (exception == NULL) {
        return -1;
    }
    PyObject *reason = PyUnicodeDecodeError_GetReason(exception);
    Py_DECREF(exception);
    if (reason == NULL) {
        return -1;
    }
    fail("%s: the map key at byte offset %zd is not valid UTF-8 (%U)", what, start, reason);
    Py_DECREF(reason);
    return -1;
}

/* --- output columns ------------------------------------------------------------------------ */

/* A Block that grows by doubling; ``used`` bytes of it are filled. */
typedef struct {
    PyObject *block;
    Py_ssize_t used;
    Py_ssize_t capacity;
    int presized; /* see column_presize */
} Column;

/* An empty column; a ``pooled`` one (a batch column) recycles its memory (see Block). */
static int
column_open(Column *column, int pooled)
{
    column->used = 0;
    column->capacity = 0;
    column->presized = 0;
    column->block = tfr_block_new(0, pooled);
    return column->block == NULL ? -1 : 0;
}

/* Room for ``extra`` more bytes: where they go, or NULL with MemoryError. */
static uint8_t *
column_reserve(Column *column, Py_ssize_t extra)
{
    if (extra > column->capacity - column->used) {
        if (extra > PY_SSIZE_T_MAX / 2 - column->used) {
            no_memory();
            return NULL;
        }
        Py_ssize_t wanted = column->used + extra;
        Py_ssize_t capacity = column->capacity * 2;
        if (capacity < wanted) {
            capacity = wanted;
        }
        if (tfr_block_grow(column->block, capacity, column->used) < 0) {
            no_memory();
            return NULL;
        }
        column->capacity = tfr_block_capacity(column->block);
    }
    return tfr_block_data(column->block) + column->used;
}

/*
 * After a batch column's first values (``per_record`` bytes, from one record): room for
 * ``records`` more records of that size, but never more than ``most`` (what the rest of the input
 * can hold), so that a column of equal records is allocated once, at its final size, rather than
 * grown by doubling (each growth is fresh memory to fault in, and sizes that vary from batch to
 * batch keep the allocator from reusing what the last batch freed). 0, or -1 with MemoryError.
 */
static int
column_presize(Column *column, Py_ssize_t per_record, Py_ssize_t records, Py_ssize_t most)
{
    if (column->presized || per_record == 0) {
        return 0;
    }
    column->presized = 1;
    if (records == 0) {
        return 0;
    }
    Py_ssize_t room = per_record > most / records ? most : per_record * records;
    return column_reserve(column, room) == NULL ? -1 : 0;
}

/* The filled Block (the column gives up its reference), or NULL on error. */
static PyObject *
column_close(Column *column)
{
    PyObject *block = column->block;
    column->block = NULL;
    if (tfr_block_finish(block, column->used) < 0) {
        Py_DECREF(block);
        return NULL;
    }
    return block;
}

static void
store_le64(uint8_t *p, uint64_t value)
{
#if PY_BIG_ENDIAN
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(value >> (8 * i));
    }
#else
    memcpy(p, &value, 8);
#endif
}

static uint64_t
load_le64(const uint8_t *p)
{
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--) {
        value = value << 8 | p[i];
    }
    return value;
}

static uint64_t
load_native64(const uint8_t *p)
{
    uint64_t value;
    memcpy(&value, p, 8);
    return value;
}

/* --- decoding list bodies ----------------------------------------------------------------- */

/* How many bytes of p[0:size] end a varint (have the high bit clear). */
static Py_ssize_t
count_varint_ends(const uint8_t *p, Py_ssize_t size)
{
    Py_ssize_t count = 0, i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t ends = ~load_native64(p + i) >> 7 & 0x0101010101010101u;
        count += (Py_ssize_t)(ends * 0x0101010101010101u >> 56); /* the sum of the eight bytes */
    }
    for (; i < size; i++) {
        count += p[i] < 0x80;
    }
    return count;
}

/*
 * Append the int64 values of the packed varints d[start:end] to ``out`` (NULL: only check them),
 * with the errors of codegen.runtime.varint.decode_packed_int64.
 */
static int
decode_packed_int64(const uint8_t *d, Py_ssize_t start, Py_ssize_t end, const char *what,
                    Column *out)
{
    if (end - start > SMALL_DECODE_BYTES && d[end - 1] >= 0x80) {
        Py_ssize_t begin = end - 1;
        while (begin > start && d[begin - 1] >= 0x80) {
            begin--;
        }
        if (end - begin > 10) {
            return fail("%s: the varint at byte offset %zd is longer than 10 bytes", what, begin);
        }
        return fail("%s: truncated varint at byte offset %zd (the packed values end at byte "
                    "offset %zd)",
                    what, begin, end);
    }
    if (out != NULL && end > start && d[end - 1] < 0x80) {
        /* every varint ends inside the run: decode them all at once */
        Py_ssize_t count = count_varint_ends(d + start, end - start);
        uint8_t *o = column_reserve(out, 8 * count);
        if (o == NULL) {
            return -1;
        }
        /* a bytearray's buffer, holding only int64 values: aligned for uint64_t */
        uint64_t *values = (uint64_t *)(void *)o;
        Py_ssize_t bad = tfr_decode_varints(d + start, end - start, values, count, 0);
        if (bad >= 0) {
            return fail("%s: the varint at byte offset %zd is longer than 10 bytes", what,
                        start + bad);
        }
        out->used += 8 * count;
        return 0;
    }
    /* Only checking, or a short run that ends inside a varint: the first error, as read_varint
     * reports it. */
    for (Py_ssize_t pos = start; pos < end;) {
        Py_ssize_t at = pos;
        while (d[pos++] >= 0x80) {
            if (pos - at == 10) {
                return fail("%s: the varint at byte offset %zd is longer than 10 bytes", what, at);
            }
            if (pos >= end) {
                return fail("%s: truncated varint at byte offset %zd (the message ends at byte "
                            "offset %zd)",
                            what, at, end);
            }
        }
    }
    return 0;
}

/* Append the values of the Int64List body d[0:end] to ``out`` (NULL: only check it). */
static int
decode_int64_body(const uint8_t *d, Py_ssize_t end, Column *out)
{
    Py_ssize_t pos = 0;
    Field f;
    while (pos < end) {
        if (next_field(d, pos, end, "Int64List", &f) < 0) {
            return -1;
        }
        pos = f.end;
        if (f.number != 1) {
            continue;
        }
        if (f.wire_type == WT_LEN) {
            if (decode_packed_int64(d, f.start, f.end, "Int64List", out) < 0) {
                return -1;
            }
        }
        else if (f.wire_type == WT_VARINT && out != NULL) {
            uint64_t value;
            Py_ssize_t after;
            if (read_varint(d, f.start, f.end, "Int64List", &value, &after) < 0) {
                return -1;
            }
            uint8_t *o = column_reserve(out, 8);
            if (o == NULL) {
                return -1;
            }
            store_le64(o, value);
            out->used += 8;
        }
    }
    return 0;
}

/* Append the float32 values of the FloatList body d[0:end] to ``out`` (NULL: only check it). */
static int
decode_float_body(const uint8_t *d, Py_ssize_t end, Column *out)
{
    Py_ssize_t pos = 0;
    Field f;
    while (pos < end) {
        if (next_field(d, pos, end, "FloatList", &f) < 0) {
            return -1;
        }
        pos = f.end;
        if (f.number != 1 || (f.wire_type != WT_I32 && f.wire_type != WT_LEN)) {
            continue;
        }
        Py_ssize_t size = f.end - f.start;
        if (size % 4) {
            return fail("FloatList: the packed floats at byte offset %zd take %zd bytes, not a "
                        "multiple of 4",
                        f.start, size);
        }
        if (out != NULL && size > 0) {
            uint8_t *o = column_reserve(out, size);
            if (o == NULL) {
                return -1;
            }
            memcpy(o, d + f.start, (size_t)size);
            out->used += size;
        }
    }
    return 0;
}

/* The bytes values of a BytesList go to a list of bytes objects, or (``blob`` set) one after
 * another into ``blob`` with the size of each in ``sizes`` (int64), or nowhere (only checked). */
typedef struct {
    PyObject *list;
    Column *blob;
    Column *sizes;
} BytesOut;

/* Append the values of the BytesList body d[0:end] to ``out`` (NULL: only check it). */
static int
decode_bytes_body(const uint8_t *d, Py_ssize_t end, const BytesOut *out)
{
    Py_ssize_t pos = 0;
    Field f;
    uint8_t *to = NULL, *size_to = NULL;
    if (out != NULL && out->blob != NULL) {
        /* Room for every value at once, and exactly: a column presized for records of equal
         * values must not grow at its last record (fresh memory, a copy, and a block the pool
         * cannot give the next batch). The fields are checked on the way. */
        Py_ssize_t total = 0, count = 0;
        for (; pos < end; pos = f.end) {
            if (next_field(d, pos, end, "BytesList", &f) < 0) {
                return -1;
            }
            if (f.number == 1 && f.wire_type == WT_LEN) {
                total += f.end - f.start;
                count++;
            }
        }
        if (count == 0) {
            return 0;
        }
        to = column_reserve(out->blob, total);
        size_to = to == NULL ? NULL : column_reserve(out->sizes, 8 * count);
        if (size_to == NULL) {
            return -1;
        }
        pos = 0;
    }
    while (pos < end) {
        if (next_field(d, pos, end, "BytesList", &f) < 0) {
            return -1;
        }
        pos = f.end;
        if (f.number != 1 || f.wire_type != WT_LEN || out == NULL) {
            continue;
        }
        Py_ssize_t size = f.end - f.start;
        if (out->blob != NULL) {
            memcpy(to, d + f.start, (size_t)size);
            to += size;
            out->blob->used += size;
            store_le64(size_to, (uint64_t)size);
            size_to += 8;
            out->sizes->used += 8;
            continue;
        }
        PyObject *value = PyBytes_FromStringAndSize((const char *)d + f.start, size);
        if (value == NULL) {
            return -1;
        }
        int status = PyList_Append(out->list, value);
        Py_DECREF(value);
        if (status < 0) {
            return -1;
        }
    }
    return 0;
}

/* Raise unless d[0:size] is a valid list body of ``kind`` (what the decode_* functions accept). */
static int
check_list(int kind, const uint8_t *d, Py_ssize_t size)
{
    switch (kind) {
    case KIND_BYTES:
        return decode_bytes_body(d, size, NULL);
    case KIND_FLOAT:
        return decode_float_body(d, size, NULL);
    default:
        return decode_int64_body(d, size, NULL);
    }
}

/* --- Feature messages ---------------------------------------------------------------------- */

/*
 * The pieces of one Feature: the value fields (field 2) of a map entry d[entry_pos:entry_end],
 * or a single piece when the entry part is empty. A cursor over the fields of all pieces.
 */
typedef struct {
    Py_ssize_t entry_pos;
    Py_ssize_t entry_end;
    Py_ssize_t pos; /* what is left of the current piece */
    Py_ssize_t end;
} Pieces;

/* The next field of the pieces into ``f``: 1, or 0 after the last one, or -1 on error. */
static int
pieces_next(const uint8_t *d, Pieces *c, const char *what, Field *f)
{
    while (c->pos >= c->end) {
        if (c->entry_pos >= c->entry_end) {
            return 0;
        }
        Field value;
        if (next_field(d, c->entry_pos, c->entry_end, what, &value) < 0) {
            return -1;
        }
        c->entry_pos = value.end;
        if (value.number == 2 && value.wire_type == WT_LEN) {
            c->pos = value.start;
            c->end = value.end;
        }
    }
    if (next_field(d, c->pos, c->end, what, f) < 0) {
        return -1;
    }
    c->pos = f->end;
    return 1;
}

/* A parsed Feature: its kind and list body, d[start:end] or the bytes ``owner`` (a body merged
 * from several pieces, owned by whoever holds the Feature). */
typedef struct {
    int kind;
    Py_ssize_t start;
    Py_ssize_t end;
    PyObject *owner;
} Feature;

/* Raise unless each list of ``kind`` among the first ``count`` fields from ``mark`` is valid
 * (a later member of Feature.kind replaced them). */
static int
check_replaced(const uint8_t *d, Pieces mark, Py_ssize_t count, int kind, const char *what)
{
    Field f;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (pieces_next(d, &mark, what, &f) < 0) {
            return -1;
        }
        if (f.wire_type != WT_LEN || (int)f.number != kind) {
            continue;
        }
        if (check_list(kind, d + f.start, f.end - f.start) < 0) {
            if (detached) {
                return -1;
            }
            PyObject *message = take_record_error_message();
            if (message != NULL) {
                fail("%s: the %s at byte offset %zd (replaced by a later member of Feature.kind) "
                     "is malformed: %U",
                     what, KIND_NAMES[kind], f.start, message);
                Py_DECREF(message);
            }
            return -1;
        }
    }
    return 0;
}

/* Join the lists of ``kind`` among the first ``count`` fields from ``mark`` (``size`` bytes in
 * all) into feature->owner, checking each like wire.py's _check_message. */
static int
merge_lists(const uint8_t *d, Pieces mark, Py_ssize_t count, int kind, Py_ssize_t size,
            const char *what, Feature *feature)
{
    if (detached) {
        return -1;
    }
    char list_what[160];
    PyOS_snprintf(list_what, sizeof list_what, "%s %s", what, KIND_NAMES[kind]);
    PyObject *merged = PyBytes_FromStringAndSize(NULL, size);
    if (merged == NULL) {
        return -1;
    }
    char *out = PyBytes_AS_STRING(merged);
    Field f;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (pieces_next(d, &mark, what, &f) < 0) {
            Py_DECREF(merged);
            return -1;
        }
        if (f.wire_type != WT_LEN || (int)f.number != kind) {
            continue;
        }
        if (check_message(d, f.start, f.end, list_what) < 0) {
            Py_DECREF(merged);
            return -1;
        }
        memcpy(out, d + f.start, (size_t)(f.end - f.start));
        out += f.end - f.start;
    }
    feature->owner = merged;
    return 0;
}

/* The Feature merged from ``pieces``: the last member of the kind oneof wins, occurrences of
 * the same member merge (their bodies concatenated). */
static int
read_feature(const uint8_t *d, Pieces pieces, const char *what, Feature *feature)
{
    int kind = KIND_NONE;
    Pieces mark = pieces;   /* where the first list of the current kind starts */
    Py_ssize_t fields = 0;  /* fields read from mark on */
    Py_ssize_t lists = 0;   /* lists of the current kind */
    Py_ssize_t size = 0;    /* their bytes in all */
    Field f, first = {0, 0, 0, 0};
    for (;;) {
        Pieces before = pieces;
        int found = pieces_next(d, &pieces, what, &f);
        if (found < 0) {
            return -1;
        }
        if (found == 0) {
            break;
        }
        fields++;
        if (f.wire_type != WT_LEN || f.number < 1 || f.number > 3) {
            continue;
        }
        if ((int)f.number != kind) {
            if (kind != KIND_NONE && check_replaced(d, mark, fields - 1, kind, what) < 0) {
                return -1;
            }
            kind = (int)f.number;
            mark = before;
            fields = 1;
            lists = 0;
            size = 0;
        }
        if (lists == 0) {
            first = f;
        }
        lists++;
        size += f.end - f.start;
    }
    feature->kind = kind;
    feature->owner = NULL;
    feature->start = first.start;
    feature->end = lists ? first.end : first.start;
    if (lists > 1) {
        return merge_lists(d, mark, fields, kind, size, what, feature);
    }
    return 0;
}

/* --- Features maps ------------------------------------------------------------------------- */

typedef struct Sink Sink;

/* Where the entries of a Features map go: ``put`` takes the key d[key_start:key_end] and the
 * feature, whose owner it takes over in every case. Of entries of the same key the last wins
 * (the earlier one's list checked first, see earlier_entry), except that with ``keep_listed``
 * (TensorFlow's rule for an Example) a kindless one leaves an earlier one with a list in place. */
struct Sink {
    int (*put)(Sink *sink, const uint8_t *d, Py_ssize_t key_start, Py_ssize_t key_end,
               Feature *feature, const char *what);
    int keep_listed;
    PyObject *dict;      /* put_in_dict */
    struct Scan *scan;   /* put_in_scan */
    int other_fields;    /* read_example sets it for a top-level field other than features (1) */
};

/*
 * A later entry of the key d[key_start:key_end] arrived while an earlier one holds ``kind`` and
 * the list body[0:size]: raise unless that list is valid (as protobuf checks what it replaces),
 * else 1 when the earlier entry stays (the later one is kindless under ``keep_listed``), 0 when
 * the later one replaces it.
 */
static int
earlier_entry(const Sink *sink, const uint8_t *d, Py_ssize_t key_start, Py_ssize_t key_end,
              int kind, const uint8_t *body, Py_ssize_t size, const Feature *later,
              const char *what)
{
    if (kind != KIND_NONE && check_list(kind, body, size) < 0) {
        if (detached) {
            return -1;
        }
        PyObject *message = take_record_error_message();
        if (message != NULL) {
            PyObject *key = PyBytes_FromStringAndSize((const char *)d + key_start,
                                                      key_end - key_start);
            if (key != NULL) {
                fail("%s: the feature of an earlier entry of key %R is malformed: %U", what, key,
                     message);
                Py_DECREF(key);
            }
            Py_DECREF(message);
        }
        return -1;
    }
    return sink->keep_listed && kind != KIND_NONE && later->kind == KIND_NONE;
}

/* (kind, body bytes) of a feature, taking over its owner. */
static PyObject *
feature_pair(const uint8_t *d, Feature *feature)
{
    PyObject *body = feature->owner;
    feature->owner = NULL;
    if (body == NULL) {
        body = PyBytes_FromStringAndSize((const char *)d + feature->start,
                                         feature->end - feature->start);
        if (body == NULL) {
            return NULL;
        }
    }
    PyObject *kind = PyLong_FromLong(feature->kind);
    PyObject *pair = kind == NULL ? NULL : PyTuple_New(2);
    if (pair == NULL) {
        Py_XDECREF(kind);
        Py_DECREF(body);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, kind);
    PyTuple_SET_ITEM(pair, 1, body);
    return pair;
}

static int
put_in_dict(Sink *sink, const uint8_t *d, Py_ssize_t key_start, Py_ssize_t key_end,
            Feature *feature, const char *what)
{
    PyObject *key = PyBytes_FromStringAndSize((const char *)d + key_start, key_end - key_start);
    if (key == NULL) {
        Py_CLEAR(feature->owner);
        return -1;
    }
    PyObject *earlier = PyDict_GetItemWithError(sink->dict, key); /* borrowed */
    int keep = 0;
    if (earlier != NULL) {
        PyObject *body = PyTuple_GET_ITEM(earlier, 1);
        keep = earlier_entry(sink, d, key_start, key_end,
                             (int)PyLong_AsLong(PyTuple_GET_ITEM(earlier, 0)),
                             (const uint8_t *)PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body),
                             feature, what);
    }
    else if (PyErr_Occurred()) {
        keep = -1;
    }
    if (keep != 0) {
        Py_CLEAR(feature->owner);
        Py_DECREF(key);
        return keep < 0 ? -1 : 0;
    }
    PyObject *value = feature_pair(d, feature);
    if (value == NULL) {
        Py_DECREF(key);
        return -1;
    }
    int status = PyDict_SetItem(sink->dict, key, value);
    Py_DECREF(key);
    Py_DECREF(value);
    return status;
}

/* The map entry d[pos:end] in any encoding: key fields checked (the last one counts), then the
 * feature merged from the value fields. */
static int
read_entry(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what, Sink *sink)
{
    Py_ssize_t key_start = 0, key_end = 0, entry_start = pos;
    Field f;
    while (pos < end) {
        if (next_field(d, pos, end, what, &f) < 0) {
            return -1;
        }
        pos = f.end;
        if (f.number == 1 && f.wire_type == WT_LEN) {
            if (check_key(d, f.start, f.end, what) < 0) {
                return -1;
            }
            key_start = f.start;
            key_end = f.end;
        }
    }
    Pieces pieces = {entry_start, end, 0, 0};
    Feature feature;
    if (read_feature(d, pieces, what, &feature) < 0) {
        return -1;
    }
    return sink->put(sink, d, key_start, key_end, &feature, what);
}

/* A varint of one or two bytes at d[pos:end]: 1 with *value and *next set, else 0. */
static int
short_varint(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t *value,
             Py_ssize_t *next)
{
    if (pos >= end) {
        return 0;
    }
    if (d[pos] < 0x80) {
        *value = d[pos];
        *next = pos + 1;
        return 1;
    }
    if (pos + 1 >= end || d[pos + 1] >= 0x80) {
        return 0;
    }
    *value = (d[pos] & 0x7F) | (Py_ssize_t)d[pos + 1] << 7;
    *next = pos + 2;
    return 1;
}

/*
 * The canonical entry d[p:end] (0a <n> <key> 12 <n> [<kind tag> <n> <body>], ASCII key, 1-2 byte
 * lengths) without the general reader; 1 when it was one (and went to the sink), 0 when not.
 */
static int
read_canonical_entry(const uint8_t *d, Py_ssize_t p, Py_ssize_t end, const char *what, Sink *sink,
                     int *status)
{
    if (end - p < 4 || d[p] != 0x0A || d[p + 1] >= 0x80) {
        return 0;
    }
    Py_ssize_t key_end = p + 2 + d[p + 1];
    Py_ssize_t size, f, length, b;
    if (key_end + 2 > end || d[key_end] != 0x12 || !short_varint(d, key_end + 1, end, &size, &f)
        || f + size != end || !tfr_is_ascii(d + p + 2, key_end - p - 2)) {
        return 0;
    }
    Feature feature = {KIND_NONE, 0, 0, NULL};
    if (size > 0) {
        uint8_t tag = d[f];
        if (size < 2 || (tag != 0x0A && tag != 0x12 && tag != 0x1A)
            || !short_varint(d, f + 1, end, &length, &b) || b + length != end) {
            return 0;
        }
        feature.kind = tag >> 3;
        feature.start = b;
        feature.end = end;
    }
    *status = sink->put(sink, d, p + 2, key_end, &feature, what);
    return 1;
}

/* The map entries of the Features message d[pos:end], to the sink in order. */
static int
read_features(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what, Sink *sink)
{
    Field f;
    while (pos < end) {
        if (next_field(d, pos, end, what, &f) < 0) {
            return -1;
        }
        pos = f.end;
        if (f.number != 1 || f.wire_type != WT_LEN) {
            continue;
        }
        int status = 0;
        if (!read_canonical_entry(d, f.start, f.end, what, sink, &status)) {
            status = read_entry(d, f.start, f.end, what, sink);
        }
        if (status < 0) {
            return -1;
        }
    }
    return 0;
}

/* The Example d[0:end]: its features to the sink. */
static int
read_example(const uint8_t *d, Py_ssize_t end, Sink *sink)
{
    Py_ssize_t pos = 0;
    Field f;
    while (pos < end) {
        if (next_field(d, pos, end, "Example", &f) < 0) {
            return -1;
        }
        pos = f.end;
        if (f.number != 1) {
            sink->other_fields = 1; /* unknown to an Example (a SequenceExample's feature_lists) */
        }
        else if (f.wire_type == WT_LEN
                 && read_features(d, f.start, f.end, "Example.features", sink) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Append the features of the FeatureList d[pos:end] to ``steps`` as (kind, body) pairs. */
static int
read_feature_list(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what,
                  PyObject *steps)
{
    Field f;
    while (pos < end) {
        if (next_field(d, pos, end, what, &f) < 0) {
            return -1;
        }
        pos = f.end;
        if (f.number != 1 || f.wire_type != WT_LEN) {
            continue;
        }
        Pieces piece = {0, 0, f.start, f.end};
        Feature feature;
        if (read_feature(d, piece, what, &feature) < 0) {
            return -1;
        }
        PyObject *pair = feature_pair(d, &feature);
        if (pair == NULL) {
            return -1;
        }
        int status = PyList_Append(steps, pair);
        Py_DECREF(pair);
        if (status < 0) {
            return -1;
        }
    }
    return 0;
}

/* Raise unless each step of the entry of ``key`` already in ``out`` (which a later entry
 * replaces) has a valid list, as protobuf checks what it replaces. */
static int
check_earlier_steps(PyObject *out, PyObject *key, const char *what)
{
    PyObject *earlier = PyDict_GetItemWithError(out, key); /* borrowed */
    if (earlier == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(earlier); i++) {
        PyObject *step = PyList_GET_ITEM(earlier, i);
        int kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(step, 0));
        PyObject *body = PyTuple_GET_ITEM(step, 1);
        if (kind != KIND_NONE
            && check_list(kind, (const uint8_t *)PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body))
                   < 0) {
            PyObject *message = take_record_error_message();
            if (message != NULL) {
                fail("%s: a step of an earlier entry of key %R is malformed: %U", what, key,
                     message);
                Py_DECREF(message);
            }
            return -1;
        }
    }
    return 0;
}

/* Add the map entries of the FeatureLists message d[pos:end] to ``out`` (key -> steps). */
static int
read_feature_lists(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const char *what,
                   PyObject *out)
{
    Field f, g;
    while (pos < end) {
        if (next_field(d, pos, end, what, &f) < 0) {
            return -1;
        }
        pos = f.end;
        if (f.number != 1 || f.wire_type != WT_LEN) {
            continue;
        }
        Py_ssize_t key_start = 0, key_end = 0, entry_pos = f.start;
        PyObject *steps = PyList_New(0);
        if (steps == NULL) {
            return -1;
        }
        while (entry_pos < f.end) {
            if (next_field(d, entry_pos, f.end, what, &g) < 0) {
                goto error;
            }
            entry_pos = g.end;
            if (g.wire_type != WT_LEN) {
                continue;
            }
            if (g.number == 1) {
                if (check_key(d, g.start, g.end, what) < 0) {
                    goto error;
                }
                key_start = g.start;
                key_end = g.end;
            }
            else if (g.number == 2 && read_feature_list(d, g.start, g.end, what, steps) < 0) {
                goto error;
            }
        }
        PyObject *key = PyBytes_FromStringAndSize((const char *)d + key_start, key_end - key_start);
        if (key == NULL) {
            goto error;
        }
        if (check_earlier_steps(out, key, what) < 0) {
            Py_DECREF(key);
            goto error;
        }
        int status = PyDict_SetItem(out, key, steps);
        Py_DECREF(key);
        Py_DECREF(steps);
        if (status < 0) {
            return -1;
        }
        continue;
    error:
        Py_DECREF(steps);
        return -1;
    }
    return 0;
}

/* --- reading the input ---------------------------------------------------------------------- */

/* A bytes-like argument: its bytes, and the buffer to release when it is not a bytes object. */
typedef struct {
    const uint8_t *d;
    Py_ssize_t size;
    int has_view;
    Py_buffer view;
} Input;

static int
input_open(PyObject *object, Input *input)
{
    if (PyBytes_Check(object)) {
        input->d = (const uint8_t *)PyBytes_AS_STRING(object);
        input->size = PyBytes_GET_SIZE(object);
        input->has_view = 0;
        return 0;
    }
    if (PyObject_GetBuffer(object, &input->view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    input->d = (const uint8_t *)input->view.buf;
    input->size = input->view.len;
    input->has_view = 1;
    return 0;
}

static void
input_close(Input *input)
{
    if (input->has_view) {
        PyBuffer_Release(&input->view);
        input->has_view = 0;
    }
}

/* --- module functions: parsing and decoding -------------------------------------------------- */

static PyObject *
parse_example(PyObject *module, PyObject *data)
{
    (void)module;
    Input input;
    if (input_open(data, &input) < 0) {
        return NULL;
    }
    Sink sink = {put_in_dict, 1, PyDict_New(), NULL, 0};
    if (sink.dict != NULL && read_example(input.d, input.size, &sink) < 0) {
        Py_CLEAR(sink.dict);
    }
    input_close(&input);
    return sink.dict;
}

static PyObject *
parse_sequence_example(PyObject *module, PyObject *data)
{
    (void)module;
    Input input;
    if (input_open(data, &input) < 0) {
        return NULL;
    }
    const uint8_t *d = input.d;
    Py_ssize_t pos = 0, end = input.size;
    PyObject *result = NULL;
    Sink sink = {put_in_dict, 0, PyDict_New(), NULL, 0};
    PyObject *lists = PyDict_New();
    Field f;
    if (sink.dict == NULL || lists == NULL) {
        goto done;
    }
    while (pos < end) {
        if (next_field(d, pos, end, "SequenceExample", &f) < 0) {
            goto done;
        }
        pos = f.end;
        if (f.wire_type != WT_LEN) {
            continue;
        }
        if (f.number == 1) {
            if (read_features(d, f.start, f.end, "SequenceExample.context", &sink) < 0) {
                goto done;
            }
        }
        else if (f.number == 2 && read_feature_lists(d, f.start, f.end,
                                                     "SequenceExample.feature_lists", lists) < 0) {
            goto done;
        }
    }
    result = PyTuple_Pack(2, sink.dict, lists);
done:
    Py_XDECREF(sink.dict);
    Py_XDECREF(lists);
    input_close(&input);
    return result;
}

static PyObject *
decode_int64_values(PyObject *module, PyObject *body)
{
    (void)module;
    Input input;
    Column out;
    if (input_open(body, &input) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (column_open(&out, 0) == 0) {
        if (decode_int64_body(input.d, input.size, &out) == 0) {
            result = column_close(&out);
        }
        Py_XDECREF(out.block);
    }
    input_close(&input);
    return result;
}

static PyObject *
decode_float_values(PyObject *module, PyObject *body)
{
    (void)module;
    Input input;
    Column out;
    if (input_open(body, &input) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (column_open(&out, 0) == 0) {
        if (decode_float_body(input.d, input.size, &out) == 0) {
            result = column_close(&out);
        }
        Py_XDECREF(out.block);
    }
    input_close(&input);
    return result;
}

static PyObject *
decode_bytes_values(PyObject *module, PyObject *body)
{
    (void)module;
    Input input;
    if (input_open(body, &input) < 0) {
        return NULL;
    }
    PyObject *values = PyList_New(0);
    BytesOut out = {values, NULL, NULL};
    if (values != NULL && decode_bytes_body(input.d, input.size, &out) < 0) {
        Py_CLEAR(values);
    }
    input_close(&input);
    return values;
}

/* --- encoding ------------------------------------------------------------------------------- */

static int
varint_size(uint64_t value)
{
    if (value < 0x80) {
        return 1;
    }
#if defined(__GNUC__) || defined(__clang__)
    return (70 - __builtin_clzll(value)) / 7;
#else
    int size = 1;
    while (value >= 0x80) {
        value >>= 7;
        size++;
    }
    return size;
#endif
}

/* Whether a buffer format names native-order 8-byte integers (itemsize checked apart). */
static int
is_int64_format(const char *format)
{
    if (format == NULL) {
        return 0;
    }
    switch (*format) {
    case '@':
    case '=':
        format++;
        break;
#if PY_BIG_ENDIAN
    case '>':
    case '!':
#else
    case '<':
#endif
        format++;
        break;
    default:
        break;
    }
    return (format[0] == 'q' || format[0] == 'l') && format[1] == '\0';
}

static PyObject *
encode_int64_packed(PyObject *module, PyObject *values)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(values, &view, PyBUF_RECORDS_RO) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (!PyBuffer_IsContiguous(&view, 'C')) {
        fail("encode_int64_packed: expected a C-contiguous buffer of int64, got a "
             "non-contiguous %s",
             Py_TYPE(values)->tp_name);
        goto done;
    }
    if (view.itemsize != 8 || !is_int64_format(view.format)) {
        fail("encode_int64_packed: expected a C-contiguous buffer of int64, got format '%s' "
             "with %zd-byte items",
             view.format == NULL ? "B" : view.format, view.itemsize);
        goto done;
    }
    const uint8_t *items = (const uint8_t *)view.buf;
    Py_ssize_t count = view.len / 8, size = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        size += varint_size(load_native64(items + 8 * i));
    }
    result = PyBytes_FromStringAndSize(NULL, size);
    if (result == NULL) {
        goto done;
    }
    tfr_put_packed((uint8_t *)PyBytes_AS_STRING(result), (const char *)items, count);
done:
    PyBuffer_Release(&view);
    return result;
}

/* --- scan_batch ------------------------------------------------------------------------------- */

/* The columns of one requested key (see scan_batch's docstring). */
typedef struct {
    Py_ssize_t slot;  /* index of the distinct key */
    uint8_t *kinds;   /* points into kinds_array */
    uint8_t *counts;  /* points into counts_array: int64 per record */
    PyObject *kinds_array;
    PyObject *counts_array;
    Column ints;
    Column floats;
    int joined;        /* whether the caller asked for blob and sizes rather than a list */
    int text;          /* whether the caller asked for the list's values as str (UTF-8) */
    Column blob;       /* its bytes values, one after another (a list of bytes is made of them) */
    Column sizes;      /* the size of each bytes value, int64 */
} KeyColumns;

/* A distinct requested key and the feature the current record has for it. */
typedef struct {
    const uint8_t *key;
    Py_ssize_t size;
    int found;
    Feature feature;
} Slot;

/* A key of the current record that was not requested, and its last feature: kept so that a
 * repeated key gets parse_example's check of its earlier entry. */
typedef struct {
    const uint8_t *key; /* into the record's data */
    Py_ssize_t size;
    uint64_t record;    /* the scan's record number when the entry was made (else: empty) */
    Feature feature;
} Other;

/* How many entries of a record the scan remembers the slots of (see Scan.expected). */
#define EXPECTED_ENTRIES 64

typedef struct Scan {
    Slot *slots;
    Py_ssize_t distinct;
    /* The slot + 1 the entry at each position of the last record went to (0: none): records
     * mostly list the same keys in the same order, so the key there is compared first. */
    Py_ssize_t expected[EXPECTED_ENTRIES];
    Py_ssize_t entry; /* the position of the current record's next entry */
    Py_ssize_t *table; /* open addressing: slot index + 1, 0 when empty */
    size_t mask;
    Other *others;     /* open addressing by hash_key; capacity others_mask + 1 (or none) */
    size_t others_mask;
    Py_ssize_t others_count; /* entries of the current record */
    PyObject *owned;         /* a list holding the merged bodies the entries point to, or NULL */
    uint64_t record;         /* 1 + the number of the record being read */
    PyObject *unrequested;   /* a dict: unrequested key -> first record with it; or NULL */
    PyObject *irregular;     /* a list: records with top-level fields besides features; or NULL */
} Scan;

static size_t
hash_key(const uint8_t *p, Py_ssize_t size)
{
    uint64_t hash = 0xcbf29ce484222325u; /* FNV-1a */
    for (Py_ssize_t i = 0; i < size; i++) {
        hash = (hash ^ p[i]) * 0x100000001b3u;
    }
    return (size_t)(hash ^ (hash >> 29));
}

/* The slot of key p[0:size], or -1 when it was not requested. */
static Py_ssize_t
find_slot(Scan *scan, const uint8_t *p, Py_ssize_t size)
{
    for (size_t i = hash_key(p, size) & scan->mask;; i = (i + 1) & scan->mask) {
        Py_ssize_t entry = scan->table[i];
        if (entry == 0) {
            return -1;
        }
        Slot *slot = &scan->slots[entry - 1];
        if (slot->size == size && memcmp(slot->key, p, (size_t)size) == 0) {
            return entry - 1;
        }
    }
}

/* earlier_entry for ``earlier``, a feature of the record ``d`` held by the scan (its body in ``d``
 * or in its owner), when ``later`` comes under the same key. */
static int
check_earlier(const Sink *sink, const uint8_t *d, Py_ssize_t key_start, Py_ssize_t key_end,
              const Feature *earlier, const Feature *later, const char *what)
{
    const uint8_t *body = d + earlier->start;
    Py_ssize_t size = earlier->end - earlier->start;
    if (earlier->owner != NULL) {
        body = (const uint8_t *)PyBytes_AS_STRING(earlier->owner);
        size = PyBytes_GET_SIZE(earlier->owner);
    }
    return earlier_entry(sink, d, key_start, key_end, earlier->kind, body, size, later, what);
}

/* Room for one more entry of the record's other keys (the table at most half full), rehashing
 * the current record's entries into a table twice as large; -1 with MemoryError. */
static int
reserve_other(Scan *scan)
{
    size_t capacity = scan->others == NULL ? 0 : scan->others_mask + 1;
    if ((size_t)(scan->others_count + 1) * 2 <= capacity) {
        return 0;
    }
    size_t grown = capacity ? 2 * capacity : 16;
    Other *table = PyMem_RawCalloc(grown, sizeof(Other));
    if (table == NULL) {
        return no_memory();
    }
    for (size_t i = 0; i < capacity; i++) {
        Other *other = &scan->others[i];
        if (other->record != scan->record) {
            continue;
        }
        size_t j = hash_key(other->key, other->size) & (grown - 1);
        while (table[j].record == scan->record) {
            j = (j + 1) & (grown - 1);
        }
        table[j] = *other;
    }
    PyMem_RawFree(scan->others);
    scan->others = table;
    scan->others_mask = grown - 1;
    return 0;
}

/* Keep ``feature``'s merged body (if any) alive until the record ends, in scan->owned; its
 * pointer stays in the feature, borrowed. -1 with an error set. */
static int
hold_owner(Scan *scan, Feature *feature)
{
    if (feature->owner == NULL) {
        return 0;
    }
    if (scan->owned == NULL && (scan->owned = PyList_New(0)) == NULL) {
        return -1;
    }
    int status = PyList_Append(scan->owned, feature->owner);
    Py_DECREF(feature->owner); /* the list holds it now */
    return status;
}

/* Records the unrequested key key[0:size] of the current record in scan->unrequested (when
 * asked), with the record's number unless an earlier record had it. -1 with an error set. */
static int
note_unrequested(Scan *scan, const uint8_t *key, Py_ssize_t size)
{
    if (scan->unrequested == NULL) {
        return 0;
    }
    PyObject *name = PyBytes_FromStringAndSize((const char *)key, size);
    PyObject *record = PyLong_FromUnsignedLongLong(scan->record - 1);
    PyObject *kept = name == NULL || record == NULL
                         ? NULL
                         : PyDict_SetDefault(scan->unrequested, name, record); /* borrowed */
    Py_XDECREF(name);
    Py_XDECREF(record);
    return kept == NULL ? -1 : 0;
}

/* A feature of a key that was not requested: its value is not needed, but when the key repeats,
 * the earlier entry is checked as parse_example checks it. */
static int
put_other(Scan *scan, const Sink *sink, const uint8_t *d, Py_ssize_t key_start,
          Py_ssize_t key_end, Feature *feature, const char *what)
{
    const uint8_t *key = d + key_start;
    Py_ssize_t size = key_end - key_start;
    if (reserve_other(scan) < 0 || hold_owner(scan, feature) < 0) {
        Py_CLEAR(feature->owner);
        return -1;
    }
    size_t i = hash_key(key, size) & scan->others_mask;
    for (;; i = (i + 1) & scan->others_mask) {
        Other *other = &scan->others[i];
        if (other->record != scan->record) { /* a new key of this record */
            other->key = key;
            other->size = size;
            other->record = scan->record;
            other->feature = *feature;
            scan->others_count++;
            return note_unrequested(scan, key, size);
        }
        if (other->size == size && memcmp(other->key, key, (size_t)size) == 0) {
            int keep = check_earlier(sink, d, key_start, key_end, &other->feature, feature, what);
            if (keep == 0) {
                other->feature = *feature;
            }
            return keep < 0 ? -1 : 0;
        }
    }
}

/* find_slot, trying first the slot the entry at the same position of the last record had. */
static Py_ssize_t
find_expected_slot(Scan *scan, const uint8_t *p, Py_ssize_t size)
{
    Py_ssize_t entry = scan->entry++;
    if (entry >= EXPECTED_ENTRIES) {
        return find_slot(scan, p, size);
    }
    Py_ssize_t expected = scan->expected[entry] - 1;
    if (expected >= 0) {
        const Slot *slot = &scan->slots[expected];
        if (slot->size == size && memcmp(slot->key, p, (size_t)size) == 0) {
            return expected;
        }
    }
    Py_ssize_t index = find_slot(scan, p, size);
    scan->expected[entry] = index + 1;
    return index;
}

static int
put_in_scan(Sink *sink, const uint8_t *d, Py_ssize_t key_start, Py_ssize_t key_end,
            Feature *feature, const char *what)
{
    Scan *scan = sink->scan;
    Py_ssize_t index = find_expected_slot(scan, d + key_start, key_end - key_start);
    if (index < 0) {
        return put_other(scan, sink, d, key_start, key_end, feature, what);
    }
    Slot *slot = &scan->slots[index];
    if (slot->found) {
        int keep = check_earlier(sink, d, key_start, key_end, &slot->feature, feature, what);
        if (keep != 0) {
            Py_CLEAR(feature->owner);
            return keep < 0 ? -1 : 0;
        }
    }
    Py_XDECREF(slot->feature.owner);
    slot->feature = *feature;
    slot->found = 1;
    feature->owner = NULL;
    return 0;
}

/* The values of the record's feature for one key, appended to its columns; the count stored.
 * ``records_left`` and ``bytes_left`` are the records of the batch after this one and their bytes
 * (for column_presize). */
static int
scan_values(const uint8_t *d, Slot *slot, KeyColumns *key, Py_ssize_t record,
            Py_ssize_t records_left, Py_ssize_t bytes_left)
{
    int64_t count = 0;
    if (!slot->found) {
        key->kinds[record] = KIND_ABSENT;
    }
    else {
        Feature *feature = &slot->feature;
        const uint8_t *body = d + feature->start;
        Py_ssize_t size = feature->end - feature->start;
        if (feature->owner != NULL) {
            body = (const uint8_t *)PyBytes_AS_STRING(feature->owner);
            size = PyBytes_GET_SIZE(feature->owner);
        }
        key->kinds[record] = (uint8_t)feature->kind;
        if (feature->kind == KIND_INT64) {
            Py_ssize_t before = key->ints.used;
            if (decode_int64_body(body, size, &key->ints) < 0) {
                return -1;
            }
            count = (key->ints.used - before) / 8;
            /* the rest of the input holds at most one int64 per byte */
            if (column_presize(&key->ints, 8 * count, records_left, 8 * bytes_left) < 0) {
                return -1;
            }
        }
        else if (feature->kind == KIND_FLOAT) {
            Py_ssize_t before = key->floats.used;
            if (decode_float_body(body, size, &key->floats) < 0) {
                return -1;
            }
            count = (key->floats.used - before) / 4;
            if (column_presize(&key->floats, 4 * count, records_left, bytes_left) < 0) {
                return -1;
            }
        }
        else if (feature->kind == KIND_BYTES) {
            Py_ssize_t before = key->blob.used, sizes_before = key->sizes.used;
            BytesOut out = {NULL, &key->blob, &key->sizes};
            if (decode_bytes_body(body, size, &out) < 0) {
                return -1;
            }
            count = (key->sizes.used - sizes_before) / 8;
            if (column_presize(&key->blob, key->blob.used - before, records_left, bytes_left) < 0
                || column_presize(&key->sizes, 8 * count, records_left, 8 * bytes_left) < 0) {
                return -1;
            }
        }
    }
    store_le64(key->counts + 8 * record, (uint64_t)count);
    return 0;
}

static void
release_features(Scan *scan)
{
    for (Py_ssize_t i = 0; i < scan->distinct; i++) {
        Py_CLEAR(scan->slots[i].feature.owner);
        scan->slots[i].found = 0;
    }
    if (scan->owned != NULL && PyList_GET_SIZE(scan->owned)) { /* the other keys' merged bodies */
        PyList_SetSlice(scan->owned, 0, PyList_GET_SIZE(scan->owned), NULL);
    }
    scan->others_count = 0;
    scan->entry = 0;
    scan->record++; /* every entry of the table is now of an earlier record: empty */
}

/* Parse record ``index`` and append its values for every requested key. ``records_left`` and
 * ``*bytes_left`` are the records of the batch from this one on and their bytes; the record's
 * bytes are taken off ``*bytes_left``. Touches no Python object when detached (scan->irregular
 * and scan->unrequested are NULL then). */
static int
scan_record(const Input *input, Py_ssize_t index, Scan *scan, KeyColumns *keys,
            Py_ssize_t nkeys, Py_ssize_t records_left, Py_ssize_t *bytes_left)
{
    Sink sink = {put_in_scan, 1, NULL, scan, 0};
    int status = read_example(input->d, input->size, &sink);
    if (status == 0 && sink.other_fields && scan->irregular != NULL) {
        PyObject *number = PyLong_FromSsize_t(index);
        status = number == NULL ? -1 : PyList_Append(scan->irregular, number);
        Py_XDECREF(number); /* a failure here is no RecordError: it is raised as it is */
    }
    *bytes_left -= input->size;
    for (Py_ssize_t j = 0; status == 0 && j < nkeys; j++) {
        status = scan_values(input->d, &scan->slots[keys[j].slot], &keys[j], index,
                             records_left - 1, *bytes_left);
    }
    release_features(scan);
    if (status < 0 && !detached) {
        PyObject *message = take_record_error_message();
        if (message != NULL) {
            fail("record %zd: %U", index, message);
            Py_DECREF(message);
        }
    }
    return status < 0 ? -1 : 0;
}

/* The bytes values of a key that is not joined: a list made of its blob and sizes, of bytes, or
 * (``text``) of str decoded as strict UTF-8; NULL with UnicodeDecodeError when one is not. */
static PyObject *
values_list(const KeyColumns *key, int text)
{
    Py_ssize_t count = key->sizes.used / 8;
    PyObject *list = PyList_New(count);
    const uint8_t *blob = tfr_block_data(key->blob.block);
    const uint8_t *sizes = tfr_block_data(key->sizes.block);
    for (Py_ssize_t i = 0, at = 0; list != NULL && i < count; i++) {
        Py_ssize_t size = (Py_ssize_t)load_le64(sizes + 8 * i);
        const char *data = (const char *)blob + at;
        PyObject *value = text ? tfr_utf8_text((const uint8_t *)data, size)
                               : PyBytes_FromStringAndSize(data, size);
        if (value == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, value);
        at += size;
    }
    return list;
}

/* The values of a key that is not joined: str for a ``text`` key whose values are all valid
 * UTF-8 (its values are made once, not as bytes and then decoded), else bytes. */
static PyObject *
strings_list(const KeyColumns *key)
{
    if (key->text) {
        PyObject *texts = values_list(key, 1);
        if (texts != NULL || !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            return texts;
        }
        PyErr_Clear(); /* the caller decodes the bytes itself, and refuses them */
    }
    return values_list(key, 0);
}

/* The result tuple of one key; its columns are given up. */
static PyObject *
key_result(KeyColumns *key)
{
    PyObject *ints = column_close(&key->ints);
    PyObject *floats = column_close(&key->floats);
    PyObject *strings;
    if (key->joined) {
        PyObject *blob = column_close(&key->blob);
        PyObject *sizes = column_close(&key->sizes);
        strings = blob == NULL || sizes == NULL ? NULL : PyTuple_Pack(2, blob, sizes);
        Py_XDECREF(blob);
        Py_XDECREF(sizes);
    }
    else {
        strings = strings_list(key);
    }
    if (ints == NULL || floats == NULL || strings == NULL) {
        Py_XDECREF(ints);
        Py_XDECREF(floats);
        Py_XDECREF(strings);
        return NULL;
    }
    return Py_BuildValue("(OONNN)", key->kinds_array, key->counts_array, ints, floats, strings);
}

static void
clear_key_columns(KeyColumns *key)
{
    Py_CLEAR(key->kinds_array);
    Py_CLEAR(key->counts_array);
    Py_CLEAR(key->ints.block);
    Py_CLEAR(key->floats.block);
    Py_CLEAR(key->blob.block);
    Py_CLEAR(key->sizes.block);
}

static int
open_key_columns(KeyColumns *key, Py_ssize_t records, int joined, int text)
{
    key->kinds_array = PyByteArray_FromStringAndSize(NULL, records);
    key->counts_array = PyByteArray_FromStringAndSize(NULL, 8 * records);
    key->joined = joined;
    key->text = text;
    if (key->kinds_array == NULL || key->counts_array == NULL || column_open(&key->ints, 1) < 0
        || column_open(&key->floats, 1) < 0 || column_open(&key->blob, 1) < 0
        || column_open(&key->sizes, 1) < 0) {
        return -1;
    }
    key->kinds = (uint8_t *)PyByteArray_AS_STRING(key->kinds_array);
    key->counts = (uint8_t *)PyByteArray_AS_STRING(key->counts_array);
    return 0;
}

/* Fill the distinct keys and the hash table; each requested key learns its slot. */
static int
index_keys(PyObject *keys, Scan *scan, KeyColumns *columns)
{
    Py_ssize_t nkeys = PyTuple_GET_SIZE(keys);
    for (Py_ssize_t j = 0; j < nkeys; j++) {
        PyObject *key = PyTuple_GET_ITEM(keys, j);
        if (!PyBytes_Check(key)) {
            PyErr_Format(PyExc_TypeError, "scan_batch: key %zd is a %s, not bytes", j,
                         Py_TYPE(key)->tp_name);
            return -1;
        }
        const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(key);
        Py_ssize_t size = PyBytes_GET_SIZE(key);
        Py_ssize_t index = find_slot(scan, p, size);
        if (index < 0) {
            index = scan->distinct++;
            Slot *slot = &scan->slots[index];
            slot->key = p;
            slot->size = size;
            slot->found = 0;
            slot->feature.owner = NULL;
            size_t i = hash_key(p, size) & scan->mask;
            while (scan->table[i] != 0) {
                i = (i + 1) & scan->mask;
            }
            scan->table[i] = index + 1;
        }
        columns[j].slot = index;
    }
    return 0;
}

/* Empty the columns again (after a detached pass gave up), keeping their memory. */
static void
reset_key_columns(KeyColumns *key)
{
    Column *columns[4] = {&key->ints, &key->floats, &key->blob, &key->sizes};
    for (int i = 0; i < 4; i++) {
        columns[i]->used = 0;
        columns[i]->presized = 0;
    }
}

/* Every record (``bytes`` in all) into the columns: 0, or -1 at the first that fails. */
static int
scan_records(const Input *inputs, Py_ssize_t nrecords, Py_ssize_t bytes, Scan *scan,
             KeyColumns *columns, Py_ssize_t nkeys)
{
    for (Py_ssize_t i = 0; i < nrecords; i++) {
        if (scan_record(&inputs[i], i, scan, columns, nkeys, nrecords - i, &bytes) < 0) {
            return -1;
        }
    }
    return 0;
}

/*
 * The records are decoded without the GIL, so threads decode batches in parallel: their buffers
 * are taken first and the Python objects of the result made after. When the detached pass gives
 * up (a malformed record, or one that needs Python objects: a merged list body, a non-ASCII key),
 * the batch is decoded again with the GIL, which gives the exact result or error; so is a scan
 * asked for ``unrequested`` or ``irregular``, which fill Python objects as they go.
 */
static PyObject *
scan_batch(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *records_arg, *keys_arg, *joined_arg = NULL, *texts_arg = NULL;
    PyObject *unrequested = Py_None, *irregular = Py_None;
    if (!PyArg_ParseTuple(args, "OO|OOOO:scan_batch", &records_arg, &keys_arg, &joined_arg,
                          &unrequested, &irregular, &texts_arg)) {
        return NULL;
    }
    if ((unrequested != Py_None && !PyDict_Check(unrequested))
        || (irregular != Py_None && !PyList_Check(irregular))) {
        PyErr_SetString(PyExc_TypeError,
                        "scan_batch: unrequested must be a dict and irregular a list, or None");
        return NULL;
    }
    /* Spans are read in place; any other sequence item by item. */
    TfrSpans *spans = tfr_spans_check(records_arg) ? (TfrSpans *)records_arg : NULL;
    PyObject *records = spans != NULL ? NULL : PySequence_Tuple(records_arg);
    PyObject *keys = spans == NULL && records == NULL ? NULL : PySequence_Tuple(keys_arg);
    PyObject *result = NULL;
    Scan scan = {NULL, 0, {0}, 0, NULL, 0, NULL, 0, 0, NULL, 1,
                 unrequested == Py_None ? NULL : unrequested,
                 irregular == Py_None ? NULL : irregular};
    KeyColumns *columns = NULL;
    Input *inputs = NULL;
    Py_ssize_t nkeys = 0, nrecords = 0, opened = 0;
    if (keys == NULL) {
        goto done;
    }
    nkeys = PyTuple_GET_SIZE(keys);
    nrecords = spans != NULL ? spans->n : PyTuple_GET_SIZE(records);
    size_t table_size = 8;
    while (table_size < 2 * (size_t)nkeys) {
        table_size *= 2;
    }
    scan.mask = table_size - 1;
    scan.table = PyMem_Calloc(table_size, sizeof(Py_ssize_t));
    scan.slots = PyMem_Calloc((size_t)nkeys + 1, sizeof(Slot));
    columns = PyMem_Calloc((size_t)nkeys + 1, sizeof(KeyColumns));
    inputs = PyMem_Calloc((size_t)nrecords + 1, sizeof(Input));
    if (scan.table == NULL || scan.slots == NULL || columns == NULL || inputs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (index_keys(keys, &scan, columns) < 0) {
        goto done;
    }
    for (Py_ssize_t j = 0; j < nkeys; j++) {
        int joined = 0, text = 0;
        if (joined_arg != NULL) {
            joined = PySequence_Contains(joined_arg, PyTuple_GET_ITEM(keys, j));
            if (joined < 0) {
                goto done;
            }
        }
        if (texts_arg != NULL && texts_arg != Py_None) {
            text = PySequence_Contains(texts_arg, PyTuple_GET_ITEM(keys, j));
            if (text < 0) {
                goto done;
            }
        }
        if (open_key_columns(&columns[j], nrecords, joined, text) < 0) {
            goto done;
        }
    }
    Py_ssize_t bytes = 0;
    for (; opened < nrecords; opened++) {
        if (spans != NULL) {
            inputs[opened].d = spans->data[opened];
            inputs[opened].size = spans->sizes[opened];
            inputs[opened].has_view = 0;
        }
        else if (input_open(PyTuple_GET_ITEM(records, opened), &inputs[opened]) < 0) {
            goto done;
        }
        bytes += inputs[opened].size;
    }
    int status = -1;
    if (scan.unrequested == NULL && scan.irregular == NULL) {
        Py_BEGIN_ALLOW_THREADS
        detached = 1;
        status = scan_records(inputs, nrecords, bytes, &scan, columns, nkeys);
        detached = 0;
        Py_END_ALLOW_THREADS
        for (Py_ssize_t j = 0; status < 0 && j < nkeys; j++) {
            reset_key_columns(&columns[j]);
        }
    }
    if (status < 0 && scan_records(inputs, nrecords, bytes, &scan, columns, nkeys) < 0) {
        goto done;
    }
    result = PyList_New(nkeys);
    for (Py_ssize_t j = 0; result != NULL && j < nkeys; j++) {
        PyObject *item = key_result(&columns[j]);
        if (item == NULL) {
            Py_CLEAR(result);
        }
        else {
            PyList_SET_ITEM(result, j, item);
        }
    }
done:
    if (columns != NULL) {
        for (Py_ssize_t j = 0; j < nkeys; j++) {
            clear_key_columns(&columns[j]);
        }
        PyMem_Free(columns);
    }
    for (Py_ssize_t i = 0; i < opened; i++) {
        input_close(&inputs[i]);
    }
    PyMem_Free(inputs);
    PyMem_Free(scan.slots);
    PyMem_Free(scan.table);
    PyMem_RawFree(scan.others);
    Py_XDECREF(scan.owned);
    Py_XDECREF(keys);
    Py_XDECREF(records);
    return result;
}

/* --- module ------------------------------------------------------------------------------------ */

PyDoc_STRVAR(parse_example_doc,
"parse_example(data) -> dict[bytes, tuple[int, bytes]]\n\n"
"The features of a serialized Example: key -> (kind, list body), as wire.parse_example.");

PyDoc_STRVAR(parse_sequence_example_doc,
"parse_sequence_example(data) -> tuple[dict[bytes, tuple[int, bytes]],\n"
"                                       dict[bytes, list[tuple[int, bytes]]]]\n\n"
"The context and feature lists of a serialized SequenceExample, as\n"
"wire.parse_sequence_example.");

PyDoc_STRVAR(decode_int64_values_doc,
"decode_int64_values(body) -> bytearray\n\n"
"The values of an Int64List body (packed, unpacked or mixed) as little-endian int64.");

PyDoc_STRVAR(decode_float_values_doc,
"decode_float_values(body) -> bytearray\n\n"
"The values of a FloatList body (packed, unpacked or mixed) as little-endian float32.");

PyDoc_STRVAR(decode_bytes_values_doc,
"decode_bytes_values(body) -> list[bytes]\n\n"
"The values of a BytesList body.");

PyDoc_STRVAR(encode_int64_packed_doc,
"encode_int64_packed(values) -> bytes\n\n"
"The packed varint payload of a C-contiguous buffer of native int64 (a numpy array or a\n"
"memoryview, any shape, C order); negative values take ten bytes (two's complement).");

PyDoc_STRVAR(scan_batch_doc,
"scan_batch(records, keys, joined=(), unrequested=None, irregular=None, texts=())\n"
"    -> list[tuple[bytearray, bytearray, Block, Block, list]]\n\n"
"Columns of the features ``keys`` (a sequence of bytes) over the serialized Examples\n"
"``records`` (a sequence of bytes-like objects, or a Spans, read in place), one tuple per key, in the order of ``keys``:\n\n"
"  kinds   bytearray, one uint8 per record: the Feature kind (0 none, 1 bytes, 2 float,\n"
"          3 int64) or ABSENT (255) when the record has no such key;\n"
"  counts  bytearray of little-endian int64, one per record: how many values it has;\n"
"  ints    Block of little-endian int64: the values of the records of kind 3, in order;\n"
"  floats  Block of little-endian float32: the values of the records of kind 2;\n"
"  strings list of bytes: the values of the records of kind 1; for a key in ``joined``,\n"
"          a tuple (blob, sizes) of Blocks instead: the values one after another, and\n"
"          the size of each as little-endian int64. For a key in ``texts``, the list's\n"
"          values are str (strict UTF-8) when every one is valid UTF-8, else bytes.\n\n"
"A record's values of kind k are the next counts[i] entries of the kind-k column. Each\n"
"record is read once, with parse_example's rules; then the bodies of the requested keys are\n"
"decoded in the order of ``keys``. A malformed record raises RecordError('record <i>: ' +\n"
"the message parse_example or the decode function gives for it).\n\n"
"With ``unrequested`` (a dict), every key of the records that is not in ``keys`` maps to the\n"
"number of the first record that has it (keys already in the dict keep their number); with\n"
"``irregular`` (a list), the number of every record with a top-level field other than\n"
"``features`` (1), such as a SequenceExample's ``feature_lists``, is appended. After a\n"
"RecordError what they hold is unspecified.");

static PyMethodDef speedups_methods[] = {
    {"parse_example", parse_example, METH_O, parse_example_doc},
    {"parse_sequence_example", parse_sequence_example, METH_O, parse_sequence_example_doc},
    {"decode_int64_values", decode_int64_values, METH_O, decode_int64_values_doc},
    {"decode_float_values", decode_float_values, METH_O, decode_float_values_doc},
    {"decode_bytes_values", decode_bytes_values, METH_O, decode_bytes_values_doc},
    {"encode_int64_packed", encode_int64_packed, METH_O, encode_int64_packed_doc},
    {"scan_batch", scan_batch, METH_VARARGS, scan_batch_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(speedups_doc,
"The optional C accelerator of the tf.train.Example wire codec (codegen.runtime.wire).\n\n"
"Same results and the same RecordError messages as the pure-Python functions; numeric\n"
"values come back as little-endian bytearrays for numpy.frombuffer (writable arrays).\n"
"Select it through codegen.runtime.accel.");

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "codegen._speedups", speedups_doc, -1, speedups_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *errors = PyImport_ImportModule("codegen.errors");
    if (errors == NULL) {
        return NULL;
    }
    Py_XSETREF(RecordError, PyObject_GetAttrString(errors, "RecordError"));
    Py_DECREF(errors);
    if (RecordError == NULL) {
        return NULL;
    }
    tfr_varint_init();
    PyObject *module = PyModule_Create(&speedups_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "ABSENT", KIND_ABSENT) < 0
        || PyModule_AddIntConstant(module, "SMALL_DECODE_BYTES", SMALL_DECODE_BYTES) < 0
        || tfr_add_plan_type(module) < 0
        || tfr_add_block_type(module) < 0
        || tfr_add_spans_type(module) < 0
        || PyModule_AddFunctions(module, tfr_spans_methods) < 0
        || PyModule_AddFunctions(module, tfr_blocks_methods) < 0
        || PyModule_AddFunctions(module, tfr_frames_methods) < 0
        || PyModule_AddFunctions(module, tfr_encode_methods) < 0
        || PyModule_AddFunctions(module, tfr_strings_methods) < 0
        || PyModule_AddFunctions(module, tfr_arrays_methods) < 0
        || PyModule_AddFunctions(module, tfr_export_methods) < 0
        || PyModule_AddFunctions(module, tfr_hashes_methods) < 0
        || PyModule_AddFunctions(module, tfr_inflate_methods) < 0
        || PyModule_AddFunctions(module, tfr_joined_methods) < 0
        || PyModule_AddFunctions(module, tfr_varint_methods) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
