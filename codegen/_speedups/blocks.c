/*
 * Block: the writable buffer the accelerator decodes numeric values into (numpy arrays view it
 * through the buffer protocol), and the pool that recycles large ones.
 *
 * A data loader decodes batch after batch of the same shape. Large buffers freed by the C
 * library go back to the operating system, and the next batch's buffer is fresh memory whose
 * every page faults on first write: in a virtual machine that costs more than decoding. So the
 * Block of a batch column (scan_batch's) or of a TFRecord reader's buffer (pooled_block's) of
 * POOL_MIN bytes or more is not freed when its last view goes: its memory waits in a small pool
 * (at most POOL_SLOTS buffers and POOL_BYTES bytes, the oldest freed first) for the next pooled
 * Block that fits (at least as large, at most twice). Other Blocks use the C allocator directly.
 * A lock guards the pool: decoders grow the Blocks they fill without holding the GIL (see
 * scan_batch), from several threads at once.
 */
#include "speedups.h"

#include <string.h>

#define POOL_MIN (256 * 1024)
#define POOL_SLOTS 64
#define POOL_BYTES ((Py_ssize_t)512 * 1024 * 1024)

typedef struct {
    uint8_t *data;
    Py_ssize_t capacity;
} Memory;

static Memory pool[POOL_SLOTS]; /* oldest first */
static int pooled;              /* how many slots are used */
static Py_ssize_t pooled_bytes;
static PyThread_type_lock pool_lock; /* guards the three above; made with the type */

static void
pool_enter(void)
{
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
}

static void
pool_leave(void)
{
    PyThread_release_lock(pool_lock);
}

/* Memory of at least ``size`` bytes: pooled memory that fits (when ``pooled``), else new (NULL:
 * out of memory). Needs no GIL. */
static Memory
memory_take(Py_ssize_t size, int pooled_block)
{
    Memory memory = {NULL, 0};
    if (pooled_block && size >= POOL_MIN) {
        pool_enter();
        int best = -1;
        for (int i = 0; i < pooled; i++) {
            Py_ssize_t capacity = pool[i].capacity;
            if (capacity >= size && capacity / 2 <= size
                && (best < 0 || capacity < pool[best].capacity)) {
                best = i;
            }
        }
        if (best >= 0) {
            memory = pool[best];
            pooled_bytes -= memory.capacity;
            memmove(pool + best, pool + best + 1, sizeof(Memory) * (size_t)(pooled - best - 1));
            pooled--;
            pool_leave();
            return memory;
        }
        pool_leave();
    }
    memory.data = PyMem_RawMalloc(size ? (size_t)size : 1);
    memory.capacity = memory.data == NULL ? 0 : size;
    return memory;
}

/* Give back memory: into the pool when it is a pooled Block's and large (making room by freeing
 * the oldest), else to the C allocator. Needs no GIL. */
static void
memory_give(Memory memory, int pooled_block)
{
    if (memory.data == NULL) {
        return;
    }
    if (!pooled_block || memory.capacity < POOL_MIN || memory.capacity > POOL_BYTES) {
        PyMem_RawFree(memory.data);
        return;
    }
    pool_enter();
    while (pooled == POOL_SLOTS || pooled_bytes + memory.capacity > POOL_BYTES) {
        PyMem_RawFree(pool[0].data);
        pooled_bytes -= pool[0].capacity;
        memmove(pool, pool + 1, sizeof(Memory) * (size_t)(pooled - 1));
        pooled--;
    }
    pool[pooled++] = memory;
    pooled_bytes += memory.capacity;
    pool_leave();
}

/* --- the Block type ------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Memory memory;
    Py_ssize_t size;    /* the bytes the buffer exposes */
    Py_ssize_t exports; /* buffer views handed out */
    int pooled;         /* whether its memory comes from and goes to the pool */
} Block;

static PyTypeObject BlockType;

PyObject *
tfr_block_new(Py_ssize_t capacity, int pooled_block)
{
    Block *block = PyObject_New(Block, &BlockType);
    if (block == NULL) {
        return NULL;
    }
    block->pooled = pooled_block;
    block->memory = memory_take(capacity, pooled_block);
    block->size = 0;
    block->exports = 0;
    if (block->memory.data == NULL) {
        Py_DECREF(block);
        return PyErr_NoMemory();
    }
    return (PyObject *)block;
}

uint8_t *
tfr_block_data(PyObject *block)
{
    return ((Block *)block)->memory.data;
}

Py_ssize_t
tfr_block_capacity(PyObject *block)
{
    return ((Block *)block)->memory.capacity;
}

int
tfr_block_grow(PyObject *object, Py_ssize_t capacity, Py_ssize_t keep)
{
    Block *block = (Block *)object;
    if (capacity <= block->memory.capacity) {
        return 0;
    }
    if (block->exports) { /* never for the caller's own Block (see speedups.h) */
        return -1;
    }
    Memory memory = memory_take(capacity, block->pooled);
    if (memory.data == NULL) {
        return -1;
    }
    if (keep) {
        memcpy(memory.data, block->memory.data, (size_t)keep);
    }
    memory_give(block->memory, block->pooled);
    block->memory = memory;
    return 0;
}

int
tfr_block_finish(PyObject *object, Py_ssize_t size)
{
    Block *block = (Block *)object;
    block->size = size;
    Py_ssize_t capacity = block->memory.capacity;
    /* Small buffers are fitted to their bytes, large ones when a quarter or more is unused (a
     * column presized for equal records is not: its memory keeps its size for the pool). */
    if (capacity > size && (capacity < POOL_MIN || capacity - size >= capacity / 4)) {
        uint8_t *data = PyMem_RawRealloc(block->memory.data, size ? (size_t)size : 1);
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        block->memory.data = data;
        block->memory.capacity = size;
    }
    return 0;
}

static void
block_dealloc(Block *block)
{
    memory_give(block->memory, block->pooled);
    Py_TYPE(block)->tp_free((PyObject *)block);
}

static int
block_getbuffer(Block *block, Py_buffer *view, int flags)
{
    if (PyBuffer_FillInfo(view, (PyObject *)block, block->memory.data, block->size, 0, flags) < 0) {
        return -1;
    }
    block->exports++;
    return 0;
}

static void
block_releasebuffer(Block *block, Py_buffer *view)
{
    (void)view;
    block->exports--;
}

static Py_ssize_t
block_length(Block *block)
{
    return block->size;
}

static PyObject *
block_bytes(Block *block, PyObject *unused)
{
    (void)unused;
    return PyBytes_FromStringAndSize((const char *)block->memory.data, block->size);
}

static PyObject *
block_richcompare(PyObject *self, PyObject *other, int op)
{
    if (op != Py_EQ && op != Py_NE) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(other, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    Block *block = (Block *)self;
    int equal = view.len == block->size
                && (block->size == 0 || memcmp(view.buf, block->memory.data, (size_t)view.len) == 0);
    PyBuffer_Release(&view);
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static PyBufferProcs block_as_buffer = {
    (getbufferproc)block_getbuffer,
    (releasebufferproc)block_releasebuffer,
};

static PySequenceMethods block_as_sequence = {
    .sq_length = (lenfunc)block_length,
};

static PyMethodDef block_methods[] = {
    {"__bytes__", (PyCFunction)block_bytes, METH_NOARGS, "The bytes of the buffer."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(block_doc,
"A writable buffer of decoded values (little-endian), viewed by numpy arrays.\n\n"
"Large ones recycle their memory through a small pool when the last view goes (see\n"
"codegen/_speedups/blocks.c). Compares equal to any bytes-like object of the same bytes.");

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "codegen._speedups.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = (destructor)block_dealloc,
    .tp_as_sequence = &block_as_sequence,
    .tp_as_buffer = &block_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = block_doc,
    .tp_richcompare = block_richcompare,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_methods = block_methods,
};

/* --- pool_stats (for tests and the curious) ------------------------------------------------- */

static PyObject *
pool_stats(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    pool_enter();
    int count = pooled;
    Py_ssize_t bytes = pooled_bytes;
    pool_leave();
    return Py_BuildValue("(in)", count, bytes);
}

PyDoc_STRVAR(pool_stats_doc,
"pool_stats() -> tuple[int, int]\n\n"
"How many freed large Block buffers wait in the pool for reuse, and their bytes.");

static PyObject *
pool_clear(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    pool_enter();
    Py_ssize_t freed = pooled_bytes;
    for (int i = 0; i < pooled; i++) {
        PyMem_RawFree(pool[i].data);
    }
    pooled = 0;
    pooled_bytes = 0;
    pool_leave();
    return PyLong_FromSsize_t(freed);
}

PyDoc_STRVAR(pool_clear_doc,
"pool_clear() -> int\n\n"
"Free every buffer waiting in the pool; returns their bytes.");

static PyObject *
pooled_block(PyObject *module, PyObject *arg)
{
    (void)module;
    Py_ssize_t size = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (size == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "pooled_block: the size must be >= 0");
        return NULL;
    }
    PyObject *block = tfr_block_new(size, 1);
    if (block != NULL) {
        ((Block *)block)->size = size;
    }
    return block;
}

PyDoc_STRVAR(pooled_block_doc,
"pooled_block(size, /) -> Block\n\n"
"A writable Block of ``size`` bytes (their content undefined) whose memory comes from and goes\n"
"back to the pool: the TFRecord reader's buffers.");

PyMethodDef tfr_blocks_methods[] = {
    {"pool_stats", pool_stats, METH_NOARGS, pool_stats_doc},
    {"pool_clear", pool_clear, METH_NOARGS, pool_clear_doc},
    {"pooled_block", pooled_block, METH_O, pooled_block_doc},
    {NULL, NULL, 0, NULL},
};

int
tfr_add_block_type(PyObject *module)
{
    if (pool_lock == NULL && (pool_lock = PyThread_allocate_lock()) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (PyType_Ready(&BlockType) < 0) {
        return -1;
    }
    Py_INCREF(&BlockType);
    if (PyModule_AddObject(module, "Block", (PyObject *)&BlockType) < 0) {
        Py_DECREF(&BlockType);
        return -1;
    }
    return 0;
}
