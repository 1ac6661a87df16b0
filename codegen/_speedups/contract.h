/*
 * The numbers the C accelerator shares with Python, generated from codegen/kinds.py (plan
 * operations, element codes) and codegen/dtypes.py (list kinds). Do not edit: regenerate with
 *     python -m codegen.kinds > codegen/_speedups/contract.h
 * (a test checks that this file is up to date).
 */
#ifndef TFR_CONTRACT_H
#define TFR_CONTRACT_H

/* The operations of an ExamplePlan (PlanOp). */
enum {
    OP_INT = 1,
    OP_BOOL = 2,
    OP_FLOAT = 3,
    OP_TEXT = 4,
    OP_BYTES = 5,
    OP_INT_ARRAY = 6,
    OP_FLOAT_ARRAY = 7,
    OP_TEXT_LIST = 8,
    OP_BYTES_LIST = 9,
    OP_RAW = 10,
    OP_STEPS_INT = 11,
    OP_STEPS_FLOAT = 12,
};

/* Which list of a tf.train.Feature holds the values: its field number (Wire). */
enum {
    LIST_BYTES = 1,
    LIST_FLOAT = 2,
    LIST_INT64 = 3,
};

/* The element code of each numeric dtype (its struct format character), and of a raw tensor
 * whose bytes are copied as they are. */
#define ELEMENT_INT64 'q'
#define ELEMENT_INT32 'i'
#define ELEMENT_INT16 'h'
#define ELEMENT_INT8 'b'
#define ELEMENT_UINT64 'Q'
#define ELEMENT_UINT32 'I'
#define ELEMENT_UINT16 'H'
#define ELEMENT_UINT8 'B'
#define ELEMENT_BOOL '?'
#define ELEMENT_FLOAT32 'f'
#define ELEMENT_FLOAT64 'd'
#define ELEMENT_FLOAT16 'e'
#define ELEMENT_RAW 'x'

#endif
