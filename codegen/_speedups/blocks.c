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
 *
 * Shared blocks (Linux): in a process that turns them on (use_shared_blocks: a DataLoader worker),
 * pooled memory is shared memory, an anonymous file (memfd_create) mapped after a header page, so
 * that the batch columns decoded into it reach the main process without a copy: the worker sends
 * the file once and, for each batch, where each column lies in which block (see
 * codegen/runtime/data/transfer.py). The header's first byte says the main process may still hold
 * the block's batch (the pool does not reuse the memory until it clears it), its second that the
 * main process has mapped the file. Shared memory is unmapped and its file closed when the pool lets it go; the
 * numbers of those let go wait in a list for shared_retired (the main process forgets them).
 */
#include "speedups.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#define POOL_MIN (256 * 1024)
#define POOL_SLOTS 64
#define POOL_BYTES ((Py_ssize_t)512 * 1024 * 1024)
#define SHARED_HEADER 4096 /* bytes before a shared block's data: its flags, and page alignment */
#define SHARED_RETIRED_MAX 4096

typedef struct {
    uint8_t *data;
    Py_ssize_t capacity;
    int fd;                /* shared memory: its anonymous file (-1: private memory) */
    long long number;      /* shared memory: its number in this process */
    long pid;              /* shared memory: the process that made it */
} Memory;

static Memory pool[POOL_SLOTS]; /* oldest first */
static int pooled;              /* how many slots are used */
static Py_ssize_t pooled_bytes;
static int shared_mode;         /* pooled memory is made shared */
static long long shared_made;   /* shared memories made (the last number given) */
static long long retired[SHARED_RETIRED_MAX]; /* numbers of shared memory let go, not yet asked for */
static int retired_count;
static PyThread_type_lock pool_lock; /* guards the seven above; made with the type */
static long this_pid;                /* this process (set again in a child after fork) */

/* Private memory of a Block: of ALIGN_MIN bytes or more, it starts on a page boundary. glibc puts
 * a large allocation 16 bytes into its pages, and this machine's kernel (AMD EPYC) copies a page
 * cache page into memory at that offset about ten times slower than into page-aligned memory
 * (measured: a MiB read in 0.75 ms against 0.07 ms): a reader's file reads land in these buffers. */
#define ALIGN_MIN (64 * 1024)
#define ALIGN_TO 4096

static uint8_t *
private_alloc(Py_ssize_t size)
{
#if !defined(_WIN32)
    if (size >= ALIGN_MIN) {
        void *data = NULL;
        return posix_memalign(&data, ALIGN_TO, (size_t)size) == 0 ? data : NULL;
    }
#endif
    return malloc(size ? (size_t)size : 1);
}

/* (free and realloc take memory from either of private_alloc's allocators.) */
static void
private_free(uint8_t *data)
{
    free(data);
}

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

/* New shared memory of ``size`` bytes (with the pool lock held): its data after the header page,
 * zeroed; data NULL when the system makes none (private memory is taken instead). Needs no GIL. */
static Memory
shared_new(Py_ssize_t size)
{
    Memory memory = {NULL, 0, -1, 0, 0};
#if defined(__linux__) && defined(MFD_CLOEXEC)
    if (size > PY_SSIZE_T_MAX - SHARED_HEADER) {
        return memory;
    }
    size_t total = (size_t)size + SHARED_HEADER;
    int fd = memfd_create("tfr-gen-block", MFD_CLOEXEC);
    if (fd < 0) {
        return memory;
    }
    if (ftruncate(fd, (off_t)total) < 0) {
        close(fd);
        return memory;
    }
    void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        close(fd);
        return memory;
    }
    memory.data = (uint8_t *)base + SHARED_HEADER;
    memory.capacity = size;
    memory.fd = fd;
    memory.number = ++shared_made;
    memory.pid = this_pid;
#else
    (void)size;
#endif
    return memory;
}

/* Unmaps shared memory and closes its file. */
static void
shared_unmap(Memory memory)
{
#if defined(__linux__)
    munmap(memory.data - SHARED_HEADER, (size_t)memory.capacity + SHARED_HEADER);
    close(memory.fd);
#else
    (void)memory;
#endif
}

/* Lets shared memory go (with the pool lock held): unmapped, its file closed, and, when this
 * process made it, its number kept for shared_retired. Needs no GIL. */
static void
shared_free(Memory memory)
{
    shared_unmap(memory);
    if (memory.pid == this_pid && retired_count < SHARED_RETIRED_MAX) {
        retired[retired_count++] = memory.number;
    }
}

/* Lets any memory go (with the pool lock held, for shared memory). Needs no GIL. */
static void
memory_free(Memory memory)
{
    if (memory.fd >= 0) {
        shared_free(memory);
    }
    else {
        private_free(memory.data);
    }
}

/* Whether shared memory's header says the main process may still hold the batch in it (its
 * Block was let go here; the memory waits in the pool until the main process clears the flag). */
static int
memory_held(Memory memory)
{
    return memory.fd >= 0 && ((volatile uint8_t *)(memory.data - SHARED_HEADER))[0] != 0;
}

/* Memory of at least ``size`` bytes: pooled memory that fits (when ``pooled``), else new (NULL:
 * out of memory): shared for a pooled one in a process that shares its blocks. Needs no GIL. */
static Memory
memory_take(Py_ssize_t size, int pooled_block)
{
    Memory memory = {NULL, 0, -1, 0, 0};
    if (pooled_block && size >= POOL_MIN) {
        pool_enter();
        int best = -1;
        for (int i = 0; i < pooled; i++) {
            Py_ssize_t capacity = pool[i].capacity;
            if (capacity >= size && capacity / 2 <= size
                && (best < 0 || capacity < pool[best].capacity) && !memory_held(pool[i])) {
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
        if (shared_mode) {
            memory = shared_new(size);
        }
        pool_leave();
        if (memory.data != NULL) {
            return memory;
        }
    }
    memory.data = private_alloc(size);
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
    /* (Shared memory made before a fork is the parent's too: never reused by the child.) */
    if (!pooled_block || memory.capacity < POOL_MIN || memory.capacity > POOL_BYTES
        || (memory.fd >= 0) != shared_mode || (memory.fd >= 0 && memory.pid != this_pid)) {
        if (memory.fd >= 0) {
            pool_enter();
            shared_free(memory);
            pool_leave();
        }
        else {
            private_free(memory.data);
        }
        return;
    }
    pool_enter();
    while (pooled == POOL_SLOTS || pooled_bytes + memory.capacity > POOL_BYTES) {
        memory_free(pool[0]);
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
     * column presized for equal records is not: its memory keeps its size for the pool); shared
     * memory keeps its size. */
    if (block->memory.fd < 0 && capacity > size
        && (capacity < POOL_MIN || capacity - size >= capacity / 4)) {
        uint8_t *data = realloc(block->memory.data, size ? (size_t)size : 1);
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

/* The shared memory's header (NULL for private memory). */
static volatile uint8_t *
block_header(Block *block)
{
    return block->memory.fd >= 0 ? (volatile uint8_t *)(block->memory.data - SHARED_HEADER) : NULL;
}

static PyObject *
block_shared_memory(Block *block, PyObject *unused)
{
    (void)unused;
    volatile uint8_t *header = block_header(block);
    if (header == NULL) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(Lin(KK)i)", block->memory.number, block->memory.fd,
                         block->memory.capacity + SHARED_HEADER,
                         (unsigned long long)(uintptr_t)block->memory.data,
                         (unsigned long long)SHARED_HEADER, (int)header[1]);
}

static PyObject *
block_hold(Block *block, PyObject *unused)
{
    (void)unused;
    volatile uint8_t *header = block_header(block);
    if (header == NULL) {
        PyErr_SetString(PyExc_ValueError, "Block.hold: the block's memory is not shared");
        return NULL;
    }
    header[0] = 1;
    Py_RETURN_NONE;
}

static PyObject *
block_held(Block *block, PyObject *unused)
{
    (void)unused;
    volatile uint8_t *header = block_header(block);
    return PyBool_FromLong(header != NULL && header[0] != 0);
}

static PyMethodDef block_methods[] = {
    {"__bytes__", (PyCFunction)block_bytes, METH_NOARGS, "The bytes of the buffer."},
    {"shared_memory", (PyCFunction)block_shared_memory, METH_NOARGS,
     "shared_memory() -> tuple | None\n\n"
     "For a block in shared memory: (number, fd, mapping size, (data address, data offset in the\n"
     "mapping), mapped: whether the header says the main process mapped it); else None."},
    {"hold", (PyCFunction)block_hold, METH_NOARGS,
     "hold() -> None\n\nMarks a shared block held by the main process (its header's first byte)."},
    {"held", (PyCFunction)block_held, METH_NOARGS,
     "held() -> bool\n\nWhether a shared block is still marked held (the main process clears it)."},
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
        memory_free(pool[i]);
    }
    pooled = 0;
    pooled_bytes = 0;
    pool_leave();
    return PyLong_FromSsize_t(freed);
}

static PyObject *
use_shared_blocks(PyObject *module, PyObject *arg)
{
    int enable = PyObject_IsTrue(arg);
    if (enable < 0) {
        return NULL;
    }
#if !defined(__linux__) || !defined(MFD_CLOEXEC)
    if (enable) {
        PyErr_SetString(PyExc_OSError, "use_shared_blocks: shared blocks need Linux (memfd_create)");
        return NULL;
    }
#endif
    PyObject *freed = pool_clear(module, NULL); /* the pool holds one kind of memory */
    if (freed == NULL) {
        return NULL;
    }
    Py_DECREF(freed);
    pool_enter();
    shared_mode = enable;
    pool_leave();
    Py_RETURN_NONE;
}

static PyObject *
after_fork(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    /* Only the forking thread runs in the child: the lock may have been held by another one. */
    PyThread_type_lock lock = PyThread_allocate_lock();
    if (lock == NULL) {
        return PyErr_NoMemory();
    }
    pool_lock = lock; /* (the parent's copy is left as it is) */
#if defined(__linux__)
    this_pid = (long)getpid();
#endif
    shared_mode = 0;
    retired_count = 0;
    int kept = 0;
    for (int i = 0; i < pooled; i++) {
        if (pool[i].fd >= 0) { /* the parent's as much as this process's: let go */
            shared_unmap(pool[i]);
            pooled_bytes -= pool[i].capacity;
        }
        else {
            pool[kept++] = pool[i];
        }
    }
    pooled = kept;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(after_fork_doc,
"after_fork() -> None\n\n"
"In a child process just forked (os.register_at_fork): the pool lets the parent's shared memory\n"
"go and makes private memory again, under a new lock (see codegen/_speedups/blocks.c).");

PyDoc_STRVAR(use_shared_blocks_doc,
"use_shared_blocks(enable, /) -> None\n\n"
"Whether pooled Blocks made from now on in this process are shared memory (Linux: an anonymous\n"
"file mapped after a header page; see codegen/_speedups/blocks.c). Empties the pool.");

static PyObject *
shared_retired(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    pool_enter();
    int count = retired_count;
    long long numbers[SHARED_RETIRED_MAX];
    memcpy(numbers, retired, sizeof(long long) * (size_t)count);
    retired_count = 0;
    pool_leave();
    PyObject *out = PyList_New(count);
    if (out == NULL) {
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        PyObject *number = PyLong_FromLongLong(numbers[i]);
        if (number == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, number);
    }
    return out;
}

PyDoc_STRVAR(shared_retired_doc,
"shared_retired() -> list[int]\n\n"
"The numbers of the shared blocks' memory let go (unmapped) since the last call (at most 4096).");

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
    {"use_shared_blocks", use_shared_blocks, METH_O, use_shared_blocks_doc},
    {"shared_retired", shared_retired, METH_NOARGS, shared_retired_doc},
    {"after_fork", after_fork, METH_NOARGS, after_fork_doc},
    {NULL, NULL, 0, NULL},
};

int
tfr_add_block_type(PyObject *module)
{
    if (pool_lock == NULL && (pool_lock = PyThread_allocate_lock()) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
#if defined(__linux__)
    this_pid = (long)getpid();
#endif
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
