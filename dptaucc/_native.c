/* dptaucc._native: compiled loops of DP-tauCC's hot steps, bitwise equal to the numpy/scipy
 * kernels of dptaucc/kernels.py (which stay the reference and the fallback).
 *
 * Every output entry is computed with the same operations in the same order as the numpy
 * path: label sums add their terms in storage order starting from 0, and the exponential-
 * mechanism choice uses the C library's exp, index-order totals and a stable ascending order.
 * Build flags keep that true: no fast-math, no contraction of a*b+c into a fused multiply-add.
 * Arrays come in through the buffer protocol (C-contiguous; the Python side checks dtypes and
 * shapes), so no numpy header is needed at build time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#define TAIL_OFFSET 0x1p-54
#define TAIL_SCALE 0x1p-53
#define MAX_CHOICES 64

/* ------------------------------------------------------------------ buffers */

static int
get_buffer(PyObject *obj, Py_buffer *view, int writable, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        PyErr_Format(PyExc_TypeError, "%s: need a C-contiguous%s array", name,
                     writable ? " writable" : "");
        return -1;
    }
    return 0;
}

/* 'd' for float64, 'i' for a signed integer of 4 or 8 bytes */
static int
check_kind(Py_buffer *view, char kind, const char *name)
{
    const char *f = view->format ? view->format : "B";
    while (*f == '<' || *f == '=' || *f == '@')
        f++;
    int ok;
    if (kind == 'd')
        ok = f[0] == 'd' && f[1] == '\0' && view->itemsize == 8;
    else
        ok = (f[0] == 'i' || f[0] == 'l' || f[0] == 'q') && f[1] == '\0'
             && (view->itemsize == 4 || view->itemsize == 8);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: need %s values, got format '%s'", name,
                     kind == 'd' ? "float64" : "int32 or int64", f);
        return -1;
    }
    return 0;
}

static inline int64_t
int_at(const Py_buffer *view, Py_ssize_t i)
{
    return view->itemsize == 4 ? (int64_t)((const int32_t *)view->buf)[i]
                               : ((const int64_t *)view->buf)[i];
}

static Py_ssize_t
count_of(const Py_buffer *view)
{
    return view->len / view->itemsize;
}

/* the labels as an int32 copy (4 bytes each: the gathers stay in the cache), checked to lie in
 * [0, n_labels); NULL on error */
static int32_t *
checked_labels(const Py_buffer *view, int64_t n_labels, const char *name)
{
    Py_ssize_t count = count_of(view);
    if (n_labels > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: too many labels", name);
        return NULL;
    }
    int32_t *labels = PyMem_Malloc((count ? count : 1) * sizeof(int32_t));
    if (labels == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    int ok = 1;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t label = int_at(view, i);
        ok &= label >= 0 && label < n_labels;
        labels[i] = (int32_t)label;
    }
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "%s: a label lies outside [0, %lld)", name,
                     (long long)n_labels);
        PyMem_Free(labels);
        return NULL;
    }
    return labels;
}

/* the CSR arrays: indptr (n + 1, from 0, non-decreasing, ending at nnz), indices (checked
 * against n_cols by the loops as they read them), data */
typedef struct {
    Py_buffer indptr, indices, data;
    int held;
    Py_ssize_t n, nnz, n_cols;
} Csr;

static void
release_csr(Csr *csr)
{
    if (csr->held >= 3) PyBuffer_Release(&csr->data);
    if (csr->held >= 2) PyBuffer_Release(&csr->indices);
    if (csr->held >= 1) PyBuffer_Release(&csr->indptr);
    csr->held = 0;
}

static int
get_csr(PyObject *indptr, PyObject *indices, PyObject *data, Py_ssize_t n_cols, Csr *csr)
{
    csr->held = 0;
    if (get_buffer(indptr, &csr->indptr, 0, "indptr") < 0) return -1;
    csr->held = 1;
    if (get_buffer(indices, &csr->indices, 0, "indices") < 0) goto fail;
    csr->held = 2;
    if (get_buffer(data, &csr->data, 0, "data") < 0) goto fail;
    csr->held = 3;
    if (check_kind(&csr->indptr, 'i', "indptr") < 0
        || check_kind(&csr->indices, 'i', "indices") < 0
        || check_kind(&csr->data, 'd', "data") < 0)
        goto fail;
    if (csr->indptr.itemsize != csr->indices.itemsize) {
        PyErr_SetString(PyExc_TypeError, "indptr and indices must have the same integer type");
        goto fail;
    }
    csr->n = count_of(&csr->indptr) - 1;
    csr->nnz = count_of(&csr->data);
    if (csr->n < 0 || count_of(&csr->indices) != csr->nnz) {
        PyErr_SetString(PyExc_ValueError, "CSR arrays of inconsistent lengths");
        goto fail;
    }
    csr->n_cols = n_cols;
    return 0;
fail:
    release_csr(csr);
    return -1;
}

/* whether indptr runs from 0 to nnz without decreasing (a ValueError set if not) */
static int
check_row_pointers(const Csr *csr)
{
    int ok = int_at(&csr->indptr, 0) == 0 && int_at(&csr->indptr, csr->n) == csr->nnz;
    for (Py_ssize_t i = 1; i <= csr->n; i++)
        ok &= int_at(&csr->indptr, i) >= int_at(&csr->indptr, i - 1);
    if (!ok)
        PyErr_SetString(PyExc_ValueError,
                        "indptr must run from 0 to the number of non-zeros without decreasing");
    return ok;
}

/* ------------------------------------------------------------------ label sums */

/* What both label sums read and write: a CSR matrix, its labels (an int32 copy, checked) and
 * the output. By row (R^T A): one label per row, out n_labels x n_cols. By column (A C): one
 * label per column (their number is the matrix's n_cols), out n_rows x n_labels. */
typedef struct {
    Py_buffer lab, outb;
    Csr csr;
    int32_t *labels;
} LabelSum;

static int
open_label_sum(LabelSum *job, PyObject *indptr, PyObject *indices, PyObject *data,
               PyObject *labels_obj, Py_ssize_t n_labels, Py_ssize_t n_cols, int by_row,
               PyObject *out_obj)
{
    if (get_buffer(labels_obj, &job->lab, 0, "labels") < 0) return -1;
    if (check_kind(&job->lab, 'i', "labels") < 0) goto fail_labels;
    if (!by_row)
        n_cols = count_of(&job->lab);
    if (get_csr(indptr, indices, data, n_cols, &job->csr) < 0) goto fail_labels;
    if (by_row && count_of(&job->lab) != job->csr.n) {
        PyErr_SetString(PyExc_ValueError, "need one label per row");
        goto fail_csr;
    }
    if (get_buffer(out_obj, &job->outb, 1, "out") < 0) goto fail_csr;
    Py_ssize_t wanted = by_row ? n_labels * n_cols : job->csr.n * n_labels;
    if (check_kind(&job->outb, 'd', "out") < 0 || count_of(&job->outb) != wanted) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, by_row ? "out must hold n_labels x n_cols values"
                                                     : "out must hold n_rows x n_labels values");
        goto fail_out;
    }
    job->labels = checked_labels(&job->lab, n_labels, "labels");
    if (job->labels == NULL) goto fail_out;
    return 0;
fail_out:
    PyBuffer_Release(&job->outb);
fail_csr:
    release_csr(&job->csr);
fail_labels:
    PyBuffer_Release(&job->lab);
    return -1;
}

static void
close_label_sum(LabelSum *job)
{
    PyMem_Free(job->labels);
    PyBuffer_Release(&job->outb);
    release_csr(&job->csr);
    PyBuffer_Release(&job->lab);
}

/* out[i, labels[col]] += data over each row's entries in storage order (A C, n x L) */
#define COLUMN_SUMS(IDX)                                                            \
    for (Py_ssize_t i = 0; i < csr->n && !bad; i++) {                               \
        const IDX *ptr = (const IDX *)csr->indptr.buf;                              \
        memset(row, 0, n_labels * sizeof(double));                                  \
        for (Py_ssize_t j = ptr[i]; j < ptr[i + 1]; j++) {                          \
            uint64_t col = (uint64_t)((const IDX *)csr->indices.buf)[j];            \
            if (col >= (uint64_t)csr->n_cols) { bad = 1; break; }                   \
            row[labels[col]] += values[j];                                          \
        }                                                                           \
        memcpy(out + i * n_labels, row, n_labels * sizeof(double));                 \
        if (groups != NULL) {                                                       \
            double *group = group_out + (Py_ssize_t)groups[i] * n_labels;           \
            for (Py_ssize_t l = 0; l < n_labels; l++)                               \
                group[l] += row[l];                                                 \
        }                                                                           \
    }

static PyObject *
sum_by_column_label(PyObject *self, PyObject *args)
{
    PyObject *indptr, *indices, *data, *labels_obj, *out_obj;
    PyObject *groups_obj = Py_None, *group_out_obj = Py_None;
    Py_ssize_t n_labels, n_groups = 0;
    if (!PyArg_ParseTuple(args, "OOOOnO|OnO", &indptr, &indices, &data, &labels_obj, &n_labels,
                          &out_obj, &groups_obj, &n_groups, &group_out_obj))
        return NULL;
    LabelSum job;
    if (open_label_sum(&job, indptr, indices, data, labels_obj, n_labels, 0, 0, out_obj) < 0)
        return NULL;
    const Csr *csr = &job.csr;
    const int32_t *labels = job.labels;
    Py_buffer grb, gob;
    int32_t *groups = NULL;
    double *group_out = NULL;
    int held = 0; /* group buffers held: 0, 1 (groups) or 2 (and group_out) */
    /* optionally the rows' sums by group (R^T (A C), G x L) in the same pass */
    if (groups_obj != Py_None && get_buffer(groups_obj, &grb, 0, "groups") == 0) {
        held = 1;
        if (get_buffer(group_out_obj, &gob, 1, "group_out") == 0)
            held = 2;
    }
    if (held == 2 && check_kind(&grb, 'i', "groups") == 0
        && check_kind(&gob, 'd', "group_out") == 0) {
        if (count_of(&grb) != csr->n || count_of(&gob) != n_groups * n_labels)
            PyErr_SetString(PyExc_ValueError,
                            "need one group per row and group_out of n_groups x n_labels");
        else if ((groups = checked_labels(&grb, n_groups, "groups")) != NULL)
            group_out = (double *)gob.buf;
    }
    double *out = (double *)job.outb.buf;
    const double *values = (const double *)csr->data.buf;
    /* each row's sums in a small array of its own (in the L1 cache), then copied out */
    double *row = PyMem_Malloc((n_labels ? n_labels : 1) * sizeof(double));
    int bad = 0;
    if (row == NULL && !PyErr_Occurred())
        PyErr_NoMemory();
    if (!PyErr_Occurred() && check_row_pointers(csr)) {
        Py_BEGIN_ALLOW_THREADS
        if (group_out != NULL)
            memset(group_out, 0, (size_t)n_groups * n_labels * sizeof(double));
        if (csr->indices.itemsize == 4) {
            COLUMN_SUMS(int32_t)
        } else {
            COLUMN_SUMS(int64_t)
        }
        Py_END_ALLOW_THREADS
        if (bad)
            PyErr_SetString(PyExc_ValueError, "a column index lies outside the matrix");
    }
    PyMem_Free(row);
    PyMem_Free(groups);
    if (held > 1) PyBuffer_Release(&gob);
    if (held > 0) PyBuffer_Release(&grb);
    close_label_sum(&job);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* out[labels[i], col] += data over the non-zeros in storage order (R^T A, K x m) */
#define ROW_SUMS(IDX)                                                               \
    for (Py_ssize_t i = 0; i < csr->n && !bad; i++) {                               \
        const IDX *ptr = (const IDX *)csr->indptr.buf;                              \
        double *row = out + labels[i] * n_cols;                                     \
        for (Py_ssize_t j = ptr[i]; j < ptr[i + 1]; j++) {                          \
            uint64_t col = (uint64_t)((const IDX *)csr->indices.buf)[j];            \
            if (col >= (uint64_t)n_cols) { bad = 1; break; }                        \
            row[col] += values[j];                                                  \
        }                                                                           \
    }

static PyObject *
sum_by_row_label(PyObject *self, PyObject *args)
{
    PyObject *indptr, *indices, *data, *labels_obj, *out_obj;
    Py_ssize_t n_labels, n_cols;
    if (!PyArg_ParseTuple(args, "OOOOnnO", &indptr, &indices, &data, &labels_obj, &n_labels,
                          &n_cols, &out_obj))
        return NULL;
    LabelSum job;
    if (open_label_sum(&job, indptr, indices, data, labels_obj, n_labels, n_cols, 1,
                       out_obj) < 0)
        return NULL;
    const Csr *csr = &job.csr;
    const int32_t *labels = job.labels;
    double *out = (double *)job.outb.buf;
    const double *values = (const double *)csr->data.buf;
    int bad = 0;
    if (check_row_pointers(csr)) {
        Py_BEGIN_ALLOW_THREADS
        memset(out, 0, (size_t)n_labels * n_cols * sizeof(double));
        if (csr->indices.itemsize == 4) {
            ROW_SUMS(int32_t)
        } else {
            ROW_SUMS(int64_t)
        }
        Py_END_ALLOW_THREADS
        if (bad)
            PyErr_SetString(PyExc_ValueError, "a column index lies outside the matrix");
    }
    close_label_sum(&job);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* out[labels[i], :] += values[i, :] over the rows in order (R^T V, G x L) */
static PyObject *
sum_rows_by_label(PyObject *self, PyObject *args)
{
    PyObject *values_obj, *labels_obj, *out_obj;
    Py_ssize_t n_groups, width;
    if (!PyArg_ParseTuple(args, "OnOnO", &values_obj, &width, &labels_obj, &n_groups, &out_obj))
        return NULL;
    Py_buffer val, lab, outb;
    if (get_buffer(values_obj, &val, 0, "values") < 0) return NULL;
    if (get_buffer(labels_obj, &lab, 0, "labels") < 0) { PyBuffer_Release(&val); return NULL; }
    if (get_buffer(out_obj, &outb, 1, "out") < 0) {
        PyBuffer_Release(&lab);
        PyBuffer_Release(&val);
        return NULL;
    }
    int32_t *labels = NULL;
    if (check_kind(&val, 'd', "values") < 0 || check_kind(&lab, 'i', "labels") < 0
        || check_kind(&outb, 'd', "out") < 0)
        goto done;
    Py_ssize_t n = count_of(&lab);
    if (width < 0 || count_of(&val) != n * width || count_of(&outb) != n_groups * width) {
        PyErr_SetString(PyExc_ValueError, "values must be n x width and out n_groups x width");
        goto done;
    }
    labels = checked_labels(&lab, n_groups, "labels");
    if (labels == NULL) goto done;
    const double *values = (const double *)val.buf;
    double *out = (double *)outb.buf;
    Py_BEGIN_ALLOW_THREADS
    memset(out, 0, (size_t)n_groups * width * sizeof(double));
    for (Py_ssize_t i = 0; i < n; i++) {
        double *group = out + labels[i] * width;
        const double *row = values + i * width;
        for (Py_ssize_t l = 0; l < width; l++)
            group[l] += row[l];
    }
    Py_END_ALLOW_THREADS
done:
    PyMem_Free(labels);
    PyBuffer_Release(&outb);
    PyBuffer_Release(&lab);
    PyBuffer_Release(&val);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ the choice */

/* rows per block of the choice: its k x BLOCK_ROWS arrays stay in the L1/L2 cache */
#define BLOCK_ROWS 256
#define LANES 4
#define PAIRS (BLOCK_ROWS / LANES)

/* four doubles, and four 64-bit integers (comparisons of v2d give -1 for true, 0 for false):
 * GCC/Clang vector extensions, exact IEEE operations lane by lane */
typedef double v2d __attribute__((vector_size(8 * LANES)));
typedef long long v2i __attribute__((vector_size(8 * LANES)));

/* on x86-64 Linux the choice is compiled twice, for AVX2 and for the baseline, and the loader
 * picks the one the processor runs (the same operations either way, only wider) */
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define WIDE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define WIDE_CLONES
#endif

static inline v2d
select2(v2i mask, v2d a, v2d b)
{
    return (v2d)(((v2i)a & mask) | ((v2i)b & ~mask));
}

/* choose_by_inversion on a block of rows, laid out choice by choice (k rows of the block's
 * values, LANES rows per vector) so that every step but the exponential works on vectors.
 * Rows whose largest logit is not finite (NaN, +inf, or every logit -inf) get -1, and the
 * Python side handles them element by element. The weights are sorted by the comparators of
 * a sorting network (minima and maxima: exact), the cumulative sums run in that ascending
 * order, and the chosen value is traced back to its index with ties in index order, as a
 * stable sort places them. Returns the number of rows left at -1. */
WIDE_CLONES static Py_ssize_t
choose_block(const double *logits, Py_ssize_t rows, Py_ssize_t k, const double *hi,
             const double *lo, double scale, const int32_t *network, Py_ssize_t n_comparators,
             int64_t *out)
{
    v2d w[MAX_CHOICES][PAIRS], s[MAX_CHOICES][PAIRS];
    v2d top[PAIRS], total[PAIRS], u[PAIRS], picked[PAIRS];
    v2i regular[PAIRS], position[PAIRS], chosen[PAIRS];
    Py_ssize_t pairs = (rows + LANES - 1) / LANES, irregular = 0;
    const v2d scale2 = {scale, scale, scale, scale};
    const v2d zero = {0.0, 0.0, 0.0, 0.0};
    /* choice by choice; a padding row of an odd block scores 0 everywhere */
    for (Py_ssize_t b = 0; b < LANES * pairs; b++)
        for (Py_ssize_t j = 0; j < k; j++)
            ((double *)w[j])[b] = b < rows ? logits[b * k + j] : 0.0;
    for (Py_ssize_t p = 0; p < pairs; p++) {
        v2i nan = {0, 0, 0, 0};
        v2d best = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        for (Py_ssize_t j = 0; j < k; j++) {
            v2d c = scale != 1.0 ? w[j][p] / scale2 : w[j][p];
            w[j][p] = c;
            nan |= c != c;
            best = select2(c > best, c, best);
        }
        regular[p] = ((best - best) == 0) & ~nan; /* finite largest logit, no NaN */
        top[p] = select2(regular[p], best, zero);
    }
    for (Py_ssize_t b = 0; b < rows; b++)
        irregular += ((long long *)regular)[b] == 0;
    if (irregular) /* keep the steps below finite on those rows; their result is dropped */
        for (Py_ssize_t j = 0; j < k; j++)
            for (Py_ssize_t p = 0; p < pairs; p++)
                w[j][p] = select2(regular[p], w[j][p], zero);
    for (Py_ssize_t j = 0; j < k; j++) {
        for (Py_ssize_t p = 0; p < pairs; p++)
            w[j][p] -= top[p];
        double *values = (double *)w[j];
        for (Py_ssize_t b = 0; b < LANES * pairs; b++) /* the C library's exp */
            values[b] = exp(values[b]);
    }
    for (Py_ssize_t p = 0; p < pairs; p++) {
        v2d sum = w[0][p];
        for (Py_ssize_t j = 1; j < k; j++)
            sum += w[j][p];
        total[p] = sum;
    }
    for (Py_ssize_t p = 0; p < pairs; p++) {
        v2d h = {0.5, 0.5, 0.5, 0.5}, l = {0.5, 0.5, 0.5, 0.5};
        for (int lane = 0; lane < LANES; lane++)
            if (LANES * p + lane < rows) {
                h[lane] = hi[LANES * p + lane];
                l[lane] = lo[LANES * p + lane];
            }
        v2d v = l + TAIL_OFFSET;
        v *= TAIL_SCALE;
        v += h;
        u[p] = v * total[p];
    }
    memcpy(s, w, sizeof(v2d) * PAIRS * k);
    for (Py_ssize_t c = 0; c < n_comparators; c++) {
        v2d *x = s[network[2 * c]], *y = s[network[2 * c + 1]];
        for (Py_ssize_t p = 0; p < pairs; p++) {
            v2i less = x[p] < y[p];
            v2d a = x[p], d = y[p];
            x[p] = select2(less, a, d);
            y[p] = select2(less, d, a);
        }
    }
    /* the number of cumulative sums (ascending order, from the first) <= u among the first
     * k - 1: the position of the first one that exceeds u, or k - 1 */
    for (Py_ssize_t p = 0; p < pairs; p++) {
        v2d sum = s[0][p];
        v2i count = {0, 0, 0, 0};
        for (Py_ssize_t r = 0; r < k - 1; r++) {
            count -= sum <= u[p];
            sum += s[r + 1][p];
        }
        position[p] = count;
    }
    for (Py_ssize_t b = 0; b < LANES * pairs; b++)
        ((double *)picked)[b] = ((double *)s[((long long *)position)[b]])[b];
    /* the chosen index: the (position - #{w < picked})-th, from 0, of those equal to picked */
    for (Py_ssize_t p = 0; p < pairs; p++) {
        v2i count = position[p], index = {0, 0, 0, 0};
        for (Py_ssize_t j = 0; j < k; j++)
            count += w[j][p] < picked[p];
        for (Py_ssize_t j = 0; j < k - 1; j++) {
            count += w[j][p] == picked[p];
            index += 1 + (count >> 63);
        }
        chosen[p] = index;
    }
    for (Py_ssize_t b = 0; b < rows; b++)
        out[b] = ((long long *)regular)[b] ? ((long long *)chosen)[b] : -1;
    return irregular;
}

static PyObject *
choose_by_inversion(PyObject *self, PyObject *args)
{
    PyObject *logits_obj, *hi_obj, *lo_obj, *out_obj, *network_obj;
    Py_ssize_t k;
    double scale;
    if (!PyArg_ParseTuple(args, "OnOOdOO", &logits_obj, &k, &hi_obj, &lo_obj, &scale,
                          &network_obj, &out_obj))
        return NULL;
    if (k < 1 || k > MAX_CHOICES) {
        PyErr_Format(PyExc_ValueError, "choices per row must lie in [1, %d], got %zd",
                     MAX_CHOICES, k);
        return NULL;
    }
    Py_buffer bufs[5];
    PyObject *objs[5] = {logits_obj, hi_obj, lo_obj, network_obj, out_obj};
    const char *names[5] = {"logits", "hi", "lo", "network", "out"};
    int held = 0;
    Py_ssize_t irregular = 0;
    for (; held < 5; held++)
        if (get_buffer(objs[held], &bufs[held], held == 4, names[held]) < 0)
            goto done;
    Py_buffer *lg = &bufs[0], *hb = &bufs[1], *lb = &bufs[2], *nb = &bufs[3], *ob = &bufs[4];
    if (check_kind(lg, 'd', "logits") < 0 || check_kind(hb, 'd', "hi") < 0
        || check_kind(lb, 'd', "lo") < 0 || check_kind(nb, 'i', "network") < 0
        || check_kind(ob, 'i', "out") < 0)
        goto done;
    Py_ssize_t n = count_of(hb), n_comparators = count_of(nb) / 2;
    if (count_of(lg) != n * k || count_of(lb) != n || count_of(ob) != n
        || ob->itemsize != 8 || nb->itemsize != 4 || count_of(nb) % 2) {
        PyErr_SetString(PyExc_ValueError, "need logits n x k, n uniforms of each kind, an "
                        "int64 out of n values and int32 comparator pairs");
        goto done;
    }
    const int32_t *network = (const int32_t *)nb->buf;
    for (Py_ssize_t c = 0; c < 2 * n_comparators; c++) {
        if (network[c] < 0 || network[c] >= k) {
            PyErr_SetString(PyExc_ValueError, "a comparator lies outside the choices");
            goto done;
        }
    }
    const double *logits = (const double *)lg->buf;
    const double *hi = (const double *)hb->buf, *lo = (const double *)lb->buf;
    int64_t *out = (int64_t *)ob->buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i += BLOCK_ROWS) {
        Py_ssize_t rows = n - i < BLOCK_ROWS ? n - i : BLOCK_ROWS;
        irregular += choose_block(logits + i * k, rows, k, hi + i, lo + i, scale, network,
                                  n_comparators, out + i);
    }
    Py_END_ALLOW_THREADS
done:
    while (held > 0)
        PyBuffer_Release(&bufs[--held]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(irregular);
}

/* ------------------------------------------------------------------ range sensitivity */

/* max over d of (max_c W[c, d] - min_c W[c, d]) for W (C x D), NaN if W holds a NaN or a
 * range is inf - inf: numpy's W.max(0) - W.min(0), then max, whose values are exact (maxima
 * and minima round nothing, the differences are the same operations). by_dim: W is stored
 * dimension by dimension (Fortran order, W.T C-contiguous), else choice by choice. */
static PyObject *
max_range(PyObject *self, PyObject *args)
{
    PyObject *values_obj;
    Py_ssize_t n_choices, n_dims;
    int by_dim;
    if (!PyArg_ParseTuple(args, "Onnp", &values_obj, &n_choices, &n_dims, &by_dim))
        return NULL;
    Py_buffer val;
    if (get_buffer(values_obj, &val, 0, "weights") < 0) return NULL;
    if (check_kind(&val, 'd', "weights") < 0) { PyBuffer_Release(&val); return NULL; }
    if (n_choices < 1 || n_dims < 1 || count_of(&val) != n_choices * n_dims) {
        PyBuffer_Release(&val);
        PyErr_SetString(PyExc_ValueError, "weights must hold n_choices x n_dims >= 1 values");
        return NULL;
    }
    const double *w = (const double *)val.buf;
    double *top = NULL, *bottom = NULL, best = -INFINITY;
    int nan = 0;
    if (!by_dim) {
        top = PyMem_Malloc(2 * n_dims * sizeof(double));
        if (top == NULL) { PyBuffer_Release(&val); return PyErr_NoMemory(); }
        bottom = top + n_dims;
    }
    Py_BEGIN_ALLOW_THREADS
    if (by_dim) {
        for (Py_ssize_t d = 0; d < n_dims; d++) {
            const double *column = w + d * n_choices;
            double hi = column[0], lo = column[0];
            nan |= hi != hi;
            for (Py_ssize_t c = 1; c < n_choices; c++) {
                double v = column[c];
                nan |= v != v;
                hi = v > hi ? v : hi;
                lo = v < lo ? v : lo;
            }
            double range = hi - lo;
            nan |= range != range;
            best = range > best ? range : best;
        }
    } else {
        memcpy(top, w, n_dims * sizeof(double));
        memcpy(bottom, w, n_dims * sizeof(double));
        for (Py_ssize_t d = 0; d < n_dims; d++)
            nan |= w[d] != w[d];
        for (Py_ssize_t c = 1; c < n_choices; c++)
            for (Py_ssize_t d = 0; d < n_dims; d++) {
                double v = w[c * n_dims + d];
                nan |= v != v;
                top[d] = v > top[d] ? v : top[d];
                bottom[d] = v < bottom[d] ? v : bottom[d];
            }
        for (Py_ssize_t d = 0; d < n_dims; d++) {
            double range = top[d] - bottom[d];
            nan |= range != range;
            best = range > best ? range : best;
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(top);
    PyBuffer_Release(&val);
    return PyFloat_FromDouble(nan ? NAN : best);
}

/* ------------------------------------------------------------------ value summary */

/* (minimum of the finite values, all finite values whole, all finite, finite zeros) of
 * float64 values in one pass, LANES at a time: kernels.value_summary's facts, each exact.
 * A finite x is whole iff |x| >= 2^52 or (x + c) - c == x with c = 2^52 signed as x (the sum
 * rounds x to an integer, the difference is exact). */
WIDE_CLONES static void
summarise(const double *v, Py_ssize_t count, double *lowest, int *whole, int *finite,
          long long *zeros)
{
    const v2d big = {0x1p52, 0x1p52, 0x1p52, 0x1p52}, inf = {INFINITY, INFINITY, INFINITY,
                                                               INFINITY};
    const v2i sign = {LLONG_MIN, LLONG_MIN, LLONG_MIN, LLONG_MIN};
    v2d low = inf;
    v2i fractional = {0, 0, 0, 0}, infinite = {0, 0, 0, 0}, zero = {0, 0, 0, 0};
    Py_ssize_t i = 0;
    for (; i + LANES <= count; i += LANES) {
        v2d x;
        memcpy(&x, v + i, sizeof x);
        v2i ok = (x - x) == (x - x); /* finite: inf - inf and NaN - NaN are NaN */
        v2d c = (v2d)(((v2i)x & sign) | (v2i)big);
        v2d magnitude = (v2d)((v2i)x & ~sign);
        v2i integral = (magnitude >= big) | (((x + c) - c) == x);
        low = select2(ok & (x < low), x, low);
        fractional -= ok & ~integral;
        infinite -= ~ok;
        zero -= ok & (x == 0);
    }
    double best = INFINITY;
    long long frac = 0, inf_count = 0, zero_count = 0;
    for (int lane = 0; lane < LANES; lane++) {
        best = low[lane] < best ? low[lane] : best;
        frac += fractional[lane];
        inf_count += infinite[lane];
        zero_count += zero[lane];
    }
    for (; i < count; i++) {
        double x = v[i];
        if (x - x != x - x) {
            inf_count++;
            continue;
        }
        best = x < best ? x : best;
        frac += floor(x) != x;
        zero_count += x == 0;
    }
    *lowest = best;
    *whole = frac == 0;
    *finite = inf_count == 0;
    *zeros = zero_count;
}

static PyObject *
value_summary(PyObject *self, PyObject *args)
{
    PyObject *values_obj;
    if (!PyArg_ParseTuple(args, "O", &values_obj))
        return NULL;
    Py_buffer val;
    if (get_buffer(values_obj, &val, 0, "values") < 0) return NULL;
    if (check_kind(&val, 'd', "values") < 0) { PyBuffer_Release(&val); return NULL; }
    double lowest;
    int whole, finite;
    long long zeros;
    Py_BEGIN_ALLOW_THREADS
    summarise((const double *)val.buf, count_of(&val), &lowest, &whole, &finite, &zeros);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&val);
    return Py_BuildValue("(dNNL)", lowest, PyBool_FromLong(whole), PyBool_FromLong(finite),
                         zeros);
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"sum_by_column_label", sum_by_column_label, METH_VARARGS,
     "sum_by_column_label(indptr, indices, data, labels, n_labels, out[, groups, n_groups, "
     "group_out]): A C into out (n x L), and its rows summed by group into group_out"},
    {"sum_by_row_label", sum_by_row_label, METH_VARARGS,
     "sum_by_row_label(indptr, indices, data, labels, n_labels, n_cols, out): R^T A into out "
     "(K x m)"},
    {"sum_rows_by_label", sum_rows_by_label, METH_VARARGS,
     "sum_rows_by_label(values, width, labels, n_groups, out): R^T V into out (G x width)"},
    {"choose_by_inversion", choose_by_inversion, METH_VARARGS,
     "choose_by_inversion(logits, k, hi, lo, scale, network, out) -> number of rows left at -1"},
    {"value_summary", value_summary, METH_VARARGS,
     "value_summary(values) -> (minimum of the finite values, all whole, all finite, zeros)"},
    {"max_range", max_range, METH_VARARGS,
     "max_range(weights, n_choices, n_dims, by_dim) -> max_d (max_c W_cd - min_c W_cd), NaN "
     "if any"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "Compiled loops of DP-tauCC's hot steps, bitwise equal to dptaucc.kernels' numpy path.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "MAX_CHOICES", MAX_CHOICES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
