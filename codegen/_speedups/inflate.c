/*
 * inflate_members: gzip members inflated by libdeflate straight into a caller's buffers (pooled
 * blocks, their memory already paged in) and checked against their trailers, all in one call
 * without the GIL. A reader's worker thread inflates the members of a chunk of the file this way:
 * it waits for the GIL once for them all, where inflating through the deflate package waits twice
 * a member (inflate, then CRC) while the reader's thread holds the GIL, and fills fresh buffers.
 *
 * The libdeflate is the one the deflate package (a default dependency) carries in its extension
 * module: bind_libdeflate(path) finds its public functions there (the module is loaded already),
 * so the accelerator links against nothing new. Without them (another platform, a build that
 * hides its symbols) the runtime inflates through the package.
 */
#include "speedups.h"

#include <stdatomic.h>
#include <stdint.h>

#ifndef _WIN32
#include <dlfcn.h>
#endif

struct libdeflate_decompressor;

typedef struct libdeflate_decompressor *(*alloc_fn)(void);
typedef void (*free_fn)(struct libdeflate_decompressor *);
typedef int (*decompress_fn)(struct libdeflate_decompressor *, const void *, size_t, void *,
                             size_t, size_t *, size_t *);
typedef uint32_t (*crc32_fn)(uint32_t, const void *, size_t);

static alloc_fn deflate_alloc;
static free_fn deflate_free;
static decompress_fn deflate_decompress;
static crc32_fn deflate_crc32;

/* Decompressors kept for the next call (a few threads inflate at once): taken and given back by
 * atomic exchange, so no lock is held (and none is left held in a forked child). */
#define KEPT_DECOMPRESSORS 8
static _Atomic(struct libdeflate_decompressor *) kept[KEPT_DECOMPRESSORS];

PyDoc_STRVAR(bind_libdeflate_doc,
"bind_libdeflate(path, /) -> bool\n--\n\n"
"Finds libdeflate's functions in the shared object at ``path`` (the deflate package's extension\n"
"module, loaded already); whether it found them all (then inflate_members works).");

static PyObject *
bind_libdeflate(PyObject *module, PyObject *arg)
{
#ifdef _WIN32
    Py_RETURN_FALSE;
#else
    PyObject *encoded = NULL;
    if (!PyUnicode_FSConverter(arg, &encoded)) {
        return NULL;
    }
    void *library = dlopen(PyBytes_AS_STRING(encoded), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    Py_DECREF(encoded);
    if (library == NULL) {
        Py_RETURN_FALSE;
    }
    alloc_fn alloc = (alloc_fn)dlsym(library, "libdeflate_alloc_decompressor");
    free_fn release = (free_fn)dlsym(library, "libdeflate_free_decompressor");
    decompress_fn decompress = (decompress_fn)dlsym(library, "libdeflate_deflate_decompress_ex");
    crc32_fn crc32 = (crc32_fn)dlsym(library, "libdeflate_crc32");
    /* The handle stays open: the module it names is imported and never unloaded. */
    if (alloc == NULL || release == NULL || decompress == NULL || crc32 == NULL) {
        dlclose(library);
        Py_RETURN_FALSE;
    }
    deflate_alloc = alloc;
    deflate_free = release;
    deflate_decompress = decompress;
    deflate_crc32 = crc32;
    Py_RETURN_TRUE;
#endif
}

static struct libdeflate_decompressor *
take_decompressor(void)
{
    for (int i = 0; i < KEPT_DECOMPRESSORS; i++) {
        struct libdeflate_decompressor *d = atomic_exchange(&kept[i], NULL);
        if (d != NULL) {
            return d;
        }
    }
    return deflate_alloc();
}

static void
give_decompressor(struct libdeflate_decompressor *d)
{
    for (int i = 0; i < KEPT_DECOMPRESSORS; i++) {
        struct libdeflate_decompressor *empty = NULL;
        if (atomic_compare_exchange_strong(&kept[i], &empty, d)) {
            return;
        }
    }
    deflate_free(d);
}

static inline uint32_t
load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Inflates one member (see inflate_members) with the decompressor d; whether it inflated whole. */
static int
inflate_one(struct libdeflate_decompressor *d, const Py_buffer *member, Py_ssize_t header,
            const Py_buffer *out)
{
    if (header < 0 || member->len - header < 8) {
        return 0;
    }
    const uint8_t *trailer = (const uint8_t *)member->buf + member->len - 8;
    if ((uint64_t)out->len != (uint64_t)load_le32(trailer + 4)) {
        return 0;
    }
    size_t data_len = (size_t)(member->len - header - 8), used = 0, made = 0;
    int status = deflate_decompress(d, (const uint8_t *)member->buf + header, data_len, out->buf,
                                    (size_t)out->len, &used, &made);
    return status == 0 && used == data_len && made == (size_t)out->len
           && deflate_crc32(0, out->buf, made) == load_le32(trailer);
}

PyDoc_STRVAR(inflate_members_doc,
"inflate_members(members, header, outs, /) -> bytes\n--\n\n"
"Inflates the deflate data of each gzip member of the list ``members`` (buffers: a header of\n"
"``header`` bytes, the deflate data, an 8-byte trailer) into the writable buffer of ``outs`` at\n"
"the same place, all in one call without the GIL. One byte a member: 1 when it inflated whole\n"
"(its deflate data ends where the trailer starts and makes exactly the size of its buffer, the\n"
"size and CRC-32 the trailer declares), else 0. RuntimeError before bind_libdeflate succeeded.");

static PyObject *
inflate_members(PyObject *module, PyObject *args)
{
    PyObject *members, *outs;
    Py_ssize_t header;
    if (!PyArg_ParseTuple(args, "O!nO!:inflate_members", &PyList_Type, &members, &header,
                          &PyList_Type, &outs)) {
        return NULL;
    }
    if (deflate_decompress == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "inflate_members: libdeflate is not bound");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(members);
    if (PyList_GET_SIZE(outs) != n) {
        PyErr_SetString(PyExc_ValueError, "inflate_members: one buffer a member");
        return NULL;
    }
    PyObject *result = PyBytes_FromStringAndSize(NULL, n);
    Py_buffer *views = PyMem_Calloc((size_t)(2 * n + 1), sizeof(Py_buffer));
    Py_ssize_t held = 0;  /* views[0 .. held) are held */
    if (result == NULL || views == NULL) {
        if (views == NULL) {
            PyErr_NoMemory();
        }
        goto failed;
    }
    for (; held < 2 * n; held++) {
        PyObject *object = PyList_GET_ITEM(held % 2 ? outs : members, held / 2);
        int flags = held % 2 ? PyBUF_WRITABLE : PyBUF_SIMPLE;
        if (PyObject_GetBuffer(object, &views[held], flags) < 0) {
            goto failed;
        }
    }
    uint8_t *whole = (uint8_t *)PyBytes_AS_STRING(result);
    int no_memory = 0;
    Py_BEGIN_ALLOW_THREADS
    struct libdeflate_decompressor *d = take_decompressor();
    if (d == NULL) {
        no_memory = 1;
    }
    else {
        for (Py_ssize_t i = 0; i < n; i++) {
            whole[i] = (uint8_t)inflate_one(d, &views[2 * i], header, &views[2 * i + 1]);
        }
        give_decompressor(d);
    }
    Py_END_ALLOW_THREADS
    if (no_memory) {
        PyErr_NoMemory();
        goto failed;
    }
    for (Py_ssize_t i = 0; i < held; i++) {
        PyBuffer_Release(&views[i]);
    }
    PyMem_Free(views);
    return result;
failed:
    for (Py_ssize_t i = 0; i < held; i++) {
        PyBuffer_Release(&views[i]);
    }
    PyMem_Free(views);
    Py_XDECREF(result);
    return NULL;
}

PyMethodDef tfr_inflate_methods[] = {
    {"bind_libdeflate", bind_libdeflate, METH_O, bind_libdeflate_doc},
    {"inflate_members", inflate_members, METH_VARARGS, inflate_members_doc},
    {NULL, NULL, 0, NULL},
};
