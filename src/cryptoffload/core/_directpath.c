/* The direct paths, compiled: cryptoffload.directpath documents the contract.
 *
 * Three base types (and SizeLog, the counters' record). ChainedCore, a Cipher context's
 * held-back update path, is described where it is defined below. The AEAD path's two:
 * LaneCore holds the fields of a Lane that the direct paths read on every operation
 * (provider, direct, direct_q, direct_below, direct_above, direct_room, hold_below,
 * hold_above, tally, tally_q); Lane subclasses it in Python. AeadCore holds a primitive's
 * lane, provider, `cryptography` object and tag length, and defines encrypt, decrypt,
 * encrypt_into and decrypt_into: when the lane bound is the one in force, the data is bytes,
 * software takes its size and the lane's record has room, they call OpenSSL's object and
 * append the size to the record; anything else goes to the Python method of the same name
 * with a leading underscore (_encrypt ...), which takes every decision the slow way. The
 * pure-Python twins in directpath.py do exactly the same; the tests run both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

/* Set once by configure(): the `using` blocks' ContextVar, the default provider's box
 * (a one-item list) and cryptography's InvalidTag. */
/* Inlined into each caller: a per-op helper whose call would cost more than its body. */
#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE inline __attribute__((always_inline))
#else
#define HOT_INLINE inline
#endif

static PyObject *current_var = NULL;
static PyObject *default_box = NULL;
static PyObject *invalid_tag = NULL;

static PyObject *str_encrypt, *str_decrypt, *str_encrypt_into, *str_decrypt_into;
static PyObject *str_fold_due;
static PyObject *str_update, *str_update_into, *str_slow_update, *str_slow_update_into;
static PyObject *str_slow_encrypt, *str_slow_decrypt, *str_slow_encrypt_into,
    *str_slow_decrypt_into;
static PyObject *str_explain, *str_derive, *str_slow_derive, *str_algorithm, *str_length,
    *str_salt, *str_info;
static PyObject *str_tag, *str_authenticate_additional_data, *str_finalize_with_tag,
    *str_slow_aad, *str_slow_finalize_with_tag, *str_validate_for_algorithm, *str_slow_context;
static PyObject *str_direct, *str_key, *str_provider, *str_backend, *str_finalize, *str_verify,
    *str_copy, *str_slow_init, *str_slow_finalize, *str_slow_verify, *str_slow_copy, *str_digest;
static PyObject *str_open_session, *str_engine_failed, *str_engine_after, *str_append,
    *str_session_failed, *str_fork, *str_finish;
static PyObject *str_engine, *str_session, *str_nonce, *str_initialization_vector,
    *str_no_session;
static PyObject *str_update_aad, *str_resend, *str_engine_output, *str_engine_finalized,
    *str_check_failed, *str_tag_missing, *str_stream_done;
static PyObject *str_open_aead_stream, *str_name, *str_high, *str_floor, *str_min_tag_length,
    *str_max_encrypted_bytes, *str_max_aad_bytes, *str_fields_upper, *str_alg, *str_kind;

/* Sizes a record holds before it is folded (counters.FOLD_AT; a test checks they agree). */
#define FOLD_AT 4096
/* The longest data or associated data an AEAD op takes (validate.AEAD_MAX). */
#define AEAD_MAX (((Py_ssize_t)1 << 31) - 1)

/* -- SizeLog: the counters' record of operation sizes ------------------------------------ */

typedef struct {
    PyObject_HEAD
    Py_ssize_t *items;
    Py_ssize_t len;
    Py_ssize_t cap;
} SizeLog;

static PyTypeObject SizeLogType;
static int set_size(Py_ssize_t *field, PyObject *value, const char *name);

/* The record is full: twice the room (out of line, rarely run). */
static int
sizelog_grow(SizeLog *log)
{
    Py_ssize_t cap = log->cap ? log->cap * 2 : FOLD_AT + 16;
    Py_ssize_t *items = PyMem_Resize(log->items, Py_ssize_t, cap);
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    log->items = items;
    log->cap = cap;
    return 0;
}

static HOT_INLINE int
sizelog_push(SizeLog *log, Py_ssize_t n)
{
    if (log->len == log->cap && sizelog_grow(log) < 0)
        return -1;
    log->items[log->len++] = n;
    return 0;
}

/* After a drain: a record that grew large (a burst between folds) gives its memory back. */
static void
sizelog_emptied(SizeLog *log)
{
    log->len = 0;
    if (log->cap > 16384) {
        PyMem_Free(log->items);
        log->items = NULL;
        log->cap = 0;
    }
}

static void
sizelog_dealloc(SizeLog *self)
{
    PyMem_Free(self->items);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
sizelog_append(SizeLog *self, PyObject *size)
{
    Py_ssize_t n = PyLong_AsSsize_t(size);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (sizelog_push(self, n) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
sizelog_drain(SizeLog *self, PyObject *unused)
{
    PyObject *out = PyList_New(self->len);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->len; i++) {
        PyObject *size = PyLong_FromSsize_t(self->items[i]);
        if (size == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, size);
    }
    sizelog_emptied(self);
    return out;
}

static PyObject *
sizelog_drain_total(SizeLog *self, PyObject *unused)
{
    long long total = 0;
    for (Py_ssize_t i = 0; i < self->len; i++)
        total += self->items[i];
    PyObject *out = Py_BuildValue("(nL)", self->len, total);
    if (out != NULL)
        sizelog_emptied(self);
    return out;
}

/* One pass over the record for a fold, which it empties: the sum of its sizes and, per edge,
 * how many counted sizes are below it (a new list), or NULL with an error set. Every size is
 * counted; with `marked_only`, only the held-back ones marked ~size (read as size), *marked
 * telling how many there were. */
static PyObject *
drain_counting(SizeLog *self, PyObject *edges, int marked_only, long long *total,
               Py_ssize_t *marked)
{
    PyObject *seq = PySequence_Fast(edges, "edges must be a sequence of ints");
    if (seq == NULL)
        return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    Py_ssize_t *bound = PyMem_New(Py_ssize_t, k ? k : 1);
    Py_ssize_t *count = PyMem_New(Py_ssize_t, k ? k : 1);
    PyObject *counts = NULL;
    if (bound == NULL || count == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        if (set_size(&bound[j], PySequence_Fast_GET_ITEM(seq, j), "an edge") < 0)
            goto done;
        count[j] = 0;
    }
    /* Locals, not the pointers' targets, in the loop: stores through them could alias the
     * record, and the compiler would reload and store every one each size. One route (two
     * edges, the common case) gets a loop of its own. */
    long long sum = 0;
    Py_ssize_t held = 0, len = self->len;
    const Py_ssize_t *items = self->items;
    if (k == 2) {
        Py_ssize_t low = bound[0], high = bound[1], under_low = 0, under_high = 0;
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_ssize_t n = items[i];
            if (marked_only) {
                if (n >= 0) {
                    sum += n;
                    continue;
                }
                n = ~n;
                held++;
            }
            sum += n;
            under_low += n < low;
            under_high += n < high;
        }
        count[0] = under_low;
        count[1] = under_high;
    }
    else {
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_ssize_t n = items[i];
            if (marked_only) {
                if (n >= 0) {
                    sum += n;
                    continue;
                }
                n = ~n;
                held++;
            }
            sum += n;
            for (Py_ssize_t j = 0; j < k; j++)
                count[j] += n < bound[j];
        }
    }
    *total = sum;
    *marked = held;
    counts = PyList_New(k);
    if (counts == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *c = PyLong_FromSsize_t(count[j]);
        if (c == NULL) {
            Py_CLEAR(counts);
            goto done;
        }
        PyList_SET_ITEM(counts, j, c);
    }
done:
    PyMem_Free(bound);
    PyMem_Free(count);
    Py_DECREF(seq);
    return counts;
}

/* drain_below(edges): (how many, their sum, [how many are below each edge]), and an empty
 * record. Edges beyond the sizes an object can have count as the largest. */
static PyObject *
sizelog_drain_below(SizeLog *self, PyObject *edges)
{
    long long total;
    Py_ssize_t marked, n = self->len;
    PyObject *counts = drain_counting(self, edges, 0, &total, &marked);
    if (counts == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(nLN)", n, total, counts);
    if (out != NULL)
        sizelog_emptied(self);
    return out;
}

/* drain_marked(edges): for a record of plain sizes and held-back ones marked ~size: (how many,
 * the sum of their sizes, how many were marked, [how many marked sizes are below each edge]),
 * and an empty record. */
static PyObject *
sizelog_drain_marked(SizeLog *self, PyObject *edges)
{
    long long total;
    Py_ssize_t marked, n = self->len;
    PyObject *counts = drain_counting(self, edges, 1, &total, &marked);
    if (counts == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(nLnN)", n, total, marked, counts);
    if (out != NULL)
        sizelog_emptied(self);
    return out;
}

static Py_ssize_t
sizelog_length(SizeLog *self)
{
    return self->len;
}

static PyObject *
sizelog_repr(SizeLog *self)
{
    return PyUnicode_FromFormat("<SizeLog of %zd>", self->len);
}

static PyMethodDef sizelog_methods[] = {
    {"append", (PyCFunction)sizelog_append, METH_O, PyDoc_STR("Record one size.")},
    {"drain", (PyCFunction)sizelog_drain, METH_NOARGS,
     PyDoc_STR("The sizes recorded, in order, and an empty record.")},
    {"drain_total", (PyCFunction)sizelog_drain_total, METH_NOARGS,
     PyDoc_STR("(how many, their sum), and an empty record.")},
    {"drain_marked", (PyCFunction)sizelog_drain_marked, METH_O,
     PyDoc_STR("drain_marked(edges): (how many, their sizes' sum, how many were marked ~size, "
               "[how many marked sizes are below each edge]), and an empty record.")},
    {"drain_below", (PyCFunction)sizelog_drain_below, METH_O,
     PyDoc_STR("drain_below(edges): (how many, their sum, [how many are below each edge]), "
               "and an empty record.")},
    {NULL},
};

static PySequenceMethods sizelog_as_sequence = {
    .sq_length = (lenfunc)sizelog_length,
};

static PyTypeObject SizeLogType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.SizeLog",
    .tp_doc = PyDoc_STR("Sizes of operations not yet folded into the counters (compiled)."),
    .tp_basicsize = sizeof(SizeLog),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)sizelog_dealloc,
    .tp_repr = (reprfunc)sizelog_repr,
    .tp_methods = sizelog_methods,
    .tp_as_sequence = &sizelog_as_sequence,
};

/* -- LaneCore --------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *provider;
    PyObject *direct;
    PyObject *direct_q;
    PyObject *tally;
    PyObject *tally_q;
    Py_ssize_t direct_below;
    Py_ssize_t direct_above;
    Py_ssize_t direct_room;
    Py_ssize_t hold_below;
    Py_ssize_t hold_above;
    /* The ints hold_below and hold_above were set to, given back as they are: Python code
     * reads them per op (a new int per read would cost it). NULL: not set yet. */
    PyObject *hold_below_set;
    PyObject *hold_above_set;
    /* The engine route (Lane.set_engine_route): the first route, when its engine keeps
     * sessions and no per-op Python is needed (else None); the sizes it admits; its counter
     * cell's record; the provider's FallbackWatch.misses (an answer ends a miss run). */
    PyObject *engine_route;
    Py_ssize_t engine_floor;
    Py_ssize_t engine_ceiling;
    PyObject *engine_pending;
    PyObject *watch_misses;
} LaneCore;

static int
lane_traverse(LaneCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->provider);
    Py_VISIT(self->direct);
    Py_VISIT(self->direct_q);
    Py_VISIT(self->tally);
    Py_VISIT(self->tally_q);
    Py_VISIT(self->engine_route);
    Py_VISIT(self->engine_pending);
    Py_VISIT(self->watch_misses);
    return 0;
}

static int
lane_clear(LaneCore *self)
{
    Py_CLEAR(self->provider);
    Py_CLEAR(self->direct);
    Py_CLEAR(self->direct_q);
    Py_CLEAR(self->tally);
    Py_CLEAR(self->tally_q);
    Py_CLEAR(self->hold_below_set);
    Py_CLEAR(self->hold_above_set);
    Py_CLEAR(self->engine_route);
    Py_CLEAR(self->engine_pending);
    Py_CLEAR(self->watch_misses);
    return 0;
}

static void
lane_dealloc(LaneCore *self)
{
    PyObject_GC_UnTrack(self);
    lane_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
lane_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    LaneCore *self = (LaneCore *)type->tp_alloc(type, 0);
    if (self != NULL) {
        /* Until the Lane sets them: no size is the direct path's, and the record is full. */
        self->direct_below = -1;
        self->direct_above = PY_SSIZE_T_MAX;
        self->direct_room = 0;
        /* and no size is held back from the engines */
        self->hold_below = -1;
        self->hold_above = PY_SSIZE_T_MAX;
        /* and no engine route */
        self->engine_floor = PY_SSIZE_T_MAX;
        self->engine_ceiling = -1;
    }
    return (PyObject *)self;
}

/* The size fields: any int. Above the largest size an object can have, a bound means
 * "never" and is kept as that largest size (the comparisons give the same answers). */
static int
set_size(Py_ssize_t *field, PyObject *value, const char *name)
{
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "%s cannot be deleted", name);
        return -1;
    }
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int", name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow > 0 || v > PY_SSIZE_T_MAX)
        *field = PY_SSIZE_T_MAX;
    else if (overflow < 0 || v < -PY_SSIZE_T_MAX)
        *field = -PY_SSIZE_T_MAX;
    else
        *field = (Py_ssize_t)v;
    return 0;
}

#define SIZE_GETSET(NAME)                                                              \
    static PyObject *lane_get_##NAME(LaneCore *self, void *closure)                    \
    {                                                                                  \
        return PyLong_FromSsize_t(self->NAME);                                         \
    }                                                                                  \
    static int lane_set_##NAME(LaneCore *self, PyObject *value, void *closure)         \
    {                                                                                  \
        return set_size(&self->NAME, value, #NAME);                                    \
    }

SIZE_GETSET(direct_below)
SIZE_GETSET(direct_above)
SIZE_GETSET(direct_room)
SIZE_GETSET(engine_floor)
SIZE_GETSET(engine_ceiling)
/* A size field that gives back the int it was set to (the C field: that int, clamped). */
#define HELD_SIZE_GETSET(NAME)                                                         \
    static PyObject *lane_get_##NAME(LaneCore *self, void *closure)                    \
    {                                                                                  \
        if (self->NAME##_set != NULL)                                                  \
            return Py_NewRef(self->NAME##_set);                                        \
        return PyLong_FromSsize_t(self->NAME);                                         \
    }                                                                                  \
    static int lane_set_##NAME(LaneCore *self, PyObject *value, void *closure)         \
    {                                                                                  \
        if (set_size(&self->NAME, value, #NAME) < 0)                                   \
            return -1;                                                                 \
        Py_INCREF(value);                                                              \
        Py_XSETREF(self->NAME##_set, value);                                           \
        return 0;                                                                      \
    }

HELD_SIZE_GETSET(hold_below)
HELD_SIZE_GETSET(hold_above)

static PyGetSetDef lane_getset[] = {
    {"direct_below", (getter)lane_get_direct_below, (setter)lane_set_direct_below,
     "Sizes below this are the direct path's.", NULL},
    {"direct_above", (getter)lane_get_direct_above, (setter)lane_set_direct_above,
     "Sizes above this are the direct path's.", NULL},
    {"direct_room", (getter)lane_get_direct_room, (setter)lane_set_direct_room,
     "The direct path records while len(direct_q) is below this.", NULL},
    {"hold_below", (getter)lane_get_hold_below, (setter)lane_set_hold_below,
     "Sizes below this are held back from every engine.", NULL},
    {"hold_above", (getter)lane_get_hold_above, (setter)lane_set_hold_above,
     "Sizes above this are held back from every engine.", NULL},
    {"engine_floor", (getter)lane_get_engine_floor, (setter)lane_set_engine_floor,
     "The engine route takes sizes from this up.", NULL},
    {"engine_ceiling", (getter)lane_get_engine_ceiling, (setter)lane_set_engine_ceiling,
     "The engine route takes sizes up to this.", NULL},
    {NULL},
};

static PyMemberDef lane_members[] = {
    {"provider", T_OBJECT_EX, offsetof(LaneCore, provider), 0, "The lane's provider."},
    {"direct", T_OBJECT_EX, offsetof(LaneCore, direct), 0, "Records one direct op's size."},
    {"direct_q", T_OBJECT_EX, offsetof(LaneCore, direct_q), 0, "The direct path's record."},
    {"tally", T_OBJECT_EX, offsetof(LaneCore, tally), 0,
     "Records one software op's size (~size: held back from every engine)."},
    {"tally_q", T_OBJECT_EX, offsetof(LaneCore, tally_q), 0,
     "The record tally appends to, when tally is its bound append."},
    {"engine_route", T_OBJECT_EX, offsetof(LaneCore, engine_route), 0,
     "The route whose engine's sessions take ops directly, or None."},
    {"engine_pending", T_OBJECT_EX, offsetof(LaneCore, engine_pending), 0,
     "The engine route's counter record."},
    {"watch_misses", T_OBJECT_EX, offsetof(LaneCore, watch_misses), 0,
     "The provider's FallbackWatch.misses."},
    {NULL},
};

static PyTypeObject LaneCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.LaneCore",
    .tp_doc = PyDoc_STR("The fields of a Lane that the direct path reads (compiled)."),
    .tp_basicsize = sizeof(LaneCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = lane_new,
    .tp_dealloc = (destructor)lane_dealloc,
    .tp_traverse = (traverseproc)lane_traverse,
    .tp_clear = (inquiry)lane_clear,
    .tp_members = lane_members,
    .tp_getset = lane_getset,
};

/* -- AeadCore --------------------------------------------------------------------------- */

/* Whether any `using` block has set the ContextVar in this process (note_using()): until one
 * has, every context holds its default (None) and the direct path need not look it up. */
static int using_seen = 0;

enum { ENCRYPT, DECRYPT, ENCRYPT_INTO, DECRYPT_INTO, CALLS };

typedef struct {
    PyObject_HEAD
    PyObject *lane;
    PyObject *provider;
    PyObject *sw;
    PyObject *tag_length;
    /* Set with _lane: it is a LaneCore (else the direct path never runs). */
    int lane_is_core;
    /* Set with _sw: its bound encrypt, decrypt, encrypt_into and decrypt_into (no lookup per
     * op), each NULL where sw has none (then looked up per op, which raises as Python would). */
    PyObject *calls[CALLS];
    /* The engine route's session for this key (an engine's ``session(op)``, or None: none
     * kept), the route it was made for, and its bound encrypt and decrypt. */
    PyObject *session;
    PyObject *session_route;
    PyObject *session_calls[2];
    /* The nonce lengths the mode takes (none while nonce_max < 1: no engine route), and
     * whether CCM's rule applies (a nonce of L bytes leaves 15 - L to count the payload). */
    Py_ssize_t nonce_min;
    Py_ssize_t nonce_max;
    Py_ssize_t ccm_rule;
} AeadCore;

static PyObject **const call_names[CALLS] = {&str_encrypt, &str_decrypt, &str_encrypt_into,
                                       &str_decrypt_into};

static int
aead_traverse(AeadCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lane);
    Py_VISIT(self->provider);
    Py_VISIT(self->sw);
    Py_VISIT(self->tag_length);
    for (int i = 0; i < CALLS; i++)
        Py_VISIT(self->calls[i]);
    Py_VISIT(self->session);
    Py_VISIT(self->session_route);
    Py_VISIT(self->session_calls[0]);
    Py_VISIT(self->session_calls[1]);
    return 0;
}

static int
aead_clear(AeadCore *self)
{
    Py_CLEAR(self->lane);
    Py_CLEAR(self->provider);
    Py_CLEAR(self->sw);
    Py_CLEAR(self->tag_length);
    for (int i = 0; i < CALLS; i++)
        Py_CLEAR(self->calls[i]);
    Py_CLEAR(self->session);
    Py_CLEAR(self->session_route);
    Py_CLEAR(self->session_calls[0]);
    Py_CLEAR(self->session_calls[1]);
    self->lane_is_core = 0;
    return 0;
}

static void
aead_dealloc(AeadCore *self)
{
    PyObject_GC_UnTrack(self);
    aead_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
get_field(PyObject *value, const char *name)
{
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "%s", name);
        return NULL;
    }
    return Py_NewRef(value);
}

static PyObject *
aead_get_lane(AeadCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

/* A core's _lane := value (NULL: deleted); returns whether it is a LaneCore, the one kind of
 * lane the compiled paths read. */
static int
set_lane(PyObject **field, PyObject *value)
{
    Py_XINCREF(value);
    Py_XSETREF(*field, value);
    return value != NULL && PyObject_TypeCheck(value, &LaneCoreType);
}

/* The builtin methods `names` of sw, bound once into calls[] (new references; NULL where sw's
 * is none, or not a builtin: looked up per op, as Python would). -1 with an error set, calls[]
 * then left all NULL. */
static int
bind_builtins(PyObject *sw, PyObject **const names[], int n, PyObject *calls[])
{
    for (int i = 0; i < n; i++) {
        calls[i] = NULL;
        PyObject *found = PyObject_GetAttr(sw, *names[i]);
        if (found != NULL && PyCFunction_Check(found))
            calls[i] = found;
        else if (found != NULL)
            Py_DECREF(found);
        else if (PyErr_ExceptionMatches(PyExc_AttributeError))
            PyErr_Clear();
        else {
            for (int j = 0; j < i; j++)
                Py_CLEAR(calls[j]);
            return -1;
        }
    }
    return 0;
}

/* *field = value (NULL: deleted), with value's builtin methods `names` bound into calls[] (see
 * bind_builtins; none for None or False). 0, or -1 with an error set and nothing changed. */
static int
set_bound(PyObject **field, PyObject *calls[], PyObject **const names[], int n, PyObject *value)
{
    PyObject *bound[CALLS] = {NULL}; /* CALLS: the most any core binds (n <= CALLS) */
    if (value != NULL && value != Py_None && value != Py_False
        && bind_builtins(value, names, n, bound) < 0)
        return -1;
    Py_XINCREF(value);
    Py_XSETREF(*field, value);
    for (int i = 0; i < n; i++)
        Py_XSETREF(calls[i], bound[i]);
    return 0;
}

static int
aead_set_lane(AeadCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = set_lane(&self->lane, value);
    return 0;
}

static PyObject *
aead_get_sw(AeadCore *self, void *closure)
{
    return get_field(self->sw, "_sw");
}

static int
aead_set_sw(AeadCore *self, PyObject *value, void *closure)
{
    /* OpenSSL's object: calling its methods bound costs no more than the calls they replace. */
    return set_bound(&self->sw, self->calls, call_names, CALLS, value);
}

static PyGetSetDef aead_getset[] = {
    {"_lane", (getter)aead_get_lane, (setter)aead_set_lane, NULL, NULL},
    {"_sw", (getter)aead_get_sw, (setter)aead_set_sw, NULL, NULL},
    {NULL},
};

/* The provider in force: `explicit` (the primitive's own) unless None, else the innermost
 * `using` block's, else the default (a Provider is always true, so `or` is "not None" here).
 * Borrowed; NULL for none yet (no error), or NULL with an error set (*failed = 1). */
static inline PyObject *
in_force(PyObject *explicit, int *failed)
{
    if (explicit != NULL && explicit != Py_None)
        return explicit;
    if (using_seen) {
        PyObject *value = NULL;
        if (PyContextVar_Get(current_var, NULL, &value) < 0) {
            *failed = 1;
            return NULL;
        }
        Py_XDECREF(value); /* the ContextVar still holds it */
        if (value != NULL && value != Py_None)
            return value;
    }
    PyObject *provider = PyList_GET_ITEM(default_box, 0);
    return provider == Py_None ? NULL : provider;
}

/* The lane when the direct path may take an op of n bytes, else NULL (no error set), or NULL
 * with an error set (*failed = 1). Borrowed reference. */
static inline LaneCore *
direct_lane(AeadCore *self, Py_ssize_t n, int *failed)
{
    if (!self->lane_is_core)
        return NULL;
    LaneCore *core = (LaneCore *)self->lane;
    if (!(n < core->direct_below || n > core->direct_above))
        return NULL;
    PyObject *sw = self->sw;
    if (sw == NULL || sw == Py_None || sw == Py_False)
        return NULL;
    PyObject *provider = in_force(self->provider, failed);
    if (provider == NULL || provider != core->provider)
        return NULL;
    PyObject *record = core->direct_q;
    if (record == NULL || core->direct == NULL)
        return NULL;
    Py_ssize_t queued;
    if (Py_IS_TYPE(record, &SizeLogType))
        queued = ((SizeLog *)record)->len;
    else if ((queued = PyObject_Size(record)) < 0) {
        *failed = 1;
        return NULL;
    }
    if (queued >= core->direct_room)
        return NULL;
    return core;
}

static inline int
record(LaneCore *core, Py_ssize_t n)
{
    if (Py_IS_TYPE(core->direct_q, &SizeLogType))
        return sizelog_push((SizeLog *)core->direct_q, n);
    PyObject *size = PyLong_FromSsize_t(n);
    if (size == NULL)
        return -1;
    PyObject *done = PyObject_CallOneArg(core->direct, size);
    Py_DECREF(size);
    if (done == NULL)
        return -1;
    Py_DECREF(done);
    return 0;
}

/* self.<name>(*args, **kw): the ordinary path. */
static PyObject *
slow(void *self, PyObject *name, PyObject *const *args, Py_ssize_t nargs,
     PyObject *kwnames)
{
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8];
    PyObject **stack = small;
    if (total + 2 > 8) {
        stack = PyMem_New(PyObject *, total + 2);
        if (stack == NULL)
            return PyErr_NoMemory();
    }
    stack[1] = (PyObject *)self;
    memcpy(stack + 2, args, total * sizeof(PyObject *));
    PyObject *out = PyObject_VectorcallMethod(
        name, stack + 1, (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    if (stack != small)
        PyMem_Free(stack);
    return out;
}

/* bound(*args): a builtin method (PyCFunction_Check), kept alive across the call. One taking
 * METH_FASTCALL | METH_KEYWORDS is called as its own vectorcall would call it, less the
 * generic dispatch (this call is what the caller's own call of it would have been). */
static inline PyObject *
call_leaf(PyObject *bound, PyObject *const *args, Py_ssize_t nargs)
{
    Py_INCREF(bound); /* the call may set _sw again */
    PyObject *out;
    if ((PyCFunction_GET_FLAGS(bound) & ~(METH_COEXIST | METH_STATIC | METH_CLASS))
        == (METH_FASTCALL | METH_KEYWORDS)) {
        _PyCFunctionFastWithKeywords meth =
            (_PyCFunctionFastWithKeywords)(void (*)(void))PyCFunction_GET_FUNCTION(bound);
        out = meth(PyCFunction_GET_SELF(bound), args, nargs, NULL);
        if (out == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "OpenSSL's method returned no result");
    }
    else
        out = PyObject_Vectorcall(bound, args, nargs, NULL);
    Py_DECREF(bound);
    return out;
}

/* sw.<name>(args...) (at most 4 arguments): through `bound`, sw's builtin method bound once,
 * else looked up now. */
static inline PyObject *
call_on(PyObject *sw, PyObject *bound, PyObject *name, PyObject *const *args, Py_ssize_t nargs)
{
    if (bound != NULL)
        return call_leaf(bound, args, nargs);
    PyObject *stack[6];
    stack[1] = sw;
    for (Py_ssize_t i = 0; i < nargs; i++)
        stack[2 + i] = args[i];
    return PyObject_VectorcallMethod(name, stack + 1,
                                     (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* Whether the error set is one the ordinary path explains (TypeError, ValueError): cleared. */
static int
explained_below(void)
{
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

static int
invalid_tag_raised(void)
{
    return invalid_tag != NULL && PyErr_ExceptionMatches(invalid_tag);
}

/* The exception set, taken out as one object with its traceback attached (new reference). */
static PyObject *
raised_exception(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
}

/* Record n for a failed tag, the InvalidTag going on (a record failure replaces it). */
static void
record_failed_tag(LaneCore *core, Py_ssize_t n)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (record(core, n) < 0) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    else
        PyErr_Restore(type, value, tb);
}

static Py_ssize_t
tag_length_of(AeadCore *self)
{
    if (self->tag_length == NULL || !PyLong_CheckExact(self->tag_length))
        return -1;
    Py_ssize_t t = PyLong_AsSsize_t(self->tag_length);
    if (t == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return t;
}

/* One direct op: OpenSSL's `call`, n recorded. Returns the result; NULL with an error to
 * raise; or NULL without one when the ordinary path must run (it says why). `zero` is the
 * buffer a failed tag zeroes (decrypt_into), else NULL. */
static inline PyObject *
direct(AeadCore *self, LaneCore *core, int call, PyObject *const *args, Py_ssize_t nargs,
       Py_ssize_t n, int check_tag, PyObject *zero)
{
    Py_INCREF(core);
    PyObject *out = call_on(self->sw, self->calls[call], *call_names[call], args, nargs);
    if (out != NULL) {
        if (record(core, n) < 0)
            Py_CLEAR(out);
    }
    else if (check_tag && invalid_tag_raised()) {
        if (zero != NULL) /* OpenSSL's GCM has written the plaintext before the tag failed */
            memset(PyByteArray_AS_STRING(zero), 0, (size_t)PyByteArray_GET_SIZE(zero));
        record_failed_tag(core, n);
    }
    else
        explained_below();
    Py_DECREF(core);
    return out;
}

/* -- the engine route ---------------------------------------------------------------- */

/* self._open_session(route): the session route's engine keeps for this key (None: none), kept
 * with its bound encrypt and decrypt. 0, or -1 with an error set. */
static int
open_session(AeadCore *self, PyObject *route)
{
    PyObject *session = PyObject_CallMethodOneArg((PyObject *)self, str_open_session, route);
    if (session == NULL)
        return -1;
    PyObject *calls[2] = {NULL, NULL};
    if (session != Py_None) {
        PyObject *const names[2] = {str_encrypt, str_decrypt};
        for (int i = 0; i < 2; i++) {
            /* One without the method: that kind of op takes the ordinary path. */
            calls[i] = PyObject_GetAttr(session, names[i]);
            if (calls[i] == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
                    Py_XDECREF(calls[0]);
                    Py_DECREF(session);
                    return -1;
                }
                PyErr_Clear();
            }
        }
    }
    Py_INCREF(route);
    Py_XSETREF(self->session_route, route);
    Py_XSETREF(self->session, session);
    Py_XSETREF(self->session_calls[0], calls[0]);
    Py_XSETREF(self->session_calls[1], calls[1]);
    return 0;
}

/* Count the engine route's answer of n bytes in the route's record; the lane's Python
 * (engine_after) only when the record is due to fold or the watch has a miss run to end. */
static int
count_engine(LaneCore *core, PyObject *route, PyObject *pending, Py_ssize_t n)
{
    Py_ssize_t queued;
    if (Py_IS_TYPE(pending, &SizeLogType)) {
        if (sizelog_push((SizeLog *)pending, n) < 0)
            return -1;
        queued = ((SizeLog *)pending)->len;
    }
    else {
        PyObject *size = PyLong_FromSsize_t(n);
        if (size == NULL)
            return -1;
        PyObject *done = PyObject_CallMethodOneArg(pending, str_append, size);
        Py_DECREF(size);
        if (done == NULL)
            return -1;
        Py_DECREF(done);
        if ((queued = PyObject_Size(pending)) < 0)
            return -1;
    }
    PyObject *misses = core->watch_misses;
    if (queued > FOLD_AT
        || (misses != NULL && (!PyDict_CheckExact(misses) || PyDict_GET_SIZE(misses) > 0))) {
        PyObject *done = PyObject_CallMethodOneArg((PyObject *)core, str_engine_after, route);
        if (done == NULL)
            return -1;
        Py_DECREF(done);
    }
    return 0;
}

/* One AEAD op (args: nonce, data, associated data; n: the payload's bytes) through the engine
 * route: the lane's first engine, by the session it keeps for this key, when the op is one
 * validate_op would pass as it stands (the key and tag length were checked when the object
 * was made; the nonce, data and associated data are checked here as AESGCM._plain checks
 * them) and the policy offers that engine its size. Its answer is counted as Lane.settle
 * counts one; an exception it raises goes to self._engine_failed, which settles it by the
 * lane's own rules and goes on to the next engine or software. Returns the result; NULL with
 * an error to raise; NULL without one when the ordinary path must run. */
static PyObject *
engine_route(AeadCore *self, int call, PyObject *const *args, Py_ssize_t n)
{
    if (!self->lane_is_core || self->nonce_max < 1)
        return NULL;
    LaneCore *core = (LaneCore *)self->lane;
    PyObject *route = core->engine_route;
    if (route == NULL || route == Py_None || n < core->engine_floor || n > core->engine_ceiling)
        return NULL;
    PyObject *nonce = args[0], *data = args[1], *aad = args[2];
    if (!PyBytes_CheckExact(nonce) || PyBytes_GET_SIZE(data) > AEAD_MAX
        || (aad != Py_None && !(PyBytes_CheckExact(aad) && PyBytes_GET_SIZE(aad) <= AEAD_MAX)))
        return NULL;
    Py_ssize_t nonce_len = PyBytes_GET_SIZE(nonce);
    if (nonce_len < self->nonce_min || nonce_len > self->nonce_max)
        return NULL;
    if (self->ccm_rule && nonce_len > 7 && n >= ((Py_ssize_t)1 << (8 * (15 - nonce_len))))
        return NULL;
    int failed = 0;
    PyObject *provider = in_force(self->provider, &failed);
    if (failed)
        return NULL;
    if (provider == NULL || provider != core->provider)
        return NULL;
    if (self->session_route != route && open_session(self, route) < 0)
        return NULL;
    PyObject *fn = self->session_calls[call];
    PyObject *pending = core->engine_pending;
    if (fn == NULL || pending == NULL || core->engine_route != route)
        return NULL;
    /* The call may run any Python (an engine's own): what it could rebind is held. */
    Py_INCREF(core);
    Py_INCREF(route);
    Py_INCREF(pending);
    PyObject *out;
    if (PyCFunction_Check(fn))
        out = call_leaf(fn, args, 3);
    else {
        Py_INCREF(fn);
        out = PyObject_Vectorcall(fn, args, 3, NULL);
        Py_DECREF(fn);
    }
    if (out != NULL) {
        if (count_engine(core, route, pending, n) < 0)
            Py_CLEAR(out);
    }
    else if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyObject *value = raised_exception();
        PyObject *stack[9] = {NULL, (PyObject *)self, (PyObject *)core, route,
                              call == ENCRYPT ? str_encrypt : str_decrypt, value,
                              nonce, data, aad};
        out = PyObject_VectorcallMethod(str_engine_failed, stack + 1,
                                        8 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_XDECREF(value);
        if (out == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "_engine_failed returned no result");
    }
    Py_DECREF(pending);
    Py_DECREF(route);
    Py_DECREF(core);
    return out;
}

static PyObject *
aead_encrypt(AeadCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 3 && kwnames == NULL && PyBytes_CheckExact(args[1])) {
        Py_ssize_t n = PyBytes_GET_SIZE(args[1]);
        int failed = 0;
        LaneCore *core = direct_lane(self, n, &failed);
        if (failed)
            return NULL;
        PyObject *out = core != NULL ? direct(self, core, ENCRYPT, args, 3, n, 0, NULL)
                                     : engine_route(self, ENCRYPT, args, n);
        if (out != NULL || PyErr_Occurred())
            return out;
    }
    return slow(self, str_slow_encrypt, args, nargs, kwnames);
}

static PyObject *
aead_decrypt(AeadCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 3 && kwnames == NULL && PyBytes_CheckExact(args[1])) {
        Py_ssize_t tag = tag_length_of(self);
        Py_ssize_t n = PyBytes_GET_SIZE(args[1]) - tag;
        int failed = 0;
        LaneCore *core = tag >= 0 && n >= 0 ? direct_lane(self, n, &failed) : NULL;
        if (failed)
            return NULL;
        PyObject *out = core != NULL ? direct(self, core, DECRYPT, args, 3, n, 1, NULL)
                        : tag >= 0 && n >= 0 ? engine_route(self, DECRYPT, args, n)
                                             : NULL;
        if (out != NULL || PyErr_Occurred())
            return out;
    }
    return slow(self, str_slow_decrypt, args, nargs, kwnames);
}

static PyObject *
aead_encrypt_into(AeadCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 4 && kwnames == NULL && PyBytes_CheckExact(args[1])
        && PyByteArray_CheckExact(args[3])) {
        Py_ssize_t n = PyBytes_GET_SIZE(args[1]);
        int failed = 0;
        LaneCore *core = direct_lane(self, n, &failed);
        if (failed)
            return NULL;
        if (core != NULL) {
            PyObject *out = direct(self, core, ENCRYPT_INTO, args, 4, n, 0, NULL);
            if (out != NULL || PyErr_Occurred())
                return out;
        }
    }
    return slow(self, str_slow_encrypt_into, args, nargs, kwnames);
}

static PyObject *
aead_decrypt_into(AeadCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 4 && kwnames == NULL && PyBytes_CheckExact(args[1])
        && PyByteArray_CheckExact(args[3])) {
        Py_ssize_t tag = tag_length_of(self);
        Py_ssize_t n = PyBytes_GET_SIZE(args[1]) - tag;
        int failed = 0;
        LaneCore *core = tag >= 0 && n >= 0 ? direct_lane(self, n, &failed) : NULL;
        if (failed)
            return NULL;
        if (core != NULL) {
            PyObject *out = direct(self, core, DECRYPT_INTO, args, 4, n, 1, args[3]);
            if (out != NULL || PyErr_Occurred())
                return out;
        }
    }
    return slow(self, str_slow_decrypt_into, args, nargs, kwnames);
}

static PyMethodDef aead_methods[] = {
    {"encrypt", (PyCFunction)(void (*)(void))aead_encrypt, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("encrypt(nonce, data, associated_data) -> ciphertext followed by the tag")},
    {"decrypt", (PyCFunction)(void (*)(void))aead_decrypt, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("decrypt(nonce, data, associated_data) -> the plaintext, or InvalidTag (and "
               "nothing else) when the data was altered")},
    {"encrypt_into", (PyCFunction)(void (*)(void))aead_encrypt_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("encrypt_into(nonce, data, associated_data, buf) -> bytes written: ciphertext "
               "and tag")},
    {"decrypt_into", (PyCFunction)(void (*)(void))aead_decrypt_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("decrypt_into(nonce, data, associated_data, buf) -> bytes written, only once "
               "the tag holds (on InvalidTag buf holds zeros)")},
    {NULL},
};

static PyMemberDef aead_members[] = {
    {"_provider", T_OBJECT_EX, offsetof(AeadCore, provider), 0, NULL},
    {"_tag_length", T_OBJECT_EX, offsetof(AeadCore, tag_length), 0, NULL},
    {"_session", T_OBJECT, offsetof(AeadCore, session), READONLY,
     "The engine route's session for this key (None: none kept)."},
    {"_nonce_min", T_PYSSIZET, offsetof(AeadCore, nonce_min), 0, NULL},
    {"_nonce_max", T_PYSSIZET, offsetof(AeadCore, nonce_max), 0, NULL},
    {"_ccm_rule", T_PYSSIZET, offsetof(AeadCore, ccm_rule), 0, NULL},
    {NULL},
};

static PyTypeObject AeadCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.AeadCore",
    .tp_doc = PyDoc_STR("An AEAD primitive's direct path (compiled)."),
    .tp_basicsize = sizeof(AeadCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)aead_dealloc,
    .tp_traverse = (traverseproc)aead_traverse,
    .tp_clear = (inquiry)aead_clear,
    .tp_methods = aead_methods,
    .tp_members = aead_members,
    .tp_getset = aead_getset,
};

/* -- ChainedCore ------------------------------------------------------------------------ */

/* A Cipher context's held-back path (cryptoffload.directpath.PureChainedCore is its twin and
 * documents the contract): while the kept OpenSSL context `_sw` is set and the op an engine
 * would get is one the policy holds back from every engine, update and update_into run it on
 * that context and keep the tails an engine needs to take over; else _update_slow and
 * _update_into_slow (Python) decide the slow way. */

/* Input bytes a held-back stream keeps: directpath.TAIL (a test checks that both agree). */
#define TAIL 31
/* The output tail CBC encryption keeps: its chaining value (a block of AES). */
#define OUT_TAIL 16

enum { UPDATE, UPDATE_INTO, CHAIN_CALLS };

typedef struct {
    PyObject_HEAD
    PyObject *lane;
    PyObject *sw;
    PyObject *sw_in;
    PyObject *sw_out;
    PyObject *whole_blocks;
    PyObject *cbc_encrypt;
    Py_ssize_t block;
    Py_ssize_t sw_total;
    char has_block;
    char has_sw_total;
    /* update_into's output tail, kept here (no object per update) until _sw_out is read:
     * then sw_out is NULL and these bytes stand for it. */
    char out_inline;
    unsigned char out_len;
    char out_tail[OUT_TAIL];
    /* Set with _lane: it is a LaneCore (else the held-back path never runs here). */
    char lane_is_core;
    /* Set with _sw: its bound update and update_into when builtin (no lookup per op). */
    PyObject *calls[CHAIN_CALLS];
    /* _sw_route: None (or unset) while _sw is software's kept context; the lane's route when
     * it is that route's engine's session (the engine route: its ops are the engine's). */
    PyObject *sw_route;
    /* _done: finalized */
    char done;
} ChainedCore;

static PyObject **const chain_call_names[CHAIN_CALLS] = {&str_update, &str_update_into};

static int
chained_traverse(ChainedCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lane);
    Py_VISIT(self->sw);
    Py_VISIT(self->sw_in);
    Py_VISIT(self->sw_out);
    Py_VISIT(self->whole_blocks);
    Py_VISIT(self->cbc_encrypt);
    for (int i = 0; i < CHAIN_CALLS; i++)
        Py_VISIT(self->calls[i]);
    Py_VISIT(self->sw_route);
    return 0;
}

static int
chained_clear(ChainedCore *self)
{
    Py_CLEAR(self->lane);
    Py_CLEAR(self->sw);
    Py_CLEAR(self->sw_in);
    Py_CLEAR(self->sw_out);
    Py_CLEAR(self->whole_blocks);
    Py_CLEAR(self->cbc_encrypt);
    for (int i = 0; i < CHAIN_CALLS; i++)
        Py_CLEAR(self->calls[i]);
    Py_CLEAR(self->sw_route);
    self->lane_is_core = 0;
    self->out_inline = 0;
    return 0;
}

static void
chained_dealloc(ChainedCore *self)
{
    PyObject_GC_UnTrack(self);
    chained_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
chained_get_lane(ChainedCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

static int
chained_set_lane(ChainedCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = (char)set_lane(&self->lane, value);
    return 0;
}

static PyObject *
chained_get_sw(ChainedCore *self, void *closure)
{
    return get_field(self->sw, "_sw");
}

static int
chained_set_sw(ChainedCore *self, PyObject *value, void *closure)
{
    Py_BUILD_ASSERT((int)CHAIN_CALLS <= (int)CALLS); /* set_bound's room */
    return set_bound(&self->sw, self->calls, chain_call_names, CHAIN_CALLS, value);
}

/* An int field that may be unset (AttributeError when read, as an unset slot). */
static PyObject *
get_count(Py_ssize_t value, char has, const char *name)
{
    if (!has) {
        PyErr_Format(PyExc_AttributeError, "%s", name);
        return NULL;
    }
    return PyLong_FromSsize_t(value);
}

static int
set_count(Py_ssize_t *field, char *has, PyObject *value, const char *name)
{
    if (value == NULL) {
        if (!*has) {
            PyErr_Format(PyExc_AttributeError, "%s", name);
            return -1;
        }
        *has = 0;
        return 0;
    }
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int", name);
        return -1;
    }
    Py_ssize_t v = PyLong_AsSsize_t(value);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *field = v;
    *has = 1;
    return 0;
}

static PyObject *
chained_get_block(ChainedCore *self, void *closure)
{
    return get_count(self->block, self->has_block, "_block");
}

static int
chained_set_block(ChainedCore *self, PyObject *value, void *closure)
{
    return set_count(&self->block, &self->has_block, value, "_block");
}

static PyObject *
chained_get_sw_total(ChainedCore *self, void *closure)
{
    return get_count(self->sw_total, self->has_sw_total, "_sw_total");
}

static int
chained_set_sw_total(ChainedCore *self, PyObject *value, void *closure)
{
    return set_count(&self->sw_total, &self->has_sw_total, value, "_sw_total");
}

/* _sw_out as an object (borrowed), made from the inline tail if that stands for it; NULL when
 * unset (no error) or with an error set (*failed = 1). */
static PyObject *
sw_out_object(ChainedCore *self, int *failed)
{
    if (self->out_inline) {
        PyObject *tail = PyBytes_FromStringAndSize(self->out_tail, self->out_len);
        if (tail == NULL) {
            *failed = 1;
            return NULL;
        }
        Py_XSETREF(self->sw_out, tail);
        self->out_inline = 0;
    }
    return self->sw_out;
}

static PyObject *
chained_get_sw_out(ChainedCore *self, void *closure)
{
    int failed = 0;
    PyObject *out = sw_out_object(self, &failed);
    return failed ? NULL : get_field(out, "_sw_out");
}

static int
chained_set_sw_out(ChainedCore *self, PyObject *value, void *closure)
{
    if (value == NULL && self->sw_out == NULL && !self->out_inline) {
        PyErr_SetString(PyExc_AttributeError, "_sw_out");
        return -1;
    }
    Py_XINCREF(value);
    Py_XSETREF(self->sw_out, value);
    self->out_inline = 0;
    return 0;
}

static PyGetSetDef chained_getset[] = {
    {"_lane", (getter)chained_get_lane, (setter)chained_set_lane, NULL, NULL},
    {"_sw", (getter)chained_get_sw, (setter)chained_set_sw, NULL, NULL},
    {"_block", (getter)chained_get_block, (setter)chained_set_block, NULL, NULL},
    {"_sw_total", (getter)chained_get_sw_total, (setter)chained_set_sw_total, NULL, NULL},
    {"_sw_out", (getter)chained_get_sw_out, (setter)chained_set_sw_out,
     "CBC encryption's output tail (bytes when update_into kept it)", NULL},
    {NULL},
};

static PyMemberDef chained_members[] = {
    {"_sw_in", T_OBJECT_EX, offsetof(ChainedCore, sw_in), 0, NULL},
    {"_whole_blocks", T_OBJECT_EX, offsetof(ChainedCore, whole_blocks), 0, NULL},
    {"_cbc_encrypt", T_OBJECT_EX, offsetof(ChainedCore, cbc_encrypt), 0, NULL},
    {"_sw_route", T_OBJECT, offsetof(ChainedCore, sw_route), 0,
     "The route whose engine's session _sw is; None: _sw is software's."},
    {"_done", T_BOOL, offsetof(ChainedCore, done), 0, "Finalized."},
    {NULL},
};

static inline int
truth(PyObject *value)
{
    if (value == Py_True)
        return 1;
    if (value == Py_False || value == Py_None)
        return 0;
    return PyObject_IsTrue(value);
}

/* The lane when the kept context takes an op of n more bytes (*size: the op an engine would
 * get), else NULL with no error, or NULL with an error set (*failed = 1). Borrowed. The kept
 * context is software's (*route NULL) for an op the policy holds back from every engine, or
 * the engine route's session (*route: that route) for an op of a size the lane's engine route
 * takes (not 0: an op with no whole block goes the slow way). */
static inline LaneCore *
held_lane(ChainedCore *self, Py_ssize_t n, Py_ssize_t *size, int *failed, PyObject **route)
{
    if (self->sw == NULL || self->sw == Py_None || !self->lane_is_core || !self->has_block
        || !self->has_sw_total || self->block <= 0 || self->whole_blocks == NULL
        || self->cbc_encrypt == NULL || self->sw_in == NULL
        || (self->sw_out == NULL && !self->out_inline))
        return NULL;
    Py_ssize_t block = self->block;
    /* A block of a power of two bytes (AES's 16, every block cipher here) takes a mask: a
     * division costs tens of cycles, two an op, where the rest of this path costs a few. */
    Py_ssize_t mask = (block & (block - 1)) == 0 ? block - 1 : -1;
    Py_ssize_t rest = mask >= 0 ? self->sw_total & mask : self->sw_total % block;
    if (rest < 0) /* Python's %: the sign of the divisor */
        rest += block;
    if (n > PY_SSIZE_T_MAX - rest)
        return NULL;
    Py_ssize_t s = rest + n;
    int whole = truth(self->whole_blocks);
    if (whole < 0) {
        *failed = 1;
        return NULL;
    }
    if (whole)
        s -= mask >= 0 ? s & mask : s % block;
    LaneCore *core = (LaneCore *)self->lane;
    PyObject *kept_for = self->sw_route;
    if (kept_for == NULL || kept_for == Py_None) {
        if (!(s < core->hold_below || s > core->hold_above))
            return NULL;
        *route = NULL;
    }
    else {
        if (kept_for != core->engine_route || s < core->engine_floor || s > core->engine_ceiling
            || s == 0 || core->engine_pending == NULL)
            return NULL;
        *route = kept_for;
    }
    *size = s;
    return core;
}

/* self._session_failed(route, exc, data, buf): the engine route's session raised the error
 * set (an Exception) on this update; Python settles it by the lane's rules and redoes the
 * update the ordinary way (buf: update_into's buffer, None for update). */
static PyObject *
session_failed(ChainedCore *self, PyObject *route, PyObject *data, PyObject *buf)
{
    PyObject *value = raised_exception();
    PyObject *stack[5] = {(PyObject *)self, route, value, data, buf};
    PyObject *out = PyObject_VectorcallMethod(str_session_failed, stack, 5, NULL);
    Py_XDECREF(value);
    return out;
}

/* What the stream keeps of its input after `data` (n bytes): data itself when it is a tail's
 * length or more, else the last TAIL bytes of the kept tail and data (new reference). */
static PyObject *
input_tail(ChainedCore *self, PyObject *data, Py_ssize_t n)
{
    if (n >= TAIL)
        return Py_NewRef(data);
    if (self->sw_in == NULL) { /* deleted during the op */
        PyErr_SetString(PyExc_AttributeError, "_sw_in");
        return NULL;
    }
    PyObject *kept = PyBytes_FromObject(self->sw_in); /* bytes(self._sw_in) */
    if (kept == NULL)
        return NULL;
    Py_ssize_t had = PyBytes_GET_SIZE(kept);
    Py_ssize_t total = had + n < TAIL ? had + n : TAIL;
    Py_ssize_t from_kept = total - n;
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out != NULL) {
        char *to = PyBytes_AS_STRING(out);
        memcpy(to, PyBytes_AS_STRING(kept) + had - from_kept, (size_t)from_kept);
        memcpy(to + from_kept, PyBytes_AS_STRING(data), (size_t)n);
    }
    Py_DECREF(kept);
    return out;
}

/* seq[-OUT_TAIL:] (new reference). */
static PyObject *
last_out(PyObject *seq)
{
    Py_ssize_t len = PyObject_Length(seq);
    if (len < 0)
        return NULL;
    return PySequence_GetSlice(seq, len > OUT_TAIL ? len - OUT_TAIL : 0, len);
}

/* lane.tally(value), then lane.fold_due() once the record is long: software's own record,
 * a size (or ~size, held back) per op. 0, or -1 with an error set. */
static HOT_INLINE int
lane_tally(LaneCore *core, Py_ssize_t value)
{
    PyObject *tally = core->tally;
    if (tally == NULL) {
        PyErr_SetString(PyExc_AttributeError, "tally");
        return -1;
    }
    /* lane.tally is the bound append of the SizeLog tally_q: push there, no call. */
    PyObject *q = core->tally_q;
    if (q != NULL && Py_IS_TYPE(q, &SizeLogType) && PyCFunction_Check(tally)
        && PyCFunction_GET_SELF(tally) == q
        && PyCFunction_GET_FUNCTION(tally) == (PyCFunction)sizelog_append) {
        if (sizelog_push((SizeLog *)q, value) < 0)
            return -1;
        if (((SizeLog *)q)->len <= FOLD_AT)
            return 0;
    }
    else {
        PyObject *size = PyLong_FromSsize_t(value);
        if (size == NULL)
            return -1;
        Py_INCREF(tally);
        PyObject *done = PyObject_CallOneArg(tally, size);
        Py_DECREF(tally);
        Py_DECREF(size);
        if (done == NULL)
            return -1;
        Py_DECREF(done);
    }
    /* A long stream (or a record we cannot see into): the lane folds when due. */
    PyObject *folded = PyObject_CallMethodNoArgs((PyObject *)core, str_fold_due);
    if (folded == NULL)
        return -1;
    Py_DECREF(folded);
    return 0;
}

/* After the op: the bytes count, the input tail, and ~size recorded (size 0: nothing).
 * `out_tail` (stolen, may be NULL) is the new _sw_out. 0, or -1 with an error set. */
/* route: the engine route whose session ran the op (size counted in pending, its record),
 * NULL for software's kept context. */
static HOT_INLINE int
note_held(ChainedCore *self, LaneCore *core, PyObject *data, Py_ssize_t n, Py_ssize_t size,
          PyObject *out_tail, PyObject *route, PyObject *pending)
{
    self->sw_total += n;
    PyObject *tail = input_tail(self, data, n);
    if (tail == NULL) {
        Py_XDECREF(out_tail);
        return -1;
    }
    Py_XSETREF(self->sw_in, tail);
    if (out_tail != NULL) {
        Py_XSETREF(self->sw_out, out_tail);
        self->out_inline = 0;
    }
    if (!size)
        return 0;
    if (route != NULL)
        return count_engine(core, route, pending, size);
    return lane_tally(core, ~size);
}

/* The output tail update's result gives (new reference), NULL for none (*failed on error). */
static PyObject *
update_out_tail(ChainedCore *self, PyObject *out, int *failed)
{
    int some = PyObject_IsTrue(out);
    int cbc = some > 0 ? truth(self->cbc_encrypt) : 0;
    if (some < 0 || cbc < 0) {
        *failed = 1;
        return NULL;
    }
    if (!cbc)
        return NULL;
    Py_ssize_t len = PyObject_Length(out);
    if (len < 0) {
        *failed = 1;
        return NULL;
    }
    if (len >= OUT_TAIL)
        return Py_NewRef(out);
    PyObject *had = sw_out_object(self, failed);
    if (had == NULL) {
        if (!*failed) { /* deleted during the op */
            PyErr_SetString(PyExc_AttributeError, "_sw_out");
            *failed = 1;
        }
        return NULL;
    }
    PyObject *joined = PyNumber_Add(had, out);
    if (joined == NULL) {
        *failed = 1;
        return NULL;
    }
    PyObject *tail = last_out(joined);
    Py_DECREF(joined);
    if (tail == NULL)
        *failed = 1;
    return tail;
}

static PyObject *
chained_update(ChainedCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0])) {
        PyObject *data = args[0], *route = NULL;
        Py_ssize_t n = PyBytes_GET_SIZE(data), size = 0;
        int failed = 0;
        LaneCore *core = n ? held_lane(self, n, &size, &failed, &route) : NULL;
        if (failed)
            return NULL;
        if (core != NULL) {
            PyObject *sw = Py_NewRef(self->sw);
            Py_INCREF(core);
            Py_XINCREF(route);
            PyObject *pending = route != NULL ? Py_NewRef(core->engine_pending) : NULL;
            PyObject *out = call_on(sw, self->calls[UPDATE], str_update, args, 1);
            if (out != NULL) {
                PyObject *tail = update_out_tail(self, out, &failed);
                if (failed || note_held(self, core, data, n, size, tail, route, pending) < 0)
                    Py_CLEAR(out);
            }
            else if (route != NULL && PyErr_ExceptionMatches(PyExc_Exception))
                out = session_failed(self, route, data, Py_None);
            Py_XDECREF(pending);
            Py_XDECREF(route);
            Py_DECREF(core);
            Py_DECREF(sw);
            return out;
        }
    }
    return slow(self, str_slow_update, args, nargs, kwnames);
}

static PyObject *
chained_update_into(ChainedCore *self, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    if (nargs == 2 && kwnames == NULL && PyBytes_CheckExact(args[0])
        && PyByteArray_CheckExact(args[1])) {
        PyObject *data = args[0], *buf = args[1], *route = NULL;
        Py_ssize_t n = PyBytes_GET_SIZE(data), size = 0;
        int failed = 0;
        LaneCore *core = held_lane(self, n, &size, &failed, &route);
        if (failed)
            return NULL;
        if (core != NULL && n <= PY_SSIZE_T_MAX - self->block
            && PyByteArray_GET_SIZE(buf) >= n + self->block - 1) {
            PyObject *sw = Py_NewRef(self->sw);
            Py_INCREF(core);
            Py_XINCREF(route);
            PyObject *pending = route != NULL ? Py_NewRef(core->engine_pending) : NULL;
            PyObject *k = call_on(sw, self->calls[UPDATE_INTO], str_update_into, args, 2);
            if (k == NULL && route != NULL && PyErr_ExceptionMatches(PyExc_Exception)) {
                k = session_failed(self, route, data, buf);
                Py_XDECREF(pending);
                Py_DECREF(route);
                Py_DECREF(core);
                Py_DECREF(sw);
                return k;
            }
            if (k != NULL) {
                /* OpenSSL's count is an int: its value says whether any came out, no
                 * PyObject_IsTrue first (anything else takes the general test). */
                Py_ssize_t end = 0;
                int some;
                if (PyLong_CheckExact(k)) {
                    end = PyLong_AsSsize_t(k);
                    some = end == -1 && PyErr_Occurred() ? -1 : end != 0;
                }
                else
                    some = PyObject_IsTrue(k);
                int cbc = some > 0 ? truth(self->cbc_encrypt) : 0;
                if (some < 0 || cbc < 0)
                    failed = 1;
                else if (cbc && !PyLong_CheckExact(k)
                         && (end = PyLong_AsSsize_t(k)) == -1 && PyErr_Occurred())
                    failed = 1;
                else if (cbc) {
                    /* buf[max(0, k - 16) : k]: a copy (the caller owns buf), kept inline */
                    Py_ssize_t len = PyByteArray_GET_SIZE(buf);
                    end = end < 0 ? 0 : end > len ? len : end;
                    const char *from = PyByteArray_AS_STRING(buf);
                    if (end >= OUT_TAIL) { /* a whole block: a fixed-size copy */
                        memcpy(self->out_tail, from + end - OUT_TAIL, OUT_TAIL);
                        self->out_len = OUT_TAIL;
                    }
                    else {
                        memcpy(self->out_tail, from, (size_t)end);
                        self->out_len = (unsigned char)end;
                    }
                    self->out_inline = 1;
                    Py_CLEAR(self->sw_out);
                }
                if (failed || note_held(self, core, data, n, size, NULL, route, pending) < 0)
                    Py_CLEAR(k);
            }
            Py_XDECREF(pending);
            Py_XDECREF(route);
            Py_DECREF(core);
            Py_DECREF(sw);
            return k;
        }
    }
    return slow(self, str_slow_update_into, args, nargs, kwnames);
}

/* finalize(): with a kept context (software's or the engine route's session) and no partial
 * block ECB or CBC would refuse, the context is done here (nothing is held, so nothing comes
 * out); anything else is _finalize_slow's (AlreadyFinalized, the partial block's error, the
 * chaining value and held bytes). */
static PyObject *
chained_finalize(ChainedCore *self, PyObject *unused)
{
    if (!self->done && self->sw != NULL && self->sw != Py_None && self->has_sw_total
        && self->has_block && self->block > 0 && self->whole_blocks != NULL) {
        Py_ssize_t left = self->sw_total % self->block;
        if (left < 0)
            left += self->block;
        int whole = truth(self->whole_blocks);
        if (whole < 0)
            return NULL;
        if (!whole || !left) {
            if (set_bound(&self->sw, self->calls, chain_call_names, CHAIN_CALLS, Py_None) < 0)
                return NULL;
            Py_XSETREF(self->sw_route, Py_NewRef(Py_None));
            self->done = 1;
            return PyBytes_FromStringAndSize(NULL, 0);
        }
    }
    return PyObject_CallMethodNoArgs((PyObject *)self, str_slow_finalize);
}

static PyMethodDef chained_methods[] = {
    {"finalize", (PyCFunction)chained_finalize, METH_NOARGS,
     PyDoc_STR("finalize() -> b'' (ECB and CBC: ValueError for a partial block left)")},
    {"update", (PyCFunction)(void (*)(void))chained_update, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update(data) -> the output for data (ECB and CBC hold a partial block back)")},
    {"update_into", (PyCFunction)(void (*)(void))chained_update_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update_into(data, buf) -> the length of the output written into buf")},
    {NULL},
};

static PyTypeObject ChainedCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.ChainedCore",
    .tp_doc = PyDoc_STR("A Cipher context's held-back path (compiled)."),
    .tp_basicsize = sizeof(ChainedCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)chained_dealloc,
    .tp_traverse = (traverseproc)chained_traverse,
    .tp_clear = (inquiry)chained_clear,
    .tp_methods = chained_methods,
    .tp_members = chained_members,
    .tp_getset = chained_getset,
};

/* -- builtin methods called without a lookup ------------------------------------------ */

/* A method of a builtin type, found once per type: its PyMethodDef, called without a lookup
 * or a bound method per call. Valid while the type's version tag is the one seen. The three a
 * cache entry holds: update, a second one named by the caller (a digest's final method, a
 * stream's update_into) and copy. */
enum { D_UPDATE, D_FINAL, D_COPY, D_METHODS };

typedef struct {
    PyTypeObject *type; /* borrowed: compared, never dereferenced unless the tag matches */
    unsigned int version;
    PyObject *final;    /* the name of the second method (a reference held) */
    PyMethodDef *defs[D_METHODS];
} MethodCache;

#define METHOD_CACHE 4
static MethodCache method_cache[METHOD_CACHE];
static int method_cache_next = 0;

static inline int
version_valid(PyTypeObject *type)
{
    return type->tp_version_tag != 0
#ifdef Py_TPFLAGS_VALID_VERSION_TAG
           && (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
#endif
        ;
}

/* The PyMethodDefs of `obj`'s update, `final` and copy (NULL each where it is not a plain
 * method descriptor: then called by name). Never fails. */
static PyMethodDef **
methods_of(PyObject *obj, PyObject *final)
{
    PyTypeObject *type = Py_TYPE(obj);
    for (int i = 0; i < METHOD_CACHE; i++) {
        MethodCache *c = &method_cache[i];
        if (c->type == type && c->final == final && c->version == type->tp_version_tag
            && version_valid(type))
            return c->defs;
    }
    static PyMethodDef *none[D_METHODS] = {NULL};
    if (type->tp_dictoffset != 0) /* an instance dict could hold its own methods */
        return none;
    PyObject *names[D_METHODS] = {str_update, final, str_copy};
    PyMethodDef *defs[D_METHODS];
    for (int i = 0; i < D_METHODS; i++) {
        PyObject *found = _PyType_Lookup(type, names[i]); /* borrowed; never raises here */
        defs[i] = found != NULL && Py_IS_TYPE(found, &PyMethodDescr_Type)
                      ? ((PyMethodDescrObject *)found)->d_method
                      : NULL;
    }
    if (!version_valid(type))
        return none;
    MethodCache *c = &method_cache[method_cache_next];
    method_cache_next = (method_cache_next + 1) % METHOD_CACHE;
    c->type = type;
    c->version = type->tp_version_tag;
    Py_INCREF(final); /* held while cached: its address names it */
    Py_XSETREF(c->final, final);
    memcpy(c->defs, defs, sizeof(defs));
    return c->defs;
}

/* obj.<name>(args) through its method's PyMethodDef `def` (NULL: by name). */
static PyObject *
call_method(PyObject *obj, PyMethodDef *def, PyObject *name, PyObject *const *args,
            Py_ssize_t nargs)
{
    PyObject *out = NULL;
    int called = 1;
    if (def == NULL)
        called = 0;
    else
        switch (def->ml_flags & ~METH_COEXIST) {
        case METH_NOARGS:
            if (nargs == 0)
                out = def->ml_meth(obj, NULL);
            else
                called = 0;
            break;
        case METH_O:
            if (nargs == 1)
                out = def->ml_meth(obj, args[0]);
            else
                called = 0;
            break;
        case METH_FASTCALL:
            out = ((_PyCFunctionFast)(void (*)(void))def->ml_meth)(obj, args, nargs);
            break;
        case METH_FASTCALL | METH_KEYWORDS:
            out = ((_PyCFunctionFastWithKeywords)(void (*)(void))def->ml_meth)(obj, args,
                                                                              nargs, NULL);
            break;
        default:
            called = 0;
        }
    if (!called) {
        PyObject *stack[6];
        if (nargs > 4) {
            PyErr_SetString(PyExc_SystemError, "call_method takes at most 4 arguments");
            return NULL;
        }
        stack[1] = obj;
        for (Py_ssize_t i = 0; i < nargs; i++)
            stack[2 + i] = args[i];
        return PyObject_VectorcallMethod(name, stack + 1,
                                         (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    if (out == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_SystemError, "%R returned NULL without setting an exception", name);
    return out;
}

/* -- DirectStreamCore: a Cipher context on a lane no engine claims --------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *lane;
    PyObject *ctx;
    /* Set with _lane: it is a LaneCore (else every update takes the Python path). */
    char lane_is_core;
    /* Set with _ctx: its bound update and update_into when builtin (no lookup per op). */
    PyObject *calls[CHAIN_CALLS];
} DirectStreamCore;

static int
stream_traverse(DirectStreamCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lane);
    Py_VISIT(self->ctx);
    for (int i = 0; i < CHAIN_CALLS; i++)
        Py_VISIT(self->calls[i]);
    return 0;
}

static int
stream_clear(DirectStreamCore *self)
{
    Py_CLEAR(self->lane);
    Py_CLEAR(self->ctx);
    for (int i = 0; i < CHAIN_CALLS; i++)
        Py_CLEAR(self->calls[i]);
    self->lane_is_core = 0;
    return 0;
}

static void
stream_dealloc(DirectStreamCore *self)
{
    PyObject_GC_UnTrack(self);
    stream_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
stream_get_lane(DirectStreamCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

static int
stream_set_lane(DirectStreamCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = (char)set_lane(&self->lane, value);
    return 0;
}

static PyObject *
stream_get_ctx(DirectStreamCore *self, void *closure)
{
    return get_field(self->ctx, "_ctx");
}

static int
stream_set_ctx(DirectStreamCore *self, PyObject *value, void *closure)
{
    return set_bound(&self->ctx, self->calls, chain_call_names, CHAIN_CALLS, value);
}

static PyGetSetDef stream_getset[] = {
    {"_lane", (getter)stream_get_lane, (setter)stream_set_lane, NULL, NULL},
    {"_ctx", (getter)stream_get_ctx, (setter)stream_set_ctx, NULL, NULL},
    {NULL},
};

/* OpenSSL's context `ctx` runs call (args, nargs); when `gave` says it gave output, the lane
 * counts an op of n bytes. Kept alive across the call: it may set _ctx or _lane again. */
static PyObject *
stream_run(DirectStreamCore *self, int call, PyObject *name, PyObject *const *args,
           Py_ssize_t nargs, Py_ssize_t n)
{
    PyObject *ctx = Py_NewRef(self->ctx);
    PyObject *lane = Py_NewRef(self->lane);
    PyObject *out;
    if (self->calls[call] != NULL)
        out = call_leaf(self->calls[call], args, nargs);
    else /* not bound (a context made per message): its type's method, found once */
        out = call_method(ctx, methods_of(ctx, str_update_into)[call == UPDATE ? D_UPDATE
                                                                               : D_FINAL],
                          name, args, nargs);
    if (out != NULL) {
        int gave;
        if (PyBytes_CheckExact(out))
            gave = PyBytes_GET_SIZE(out) != 0;
        else
            gave = PyObject_IsTrue(out); /* update_into's count */
        if (gave < 0 || (gave && lane_tally((LaneCore *)lane, n) < 0))
            Py_CLEAR(out);
    }
    Py_DECREF(lane);
    Py_DECREF(ctx);
    return out;
}

static PyObject *
stream_update(DirectStreamCore *self, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0]) && self->lane_is_core
        && self->ctx != NULL && self->ctx != Py_None)
        return stream_run(self, UPDATE, str_update, args, 1, PyBytes_GET_SIZE(args[0]));
    return slow(self, str_slow_update, args, nargs, kwnames);
}

static PyObject *
stream_update_into(DirectStreamCore *self, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames)
{
    if (nargs == 2 && kwnames == NULL && PyBytes_CheckExact(args[0])
        && PyByteArray_CheckExact(args[1]) && self->lane_is_core && self->ctx != NULL
        && self->ctx != Py_None)
        return stream_run(self, UPDATE_INTO, str_update_into, args, 2,
                          PyBytes_GET_SIZE(args[0]));
    return slow(self, str_slow_update_into, args, nargs, kwnames);
}

static PyObject *
stream_finalize(DirectStreamCore *self, PyObject *unused)
{
    if (self->ctx == NULL || self->ctx == Py_None) {
        PyErr_SetString(PyExc_AttributeError, "_ctx");
        return NULL;
    }
    PyObject *ctx = Py_NewRef(self->ctx);
    PyObject *out = PyObject_CallMethodNoArgs(ctx, str_finalize);
    Py_DECREF(ctx);
    return out;
}

static PyMethodDef stream_methods[] = {
    {"update", (PyCFunction)(void (*)(void))stream_update, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update(data) -> the output for data (ECB and CBC hold a partial block back)")},
    {"update_into", (PyCFunction)(void (*)(void))stream_update_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update_into(data, buf) -> how many bytes of output were written into buf")},
    {"finalize", (PyCFunction)stream_finalize, METH_NOARGS,
     PyDoc_STR("finalize() -> OpenSSL's context's last output (a partial block: ValueError)")},
    {NULL},
};

static PyTypeObject DirectStreamCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.DirectStreamCore",
    .tp_doc = PyDoc_STR("A Cipher context on a lane no engine claims (compiled)."),
    .tp_basicsize = sizeof(DirectStreamCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_traverse = (traverseproc)stream_traverse,
    .tp_clear = (inquiry)stream_clear,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

/* -- Gathered: a hash or MAC message gathered for the engine route ------------------------ */

/* cryptoffload.directpath.PureGathered is its twin and documents the contract: the software
 * object of a DigestCore whose lane's engine route keeps a session for the algorithm. It
 * gathers the message (the first piece kept as it is, no copy) and at its end hands it to the
 * session (`call`: digest(data), or mac(key, data)) when the route's window takes its size,
 * counting it as that engine's op; anything else goes to `fallback` (Python). */

/* Bytes gathered before the message goes on in `spill`'s context (_stream.GATHER_LIMIT; a
 * test checks that both agree). */
#define GATHER_LIMIT (4 * 1024 * 1024)

enum { G_LANE, G_ROUTE, G_CALL, G_FALLBACK, G_SPILL, G_FIELDS };

typedef struct {
    PyObject_HEAD
    PyObject *key;     /* a MAC's key; NULL for a hash */
    PyObject *data;    /* NULL: nothing yet; bytes: one piece as given; bytearray: more */
    PyObject *how;     /* (lane, route, call, fallback, spill) */
    PyObject *spilled; /* once past GATHER_LIMIT: the context the message goes on in */
    Py_ssize_t total;
    char ended;
} Gathered;

static PyTypeObject GatheredType;

static int
gathered_traverse(Gathered *self, visitproc visit, void *arg)
{
    Py_VISIT(self->key);
    Py_VISIT(self->data);
    Py_VISIT(self->how);
    Py_VISIT(self->spilled);
    return 0;
}

static int
gathered_clear(Gathered *self)
{
    Py_CLEAR(self->key);
    Py_CLEAR(self->data);
    Py_CLEAR(self->how);
    Py_CLEAR(self->spilled);
    return 0;
}

static void
gathered_dealloc(Gathered *self)
{
    PyObject_GC_UnTrack(self);
    gathered_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *gathered_update(Gathered *self, PyObject *data);

static int
gathered_how_ok(PyObject *how)
{
    return PyTuple_CheckExact(how) && PyTuple_GET_SIZE(how) == G_FIELDS
           && PyObject_TypeCheck(PyTuple_GET_ITEM(how, G_LANE), &LaneCoreType);
}

/* Gathered(data, how) for a hash, Gathered(key, data, how) for a MAC. */
static PyObject *
gathered_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((nargs != 2 && nargs != 3) || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "Gathered([key,] data, how)");
        return NULL;
    }
    PyObject *data = args[nargs - 2], *how = args[nargs - 1];
    if (!PyBytes_CheckExact(data) || !gathered_how_ok(how)) {
        PyErr_SetString(PyExc_TypeError,
                        "Gathered takes bytes and (lane, route, call, fallback, spill)");
        return NULL;
    }
    Gathered *self = PyObject_GC_New(Gathered, &GatheredType);
    if (self == NULL)
        return NULL;
    self->key = nargs == 3 ? Py_NewRef(args[0]) : NULL;
    self->data = NULL;
    self->how = Py_NewRef(how);
    self->spilled = NULL;
    self->total = 0;
    self->ended = 0;
    PyObject_GC_Track(self);
    PyObject *done = gathered_update(self, data); /* kept as given, or past the limit spilled */
    if (done == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    Py_DECREF(done);
    return (PyObject *)self;
}

static PyObject *
gathered_update(Gathered *self, PyObject *data)
{
    if (self->ended) {
        PyErr_SetString(PyExc_RuntimeError, "the message has ended");
        return NULL;
    }
    if (self->spilled != NULL)
        return PyObject_CallMethodOneArg(self->spilled, str_update, data);
    if (!PyBytes_CheckExact(data)) { /* a buffer (the context checked it is one): its bytes */
        Py_buffer view;
        if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
            if (PyErr_ExceptionMatches(PyExc_BufferError)) /* as OpenSSL's contexts refuse it */
                PyErr_SetString(PyExc_BufferError, "data must be a contiguous buffer");
            return NULL;
        }
        PyObject *copy = PyBytes_FromStringAndSize(view.buf, view.len);
        PyBuffer_Release(&view);
        if (copy == NULL)
            return NULL;
        PyObject *done = gathered_update(self, copy);
        Py_DECREF(copy);
        return done;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (n == 0)
        Py_RETURN_NONE;
    if (self->total + n > GATHER_LIMIT) { /* long: the message goes on in the spill's context */
        PyObject *spill = PyTuple_GET_ITEM(self->how, G_SPILL);
        PyObject *inner = PyObject_CallOneArg(spill, self->key != NULL ? self->key : Py_None);
        if (inner == NULL)
            return NULL;
        if (self->data != NULL) {
            PyObject *done = PyObject_CallMethodOneArg(inner, str_update, self->data);
            if (done == NULL) {
                Py_DECREF(inner);
                return NULL;
            }
            Py_DECREF(done);
        }
        PyObject *done = PyObject_CallMethodOneArg(inner, str_update, data);
        if (done == NULL) {
            Py_DECREF(inner);
            return NULL;
        }
        Py_DECREF(done);
        Py_CLEAR(self->data);
        self->spilled = inner;
        Py_RETURN_NONE;
    }
    if (self->data == NULL)
        self->data = Py_NewRef(data);
    else {
        if (PyBytes_CheckExact(self->data)) {
            PyObject *grown = PyByteArray_FromObject(self->data);
            if (grown == NULL)
                return NULL;
            Py_SETREF(self->data, grown);
        }
        Py_ssize_t had = PyByteArray_GET_SIZE(self->data);
        if (PyByteArray_Resize(self->data, had + n) < 0)
            return NULL;
        memcpy(PyByteArray_AS_STRING(self->data) + had, PyBytes_AS_STRING(data), (size_t)n);
    }
    self->total += n;
    Py_RETURN_NONE;
}

static PyObject *
gathered_copy(Gathered *self, PyObject *unused)
{
    if (self->ended) {
        PyErr_SetString(PyExc_RuntimeError, "the message has ended");
        return NULL;
    }
    Gathered *twin = PyObject_GC_New(Gathered, &GatheredType);
    if (twin == NULL)
        return NULL;
    twin->key = Py_XNewRef(self->key);
    twin->how = Py_NewRef(self->how);
    twin->total = self->total;
    twin->ended = 0;
    twin->data = NULL;
    twin->spilled = NULL;
    PyObject_GC_Track(twin);
    if (self->spilled != NULL) {
        twin->spilled = PyObject_CallMethodNoArgs(self->spilled, str_fork);
        if (twin->spilled == NULL) {
            Py_DECREF(twin);
            return NULL;
        }
    }
    else if (self->data != NULL) {
        twin->data = PyByteArray_CheckExact(self->data) ? PyByteArray_FromObject(self->data)
                                                        : Py_NewRef(self->data);
        if (twin->data == NULL) {
            Py_DECREF(twin);
            return NULL;
        }
    }
    return (PyObject *)twin;
}

/* The message's end: the session's answer, counted as the engine route's op; else what
 * fallback(key, data, route, exc) gives (route None: the route's window does not take the
 * size, or the lane's route is not the one the session is for). */
static PyObject *
gathered_final(Gathered *self, PyObject *unused)
{
    if (self->ended) {
        PyErr_SetString(PyExc_RuntimeError, "the message has ended");
        return NULL;
    }
    self->ended = 1;
    if (self->spilled != NULL)
        return PyObject_CallMethodNoArgs(self->spilled, str_finish);
    PyObject *data;
    if (self->data == NULL)
        data = PyBytes_FromStringAndSize(NULL, 0);
    else if (PyBytes_CheckExact(self->data))
        data = Py_NewRef(self->data);
    else
        data = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(self->data),
                                         PyByteArray_GET_SIZE(self->data));
    if (data == NULL)
        return NULL;
    Py_CLEAR(self->data);
    PyObject *how = Py_NewRef(self->how);
    LaneCore *core = (LaneCore *)PyTuple_GET_ITEM(how, G_LANE);
    PyObject *route = PyTuple_GET_ITEM(how, G_ROUTE);
    PyObject *key = self->key != NULL ? self->key : Py_None;
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    PyObject *out = NULL;
    if (route == core->engine_route && core->engine_pending != NULL
        && core->engine_floor <= n && n <= core->engine_ceiling) {
        PyObject *pending = Py_NewRef(core->engine_pending);
        PyObject *args[2] = {key, data};
        out = self->key != NULL ? PyObject_Vectorcall(PyTuple_GET_ITEM(how, G_CALL), args, 2,
                                                      NULL)
                                : PyObject_Vectorcall(PyTuple_GET_ITEM(how, G_CALL), args + 1,
                                                      1, NULL);
        if (out != NULL) {
            if (count_engine(core, route, pending, n) < 0)
                Py_CLEAR(out);
        }
        else if (PyErr_ExceptionMatches(PyExc_Exception)) {
            PyObject *value = raised_exception();
            PyObject *fargs[4] = {key, data, route, value};
            out = PyObject_Vectorcall(PyTuple_GET_ITEM(how, G_FALLBACK), fargs, 4, NULL);
            Py_XDECREF(value);
        }
        Py_DECREF(pending);
    }
    else {
        PyObject *fargs[4] = {key, data, Py_None, Py_None};
        out = PyObject_Vectorcall(PyTuple_GET_ITEM(how, G_FALLBACK), fargs, 4, NULL);
    }
    Py_DECREF(how);
    Py_DECREF(data);
    return out;
}

static PyObject *
gathered_get_total(Gathered *self, void *closure)
{
    return PyLong_FromSsize_t(self->total);
}

static PyGetSetDef gathered_getset[] = {
    {"total", (getter)gathered_get_total, NULL, "Bytes gathered so far.", NULL},
    {NULL},
};

static PyMethodDef gathered_methods[] = {
    {"update", (PyCFunction)gathered_update, METH_O, PyDoc_STR("update(data): gather data")},
    {"copy", (PyCFunction)gathered_copy, METH_NOARGS,
     PyDoc_STR("copy() -> an independent message with the same data so far")},
    {"digest", (PyCFunction)gathered_final, METH_NOARGS,
     PyDoc_STR("digest() -> the digest or tag: the message's end")},
    {"finalize", (PyCFunction)gathered_final, METH_NOARGS,
     PyDoc_STR("finalize() -> the digest or tag: the message's end")},
    {NULL},
};

static PyTypeObject GatheredType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.Gathered",
    .tp_doc = PyDoc_STR("A hash or MAC message gathered for the engine route (compiled)."),
    .tp_basicsize = sizeof(Gathered),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall = gathered_vectorcall,
    .tp_dealloc = (destructor)gathered_dealloc,
    .tp_traverse = (traverseproc)gathered_traverse,
    .tp_clear = (inquiry)gathered_clear,
    .tp_methods = gathered_methods,
    .tp_getset = gathered_getset,
};

/* -- ImportFilter: the import statement under `run` ------------------------------------- */

/* builtins.__import__ while cryptoffload.tools.redirect's hook is installed: Python's own
 * import, and the hook's Python (`slow`, ImportHook._import) only for an import it may answer
 * otherwise: of `cryptography` or below by a module outside `cryptography` and cryptoffload,
 * of a standard library module the hook mirrors (its `_stdlib`), any import while something
 * waits for a module (its `_waiting`), and any call not shaped as the import statement's. An
 * import inside `cryptography` (ECDSA's constructor imports its backend on every call) then
 * costs what it costs without `run`. */

typedef struct {
    PyObject_HEAD
    PyObject *original; /* Python's __import__ */
    PyObject *hook;     /* the ImportHook: its _waiting and _stdlib, read per call */
    PyObject *slow;     /* the hook's _import */
    vectorcallfunc vectorcall;
} ImportFilter;

static PyObject *str_waiting, *str_stdlib, *str_name_dunder;

static int
filter_traverse(ImportFilter *self, visitproc visit, void *arg)
{
    Py_VISIT(self->original);
    Py_VISIT(self->hook);
    Py_VISIT(self->slow);
    return 0;
}

static int
filter_clear(ImportFilter *self)
{
    Py_CLEAR(self->original);
    Py_CLEAR(self->hook);
    Py_CLEAR(self->slow);
    return 0;
}

static void
filter_dealloc(ImportFilter *self)
{
    PyObject_GC_UnTrack(self);
    filter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Whether `text` is `top` or starts with `top` and a dot. */
static int
names_within(PyObject *text, const char *top, Py_ssize_t len)
{
    if (!PyUnicode_Check(text) || PyUnicode_READY(text) < 0 || !PyUnicode_IS_ASCII(text))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const char *s = (const char *)PyUnicode_DATA(text);
    return n >= len && memcmp(s, top, (size_t)len) == 0 && (n == len || s[len] == '.');
}

/* Whether the hook's dict attribute `name` is non-empty (1), empty or absent (0), or -1. */
static int
hook_has(PyObject *hook, PyObject *name, PyObject *key)
{
    PyObject *value = PyObject_GetAttr(hook, name);
    if (value == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int has;
    if (!PyDict_Check(value))
        has = 1; /* not ours to judge: the slow way */
    else if (key == NULL)
        has = PyDict_GET_SIZE(value) > 0;
    else
        has = PyDict_Contains(value, key);
    Py_DECREF(value);
    return has;
}

static PyObject *
filter_vectorcall(ImportFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 5 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames)))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    int waiting = hook_has(self->hook, str_waiting, NULL);
    if (waiting != 0)
        return waiting < 0 ? NULL : PyObject_Vectorcall(self->slow, args, nargsf, NULL);
    PyObject *name = args[0], *globals = args[1], *level = args[4];
    if (!PyLong_CheckExact(level))
        return PyObject_Vectorcall(self->slow, args, nargsf, NULL);
    long relative = PyLong_AsLong(level);
    if (relative == -1 && PyErr_Occurred())
        return NULL;
    if (relative != 0) /* a relative import: the hook leaves it alone */
        return PyObject_Vectorcall(self->original, args, nargsf, NULL);
    if (names_within(name, "cryptography", 12)) {
        PyObject *importer = globals != NULL && PyDict_Check(globals)
                                 ? PyDict_GetItemWithError(globals, str_name_dunder)
                                 : NULL;
        if (importer == NULL && PyErr_Occurred())
            return NULL;
        if (importer != NULL
            && (names_within(importer, "cryptography", 12)
                || names_within(importer, "cryptoffload", 12)))
            return PyObject_Vectorcall(self->original, args, nargsf, NULL);
        return PyObject_Vectorcall(self->slow, args, nargsf, NULL);
    }
    int mirrored = hook_has(self->hook, str_stdlib, name);
    if (mirrored != 0)
        return mirrored < 0 ? NULL : PyObject_Vectorcall(self->slow, args, nargsf, NULL);
    return PyObject_Vectorcall(self->original, args, nargsf, NULL);
}

static PyObject *
filter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *original, *hook, *slow;
    static char *names[] = {"original", "hook", "slow", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO:ImportFilter", names, &original, &hook,
                                     &slow))
        return NULL;
    if (!PyCallable_Check(original) || !PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "ImportFilter(original, hook, slow): two callables");
        return NULL;
    }
    ImportFilter *self = (ImportFilter *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->original = Py_NewRef(original);
    self->hook = Py_NewRef(hook);
    self->slow = Py_NewRef(slow);
    self->vectorcall = (vectorcallfunc)filter_vectorcall;
    return (PyObject *)self;
}

static PyMemberDef filter_members[] = {
    {"original", T_OBJECT_EX, offsetof(ImportFilter, original), READONLY,
     "Python's own __import__."},
    {"slow", T_OBJECT_EX, offsetof(ImportFilter, slow), READONLY, "The hook's _import."},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(ImportFilter, vectorcall), READONLY},
    {NULL},
};

static PyTypeObject ImportFilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.ImportFilter",
    .tp_doc = PyDoc_STR("ImportFilter(original, hook, slow): __import__ under `run`, the "
                        "hook's Python only where it may answer otherwise (compiled)."),
    .tp_basicsize = sizeof(ImportFilter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = filter_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ImportFilter, vectorcall),
    .tp_dealloc = (destructor)filter_dealloc,
    .tp_traverse = (traverseproc)filter_traverse,
    .tp_clear = (inquiry)filter_clear,
    .tp_members = filter_members,
};

/* -- DigestCore: a hash or MAC context on a lane no engine claims ---------------------- */

/* cryptoffload.directpath.PureDigestCore is its twin and documents the contract. The subclass
 * describes its direct path in `_direct_path`: (lanes, want, pass, final, mismatch, message).
 * `lanes` maps an algorithm's class to an entry (lane, maker, *fixed), or to a dict of entries
 * by the length of the algorithm's key; the context is maker(*args[:pass], *fixed). */

typedef struct {
    PyObject_HEAD
    PyObject *ctx;       /* the software object; NULL or None: not made (see `entry`) */
    PyObject *lane;      /* _lane */
    PyObject *algorithm; /* _algorithm */
    /* Set while the software object is not made yet: the lanes' entry (lane, maker,
     * placeholder, *rest) and the constructor's argument passed to the maker (the key), if
     * any. The first update makes it with its data in the placeholder's place. */
    PyObject *entry;
    PyObject *first;
    /* The class's `_direct_path` (NULL: no direct path), and the PyMethodDefs of ctx's update,
     * final and copy while its type's version tag is `ctx_version`. */
    PyObject *spec;
    PyMethodDef *defs[D_METHODS];
    unsigned int ctx_version;
    Py_ssize_t total; /* _total: bytes fed */
    char pass;        /* how many constructor arguments the maker takes first (0 or 1) */
    char done;        /* _done: the message has ended (finalize, verify) */
    char lane_is_core;
} DigestCore;

enum { S_LANES, S_WANT, S_PASS, S_FINAL, S_MISMATCH, S_MESSAGE, S_FIELDS };

static int
digest_traverse(DigestCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->ctx);
    Py_VISIT(self->lane);
    Py_VISIT(self->algorithm);
    Py_VISIT(self->entry);
    Py_VISIT(self->first);
    Py_VISIT(self->spec);
    return 0;
}

static int
digest_clear(DigestCore *self)
{
    Py_CLEAR(self->ctx);
    Py_CLEAR(self->lane);
    Py_CLEAR(self->algorithm);
    Py_CLEAR(self->entry);
    Py_CLEAR(self->first);
    Py_CLEAR(self->spec);
    self->lane_is_core = 0;
    return 0;
}

static void
digest_dealloc(DigestCore *self)
{
    PyObject_GC_UnTrack(self);
    digest_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* What the direct path reads of a class's `_direct_path`. */
typedef struct {
    PyObject *spec; /* borrowed: the class's dict holds it while its version tag stands */
    Py_ssize_t want, pass;
} SpecInfo;

/* The class's `_direct_path` when it has the shape the direct path reads (info.spec NULL
 * otherwise). Found once per class (and again when the class changes). */
static SpecInfo
digest_spec(PyTypeObject *type)
{
    static struct {
        PyTypeObject *type;
        unsigned int version;
        SpecInfo info;
    } seen[METHOD_CACHE];
    static int next = 0;
    for (int i = 0; i < METHOD_CACHE; i++)
        if (seen[i].type == type && seen[i].version == type->tp_version_tag
            && version_valid(type))
            return seen[i].info;
    SpecInfo info = {NULL, 0, 0};
    PyObject *spec = _PyType_Lookup(type, str_direct);
    if (spec != NULL && PyTuple_CheckExact(spec) && PyTuple_GET_SIZE(spec) == S_FIELDS
        && PyDict_CheckExact(PyTuple_GET_ITEM(spec, S_LANES))
        && PyLong_CheckExact(PyTuple_GET_ITEM(spec, S_WANT))
        && PyLong_CheckExact(PyTuple_GET_ITEM(spec, S_PASS))
        && PyUnicode_CheckExact(PyTuple_GET_ITEM(spec, S_FINAL))) {
        int overflow;
        long want = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(spec, S_WANT), &overflow);
        long pass = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(spec, S_PASS), &overflow);
        if ((want == 1 || want == 2) && (pass == 0 || pass == 1) && pass <= want) {
            info.spec = spec;
            info.want = want;
            info.pass = pass;
        }
    }
    if (version_valid(type)) {
        seen[next].type = type;
        seen[next].version = type->tp_version_tag;
        seen[next].info = info;
        next = (next + 1) % METHOD_CACHE;
    }
    return info;
}

/* ctx (a new reference, stolen) becomes the software object, its methods found for the calls
 * to come; the deferred maker is dropped. */
static void
digest_take_ctx(DigestCore *self, PyObject *ctx)
{
    Py_XSETREF(self->ctx, ctx);
    Py_CLEAR(self->entry);
    Py_CLEAR(self->first);
    if (self->spec != NULL && ctx != NULL && ctx != Py_None) {
        PyMethodDef **defs = methods_of(ctx, PyTuple_GET_ITEM(self->spec, S_FINAL));
        memcpy(self->defs, defs, sizeof(self->defs));
        self->ctx_version = Py_TYPE(ctx)->tp_version_tag;
    }
}

/* Makes the software object from the deferred maker, fed `data` (NULL: the placeholder, no
 * data). 0, or -1 with an error set. */
static int
digest_make_ctx(DigestCore *self, PyObject *data)
{
    PyObject *entry = Py_NewRef(self->entry);
    PyObject *stack[5];
    Py_ssize_t n = 0, size = PyTuple_GET_SIZE(entry);
    if (self->pass)
        stack[n++] = self->first;
    stack[n++] = data != NULL ? data : PyTuple_GET_ITEM(entry, 2);
    for (Py_ssize_t i = 3; i < size; i++)
        stack[n++] = PyTuple_GET_ITEM(entry, i);
    PyObject *ctx = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 1), stack, n, NULL);
    Py_DECREF(entry);
    if (ctx == NULL)
        return -1;
    digest_take_ctx(self, ctx);
    return 0;
}

static PyObject *
digest_get_lane(DigestCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

static int
digest_set_lane(DigestCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = (char)set_lane(&self->lane, value);
    return 0;
}

static PyObject *
digest_get_ctx(DigestCore *self, void *closure)
{
    if ((self->ctx == NULL || self->ctx == Py_None) && self->entry != NULL
        && digest_make_ctx(self, NULL) < 0) /* made when first asked for */
        return NULL;
    return get_field(self->ctx, "_ctx");
}

static int
digest_set_ctx(DigestCore *self, PyObject *value, void *closure)
{
    PyObject *spec = value != NULL && value != Py_None ? digest_spec(Py_TYPE(self)).spec : NULL;
    Py_XINCREF(spec);
    Py_XSETREF(self->spec, spec);
    digest_take_ctx(self, Py_XNewRef(value));
    return 0;
}

static PyGetSetDef digest_getset[] = {
    {"_lane", (getter)digest_get_lane, (setter)digest_set_lane, NULL, NULL},
    {"_ctx", (getter)digest_get_ctx, (setter)digest_set_ctx,
     "The software object (made when first asked for), or None off the direct path", NULL},
    {NULL},
};

static PyMemberDef digest_members[] = {
    {"_algorithm", T_OBJECT_EX, offsetof(DigestCore, algorithm), 0, NULL},
    {"_total", T_PYSSIZET, offsetof(DigestCore, total), 0, NULL},
    {"_done", T_BOOL, offsetof(DigestCore, done), 0, NULL},
    {NULL},
};

/* The entry `lanes` holds for `algorithm` (borrowed): a tuple (lane, maker, *fixed) whose lane
 * is a LaneCore on which every size is software's. NULL for none (no error), or NULL with an
 * error set (*failed = 1). */
static PyObject *
digest_entry(PyObject *lanes, PyObject *algorithm, int *failed)
{
    PyObject *entry = PyDict_GetItemWithError(lanes, (PyObject *)Py_TYPE(algorithm));
    if (entry != NULL && PyDict_CheckExact(entry)) { /* by key length */
        PyObject *key = PyObject_GetAttr(algorithm, str_key);
        Py_ssize_t n = key != NULL && PyBytes_CheckExact(key) ? PyBytes_GET_SIZE(key) : -1;
        Py_XDECREF(key);
        if (n < 0) {
            PyErr_Clear();
            return NULL;
        }
        PyObject *length = PyLong_FromSsize_t(n);
        if (length == NULL) {
            *failed = 1;
            return NULL;
        }
        entry = PyDict_GetItemWithError(entry, length);
        Py_DECREF(length);
    }
    if (entry == NULL) {
        if (PyErr_Occurred())
            *failed = 1;
        return NULL;
    }
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) < 2
        || PyTuple_GET_SIZE(entry) > 5)
        return NULL;
    PyObject *lane = PyTuple_GET_ITEM(entry, 0);
    if (!PyObject_TypeCheck(lane, &LaneCoreType))
        return NULL;
    LaneCore *core = (LaneCore *)lane;
    /* The engine route's entry (lane, Gathered, b"", how): its message gathered for it. */
    if (PyTuple_GET_ITEM(entry, 1) == (PyObject *)&GatheredType)
        return PyTuple_GET_SIZE(entry) == 4 ? entry : NULL;
    /* Every size software's: no engine on the route and offload not required. */
    if (core->direct_below != -1 || core->direct_above != -1)
        return NULL;
    return entry;
}

/* Whether a keyword argument's name is `name`. */
static inline int
keyword_is(PyObject *key, PyObject *name)
{
    return key == name || (PyUnicode_Check(key) && PyUnicode_Compare(key, name) == 0);
}

/* The direct path's construction from the constructor's positional arguments and its
 * `provider=` (NULL: none given): 1 when it made the context, 0 when the slow one must, -1
 * with an error set. An entry with a placeholder (3 items or more) defers the software object
 * to the first update; one without it makes it now (an error from its maker: the slow path
 * says why, in our words). */
static int
digest_make(DigestCore *self, SpecInfo info, PyObject *const *args, Py_ssize_t nargs,
            PyObject *explicit)
{
    if (info.spec == NULL || (nargs != info.want && nargs != info.want + 1)) /* +1: backend */
        return 0;
    PyObject *algorithm = args[info.want - 1];
    if (info.want == 2 && !PyBytes_CheckExact(args[0])) /* a key: bytes, else the slow path */
        return 0;
    int failed = 0;
    PyObject *entry = digest_entry(PyTuple_GET_ITEM(info.spec, S_LANES), algorithm, &failed);
    if (entry == NULL)
        return failed ? -1 : 0;
    LaneCore *core = (LaneCore *)PyTuple_GET_ITEM(entry, 0);
    PyObject *provider = in_force(explicit, &failed);
    if (failed)
        return -1;
    if (provider == NULL || provider != core->provider)
        return 0;
    Py_INCREF(info.spec);
    Py_XSETREF(self->spec, info.spec);
    self->pass = (char)info.pass;
    if (PyTuple_GET_SIZE(entry) >= 3) {
        Py_CLEAR(self->ctx);
        Py_INCREF(entry);
        Py_XSETREF(self->entry, entry);
        Py_XINCREF(info.pass ? args[0] : NULL);
        Py_XSETREF(self->first, info.pass ? args[0] : NULL);
    }
    else {
        PyObject *ctx = info.pass ? PyObject_CallOneArg(PyTuple_GET_ITEM(entry, 1), args[0])
                                  : PyObject_CallNoArgs(PyTuple_GET_ITEM(entry, 1));
        if (ctx == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_Exception))
                return -1;
            PyErr_Clear(); /* the slow path says why, in our words */
            Py_CLEAR(self->spec);
            return 0;
        }
        digest_take_ctx(self, ctx);
    }
    Py_INCREF(core);
    Py_XSETREF(self->lane, (PyObject *)core);
    self->lane_is_core = 1;
    Py_INCREF(algorithm);
    Py_XSETREF(self->algorithm, algorithm);
    self->total = 0;
    self->done = 0;
    return 1;
}

/* The keywords the direct path takes: `provider=` (into *explicit) and `backend=` (ignored)
 * when it is not given by position too. 1 if those are all, else 0. */
static int
digest_keywords(PyObject *key, PyObject *value, Py_ssize_t nargs, Py_ssize_t want,
                PyObject **explicit)
{
    if (keyword_is(key, str_provider)) {
        *explicit = value;
        return 1;
    }
    return keyword_is(key, str_backend) && nargs <= want;
}

static int
digest_init(DigestCore *self, PyObject *args, PyObject *kwds)
{
    SpecInfo info = digest_spec(Py_TYPE(self));
    PyObject *explicit = NULL;
    int direct = 1;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (direct && PyDict_Next(kwds, &pos, &key, &value))
            direct = digest_keywords(key, value, PyTuple_GET_SIZE(args), info.want, &explicit);
        if (PyErr_Occurred())
            return -1;
    }
    if (direct) {
        int made = digest_make(self, info, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args),
                               explicit);
        if (made != 0)
            return made < 0 ? -1 : 0;
    }
    PyObject *init = PyObject_GetAttr((PyObject *)self, str_slow_init);
    if (init == NULL)
        return -1;
    PyObject *done = PyObject_Call(init, args, kwds);
    Py_DECREF(init);
    if (done == NULL)
        return -1;
    Py_DECREF(done);
    return 0;
}

/* type's own call of `callable` (its tp_new and tp_init), from vectorcall's arguments. */
static PyObject *
call_as_type(PyObject *callable, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *tuple = PyTuple_New(nargs), *kwargs = NULL, *out = NULL;
    if (tuple == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) {
        kwargs = PyDict_New();
        if (kwargs == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++)
            if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
                goto done;
    }
    out = PyType_Type.tp_call(callable, tuple, kwargs);
done:
    Py_DECREF(tuple);
    Py_XDECREF(kwargs);
    return out;
}

/* cls(*args, **kw) for a class given to direct_construction: what type's call does for it
 * (tp_new is PyType_GenericNew, tp_init digest_init), without the tuple and dict. */
static PyObject *
digest_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyTypeObject *type = (PyTypeObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    /* A class given a __new__ or __init__ since: type's own call. */
    if (type->tp_new != PyType_GenericNew || type->tp_init != (initproc)digest_init)
        return call_as_type(callable, args, nargs, kwnames);
    SpecInfo info = digest_spec(type);
    PyObject *explicit = NULL;
    int direct = 1;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; direct && i < nkw; i++)
        direct = digest_keywords(PyTuple_GET_ITEM(kwnames, i), args[nargs + i], nargs,
                                 info.want, &explicit);
    if (PyErr_Occurred())
        return NULL;
    DigestCore *self = (DigestCore *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    int made = direct ? digest_make(self, info, args, nargs, explicit) : 0;
    if (made == 0) {
        PyObject *done = slow(self, str_slow_init, args, nargs, kwnames);
        made = done != NULL ? 1 : -1;
        Py_XDECREF(done);
    }
    if (made < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* Whether the context is on the direct path: the class's spec, the software object made or
 * to be made, a LaneCore, the message not ended. */
static inline int
digest_direct(DigestCore *self)
{
    return self->spec != NULL && self->lane_is_core && !self->done
           && ((self->ctx != NULL && self->ctx != Py_None) || self->entry != NULL);
}

/* ctx's method `which` (its name: `name`) called with args, ctx kept alive across the call;
 * ctx made first if it is not yet. */
static inline PyObject *
digest_call(DigestCore *self, int which, PyObject *name, PyObject *const *args,
            Py_ssize_t nargs)
{
    if ((self->ctx == NULL || self->ctx == Py_None) && digest_make_ctx(self, NULL) < 0)
        return NULL;
    PyObject *ctx = Py_NewRef(self->ctx);
    PyTypeObject *type = Py_TYPE(ctx);
    PyMethodDef *def = type->tp_version_tag == self->ctx_version && version_valid(type)
                           ? self->defs[which]
                           : NULL;
    PyObject *out = call_method(ctx, def, name, args, nargs);
    Py_DECREF(ctx);
    return out;
}

static PyObject *
digest_update(DigestCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0]) && digest_direct(self)) {
        if (self->entry != NULL) { /* the first update: the object made with its data */
            if (digest_make_ctx(self, args[0]) < 0)
                return NULL;
            self->total += PyBytes_GET_SIZE(args[0]);
            Py_RETURN_NONE;
        }
        PyObject *out = digest_call(self, D_UPDATE, str_update, args, 1);
        if (out != NULL)
            self->total += PyBytes_GET_SIZE(args[0]);
        return out;
    }
    return slow(self, str_slow_update, args, nargs, kwnames);
}

/* The message's end: the software object's digest, the message counted as one op of the
 * lane. New reference, or NULL with an error set. */
static PyObject *
digest_end(DigestCore *self)
{
    PyObject *lane = Py_NewRef(self->lane);
    PyObject *out = digest_call(self, D_FINAL, PyTuple_GET_ITEM(self->spec, S_FINAL), NULL, 0);
    if (out != NULL) {
        self->done = 1;
        /* A gathered message was counted where it went (the engine, or the fallback's way). */
        if (!Py_IS_TYPE(self->ctx, &GatheredType)
            && lane_tally((LaneCore *)lane, self->total) < 0)
            Py_CLEAR(out);
    }
    Py_DECREF(lane);
    return out;
}

static PyObject *
digest_finalize(DigestCore *self, PyObject *unused)
{
    if (digest_direct(self))
        return digest_end(self);
    return PyObject_CallMethodNoArgs((PyObject *)self, str_slow_finalize);
}

static PyObject *
digest_verify(DigestCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0]) && digest_direct(self)
        && PyExceptionClass_Check(PyTuple_GET_ITEM(self->spec, S_MISMATCH))) {
        PyObject *spec = Py_NewRef(self->spec); /* the mismatch's error: held */
        PyObject *tag = digest_end(self);
        if (tag == NULL) {
            Py_DECREF(spec);
            return NULL;
        }
        int equal = -1;
        if (PyBytes_CheckExact(tag)) {
            /* Constant time in the tag's bytes (a length that differs is no secret). */
            Py_ssize_t n = PyBytes_GET_SIZE(tag);
            const unsigned char *a = (const unsigned char *)PyBytes_AS_STRING(tag);
            const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(args[0]);
            unsigned char diff = PyBytes_GET_SIZE(args[0]) != n;
            if (!diff)
                for (Py_ssize_t i = 0; i < n; i++)
                    diff |= a[i] ^ b[i];
            equal = !diff;
        }
        else
            PyErr_SetString(PyExc_TypeError, "the digest is not bytes");
        Py_DECREF(tag);
        if (equal == 0)
            PyErr_SetObject(PyTuple_GET_ITEM(spec, S_MISMATCH),
                            PyTuple_GET_ITEM(spec, S_MESSAGE));
        Py_DECREF(spec);
        if (equal <= 0)
            return NULL;
        Py_RETURN_NONE;
    }
    return slow(self, str_slow_verify, args, nargs, kwnames);
}

static PyObject *
digest_copy(DigestCore *self, PyObject *unused)
{
    if (!digest_direct(self))
        return PyObject_CallMethodNoArgs((PyObject *)self, str_slow_copy);
    PyObject *twin_ctx = NULL;
    if (self->entry == NULL) {
        twin_ctx = digest_call(self, D_COPY, str_copy, NULL, 0);
        if (twin_ctx == NULL)
            return NULL;
    }
    PyTypeObject *type = Py_TYPE(self);
    DigestCore *twin = (DigestCore *)type->tp_alloc(type, 0);
    if (twin == NULL) {
        Py_XDECREF(twin_ctx);
        return NULL;
    }
    twin->spec = Py_NewRef(self->spec);
    twin->pass = self->pass;
    if (twin_ctx != NULL)
        digest_take_ctx(twin, twin_ctx);
    else { /* nothing fed yet: made when the twin is first fed, as the original is */
        twin->entry = Py_NewRef(self->entry);
        twin->first = Py_XNewRef(self->first);
    }
    twin->lane = Py_XNewRef(self->lane);
    twin->lane_is_core = self->lane_is_core;
    twin->algorithm = Py_XNewRef(self->algorithm);
    twin->total = self->total;
    twin->done = 0;
    return (PyObject *)twin;
}

static PyMethodDef digest_methods[] = {
    {"update", (PyCFunction)(void (*)(void))digest_update, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update(data): add data to the message")},
    {"finalize", (PyCFunction)digest_finalize, METH_NOARGS,
     PyDoc_STR("finalize() -> the digest or tag; the context cannot be used afterwards")},
    {"verify", (PyCFunction)(void (*)(void))digest_verify, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("verify(signature): an error unless it is the message's tag (constant time)")},
    {"copy", (PyCFunction)digest_copy, METH_NOARGS,
     PyDoc_STR("copy() -> an independent context with the same data fed so far")},
    {NULL},
};

static PyTypeObject DigestCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.DigestCore",
    .tp_doc = PyDoc_STR("A hash or MAC context on a lane no engine claims (compiled)."),
    .tp_basicsize = sizeof(DigestCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)digest_init,
    .tp_dealloc = (destructor)digest_dealloc,
    .tp_traverse = (traverseproc)digest_traverse,
    .tp_clear = (inquiry)digest_clear,
    .tp_methods = digest_methods,
    .tp_members = digest_members,
    .tp_getset = digest_getset,
};

/* -- AeadStreamCore: a Cipher GCM context on a lane no engine claims ------------------- */

/* cryptoffload.directpath.PureAeadStreamCore is its twin and documents the contract: OpenSSL's
 * context does the work; the data fed to update counts as one op when the stream ends. */

typedef struct {
    PyObject_HEAD
    PyObject *ctx;  /* _ctx */
    PyObject *lane; /* _lane */
    Py_ssize_t total;
    char counted;
    char encrypt;
    char lane_is_core;
} AeadStreamCore;

enum { A_UPDATE, A_UPDATE_INTO, A_AAD, A_FINALIZE, A_FINALIZE_WITH_TAG, A_CALLS };

static int
aeadstream_traverse(AeadStreamCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->ctx);
    Py_VISIT(self->lane);
    return 0;
}

static int
aeadstream_clear(AeadStreamCore *self)
{
    Py_CLEAR(self->ctx);
    Py_CLEAR(self->lane);
    self->lane_is_core = 0;
    return 0;
}

static void
aeadstream_dealloc(AeadStreamCore *self)
{
    PyObject_GC_UnTrack(self);
    aeadstream_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
aeadstream_get_lane(AeadStreamCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

static int
aeadstream_set_lane(AeadStreamCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = (char)set_lane(&self->lane, value);
    return 0;
}

static PyObject *
aeadstream_get_ctx(AeadStreamCore *self, void *closure)
{
    return get_field(self->ctx, "_ctx");
}

static int
aeadstream_set_ctx(AeadStreamCore *self, PyObject *value, void *closure)
{
    Py_XINCREF(value);
    Py_XSETREF(self->ctx, value);
    return 0;
}

/* The tag of an encryption once finalized (AttributeError for a decryption: it has none). */
static PyObject *
aeadstream_get_tag(AeadStreamCore *self, void *closure)
{
    if (!self->encrypt) {
        PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute 'tag'",
                     Py_TYPE(self)->tp_name);
        return NULL;
    }
    if (self->ctx == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_ctx");
        return NULL;
    }
    return PyObject_GetAttr(self->ctx, str_tag);
}

static PyGetSetDef aeadstream_getset[] = {
    {"_lane", (getter)aeadstream_get_lane, (setter)aeadstream_set_lane, NULL, NULL},
    {"_ctx", (getter)aeadstream_get_ctx, (setter)aeadstream_set_ctx, NULL, NULL},
    {"tag", (getter)aeadstream_get_tag, NULL,
     "The tag, once an encryption is finalized (NotYetFinalized before)", NULL},
    {NULL},
};

static PyMemberDef aeadstream_members[] = {
    {"_total", T_PYSSIZET, offsetof(AeadStreamCore, total), 0, NULL},
    {"_counted", T_BOOL, offsetof(AeadStreamCore, counted), 0, NULL},
    {"_encrypt", T_BOOL, offsetof(AeadStreamCore, encrypt), 0, NULL},
    {NULL},
};

static PyObject **const aead_stream_names[A_CALLS] = {
    &str_update, &str_update_into, &str_authenticate_additional_data, &str_finalize,
    &str_finalize_with_tag};

/* ctx.<which>(args), ctx kept alive across the call (by name: a few calls per context). */
static PyObject *
aeadstream_call(AeadStreamCore *self, int which, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *stack[3] = {NULL, Py_NewRef(self->ctx), nargs ? args[0] : NULL};
    if (nargs > 1)
        return NULL; /* not reached: callers pass at most one argument */
    PyObject *out = PyObject_VectorcallMethod(*aead_stream_names[which], stack + 1,
                                              (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(stack[1]);
    return out;
}

/* The stream ended (its finalize ran, whatever came of it): one op of the data fed, once. The
 * error set, if any, goes on (a failure to count replaces it). */
static int
aeadstream_count(AeadStreamCore *self)
{
    if (self->counted)
        return 0;
    self->counted = 1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *lane = Py_NewRef(self->lane);
    int done = lane_tally((LaneCore *)lane, self->total);
    Py_DECREF(lane);
    if (done < 0) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return -1;
    }
    PyErr_Restore(type, value, tb);
    return 0;
}

static inline int
aeadstream_direct(AeadStreamCore *self)
{
    return self->ctx != NULL && self->ctx != Py_None && self->lane_is_core;
}

static PyObject *
aeadstream_update(AeadStreamCore *self, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0]) && aeadstream_direct(self)) {
        PyObject *out = aeadstream_call(self, A_UPDATE, args, 1);
        if (out != NULL)
            self->total += PyBytes_GET_SIZE(args[0]);
        return out;
    }
    return slow(self, str_slow_update, args, nargs, kwnames);
}

static PyObject *
aeadstream_update_into(AeadStreamCore *self, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames)
{
    if (nargs == 2 && kwnames == NULL && PyBytes_CheckExact(args[0])
        && PyByteArray_CheckExact(args[1]) && aeadstream_direct(self)) {
        PyObject *stack[4] = {NULL, Py_NewRef(self->ctx), args[0], args[1]};
        PyObject *out = PyObject_VectorcallMethod(
            str_update_into, stack + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(stack[1]);
        if (out != NULL)
            self->total += PyBytes_GET_SIZE(args[0]);
        return out;
    }
    return slow(self, str_slow_update_into, args, nargs, kwnames);
}

static PyObject *
aeadstream_aad(AeadStreamCore *self, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0]) && aeadstream_direct(self))
        return aeadstream_call(self, A_AAD, args, 1);
    return slow(self, str_slow_aad, args, nargs, kwnames);
}

static PyObject *
aeadstream_finalize(AeadStreamCore *self, PyObject *unused)
{
    if (!aeadstream_direct(self))
        return PyObject_CallMethodNoArgs((PyObject *)self, str_slow_finalize);
    PyObject *out = aeadstream_call(self, A_FINALIZE, NULL, 0);
    if (aeadstream_count(self) < 0)
        Py_CLEAR(out);
    return out;
}

/* A tag finalize_with_tag takes directly: bytes of 4, 8, or 12 to 16 (SP 800-38D's). */
static inline int
tag_taken(PyObject *tag)
{
    if (!PyBytes_CheckExact(tag))
        return 0;
    Py_ssize_t n = PyBytes_GET_SIZE(tag);
    return n == 4 || n == 8 || (n >= 12 && n <= 16);
}

static PyObject *
aeadstream_finalize_with_tag(AeadStreamCore *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && !self->encrypt && tag_taken(args[0])
        && aeadstream_direct(self)) {
        PyObject *out = aeadstream_call(self, A_FINALIZE_WITH_TAG, args, 1);
        if (aeadstream_count(self) < 0)
            Py_CLEAR(out);
        return out;
    }
    return slow(self, str_slow_finalize_with_tag, args, nargs, kwnames);
}

static PyMethodDef aeadstream_methods[] = {
    {"update", (PyCFunction)(void (*)(void))aeadstream_update, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update(data) -> the output for data")},
    {"update_into", (PyCFunction)(void (*)(void))aeadstream_update_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update_into(data, buf) -> how many bytes of output were written into buf")},
    {"authenticate_additional_data", (PyCFunction)(void (*)(void))aeadstream_aad,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("authenticate_additional_data(data): associated data, before any update")},
    {"finalize", (PyCFunction)aeadstream_finalize, METH_NOARGS,
     PyDoc_STR("finalize() -> the rest of the output; the stream counts as one op")},
    {"_finalize_with_tag", (PyCFunction)(void (*)(void))aeadstream_finalize_with_tag,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("A decryption's finalize_with_tag(tag) (the subclass names it)")},
    {NULL},
};

static PyTypeObject AeadStreamCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.AeadStreamCore",
    .tp_doc = PyDoc_STR("A Cipher GCM context on a lane no engine claims (compiled)."),
    .tp_basicsize = sizeof(AeadStreamCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)aeadstream_dealloc,
    .tp_traverse = (traverseproc)aeadstream_traverse,
    .tp_clear = (inquiry)aeadstream_clear,
    .tp_methods = aeadstream_methods,
    .tp_members = aeadstream_members,
    .tp_getset = aeadstream_getset,
};

/* -- EngineGcmCore: a Cipher GCM context an engine's stream holds ---------------------- */

/* cryptoffload.directpath.PureEngineGcmCore is its twin and documents the contract: the
 * engine's stream answers each call at once; what was sent is kept for software to redo. */

/* Bytes such a context keeps for software (_stream.RETAIN_LIMIT; a test checks they agree). */
#define RETAIN_LIMIT (256 * 1024 * 1024)

typedef struct {
    PyObject_HEAD
    PyObject *cipher;   /* _cipher: the Cipher */
    PyObject *fallback; /* _fallback: why software took over (a dict) */
    PyObject *stream;   /* _stream */
    PyObject *lane;     /* _lane */
    PyObject *name;     /* _name: the engine's */
    PyObject *route;    /* _route: the engine's route while it is the lane's engine route */
    PyObject *high;     /* _high: the policy's max_size for the engine, or None */
    PyObject *kept;     /* _kept: [(is AAD, bytes)] in the order sent */
    PyObject *sw;       /* _sw: software's context once it took over, else None */
    PyObject *tag;      /* _tag: an encryption's, once finalized */
    PyObject *mode_tag; /* _mode_tag: a decryption's tag in the mode, or None */
    Py_ssize_t kept_size, total, data_left, aad_left, min_tag;
    char updated, done, failed, encrypt, lane_is_core;
} EngineGcmCore;

static int
enginegcm_traverse(EngineGcmCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->cipher);
    Py_VISIT(self->fallback);
    Py_VISIT(self->stream);
    Py_VISIT(self->lane);
    Py_VISIT(self->name);
    Py_VISIT(self->route);
    Py_VISIT(self->high);
    Py_VISIT(self->kept);
    Py_VISIT(self->sw);
    Py_VISIT(self->tag);
    Py_VISIT(self->mode_tag);
    return 0;
}

static int
enginegcm_clear(EngineGcmCore *self)
{
    Py_CLEAR(self->cipher);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->stream);
    Py_CLEAR(self->lane);
    Py_CLEAR(self->name);
    Py_CLEAR(self->route);
    Py_CLEAR(self->high);
    Py_CLEAR(self->kept);
    Py_CLEAR(self->sw);
    Py_CLEAR(self->tag);
    Py_CLEAR(self->mode_tag);
    self->lane_is_core = 0;
    return 0;
}

static void
enginegcm_dealloc(EngineGcmCore *self)
{
    PyObject_GC_UnTrack(self);
    enginegcm_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
enginegcm_get_lane(EngineGcmCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

static int
enginegcm_set_lane(EngineGcmCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = (char)set_lane(&self->lane, value);
    return 0;
}

/* An encryption's tag once finalized (_tag_missing() before); a decryption has none. */
static PyObject *
enginegcm_get_tag(EngineGcmCore *self, void *closure)
{
    if (!self->encrypt) {
        PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute 'tag'",
                     Py_TYPE(self)->tp_name);
        return NULL;
    }
    if (self->tag != NULL && self->tag != Py_None)
        return Py_NewRef(self->tag);
    return PyObject_CallMethodNoArgs((PyObject *)self, str_tag_missing);
}

static PyGetSetDef enginegcm_getset[] = {
    {"_lane", (getter)enginegcm_get_lane, (setter)enginegcm_set_lane, NULL, NULL},
    {"tag", (getter)enginegcm_get_tag, NULL,
     "The tag, once an encryption is finalized (NotYetFinalized before)", NULL},
    {NULL},
};

static PyMemberDef enginegcm_members[] = {
    {"_cipher", T_OBJECT_EX, offsetof(EngineGcmCore, cipher), 0, NULL},
    {"_fallback", T_OBJECT_EX, offsetof(EngineGcmCore, fallback), 0, NULL},
    {"_stream", T_OBJECT_EX, offsetof(EngineGcmCore, stream), 0, NULL},
    {"_name", T_OBJECT_EX, offsetof(EngineGcmCore, name), 0, NULL},
    {"_route", T_OBJECT_EX, offsetof(EngineGcmCore, route), 0, NULL},
    {"_high", T_OBJECT_EX, offsetof(EngineGcmCore, high), 0, NULL},
    {"_kept", T_OBJECT_EX, offsetof(EngineGcmCore, kept), 0, NULL},
    {"_sw", T_OBJECT_EX, offsetof(EngineGcmCore, sw), 0, NULL},
    {"_tag", T_OBJECT_EX, offsetof(EngineGcmCore, tag), 0, NULL},
    {"_mode_tag", T_OBJECT_EX, offsetof(EngineGcmCore, mode_tag), 0, NULL},
    {"_kept_size", T_PYSSIZET, offsetof(EngineGcmCore, kept_size), 0, NULL},
    {"_total", T_PYSSIZET, offsetof(EngineGcmCore, total), 0, NULL},
    {"_data_left", T_PYSSIZET, offsetof(EngineGcmCore, data_left), 0, NULL},
    {"_aad_left", T_PYSSIZET, offsetof(EngineGcmCore, aad_left), 0, NULL},
    {"_min_tag", T_PYSSIZET, offsetof(EngineGcmCore, min_tag), 0, NULL},
    {"_updated", T_BOOL, offsetof(EngineGcmCore, updated), 0, NULL},
    {"_done", T_BOOL, offsetof(EngineGcmCore, done), 0, NULL},
    {"_failed", T_BOOL, offsetof(EngineGcmCore, failed), 0, NULL},
    {"_encrypt", T_BOOL, offsetof(EngineGcmCore, encrypt), 0, NULL},
    {NULL},
};

/* Whether the engine still holds the stream (no software context, not done), with every field
 * the fast paths read set as they expect. */
static inline int
enginegcm_held(EngineGcmCore *self)
{
    return (self->sw == NULL || self->sw == Py_None) && !self->done && self->stream != NULL
           && self->lane != NULL && self->kept != NULL && PyList_CheckExact(self->kept);
}

/* Whether n more bytes can be kept with `total` data bytes sent: 1, 0, or -1 for a _high that
 * is not an int (then the Python path judges). */
static inline int
enginegcm_keeps(EngineGcmCore *self, Py_ssize_t n, Py_ssize_t total)
{
    if (self->kept_size > RETAIN_LIMIT - n)
        return 0;
    PyObject *high = self->high;
    if (high == NULL || high == Py_None)
        return 1;
    if (!PyLong_CheckExact(high))
        return -1;
    int overflow;
    long long limit = PyLong_AsLongLongAndOverflow(high, &overflow);
    if (limit == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (overflow)
        return overflow > 0;
    return total <= limit;
}

/* Keep (is_aad, data) last in _kept. */
static inline int
enginegcm_keep(EngineGcmCore *self, PyObject *is_aad, PyObject *data)
{
    PyObject *entry = PyTuple_Pack(2, is_aad, data);
    if (entry == NULL)
        return -1;
    int failed = PyList_Append(self->kept, entry);
    Py_DECREF(entry);
    if (failed < 0)
        return -1;
    self->kept_size += PyBytes_GET_SIZE(data);
    return 0;
}

/* stream.<name>(args): the stream kept alive across the call. */
static PyObject *
enginegcm_send(EngineGcmCore *self, PyObject *name, PyObject *arg)
{
    PyObject *stack[3] = {NULL, Py_NewRef(self->stream), arg};
    PyObject *out = PyObject_VectorcallMethod(
        name, stack + 1, (arg != NULL ? 2 : 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(stack[1]);
    return out;
}

/* args[0].<name>(*args[1:nargs]) with `exc` the exception being handled, as inside Python's
 * `except ... as exc:` (an exception the call raises gets exc as its __context__). */
static PyObject *
call_handling(PyObject *exc, PyObject *name, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *saved_type, *saved_value, *saved_tb;
    PyErr_GetExcInfo(&saved_type, &saved_value, &saved_tb);
    PyErr_SetExcInfo(Py_NewRef((PyObject *)Py_TYPE(exc)), Py_NewRef(exc),
                     PyException_GetTraceback(exc));
    PyObject *out =
        PyObject_VectorcallMethod(name, args, nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    PyErr_SetExcInfo(saved_type, saved_value, saved_tb);
    return out;
}

/* After the stream raised: self.<handler>(a[, b], the exception) for an Exception; anything
 * else (KeyboardInterrupt...) goes on as it is. */
static PyObject *
enginegcm_raised(EngineGcmCore *self, PyObject *handler, PyObject *a, PyObject *b)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return NULL;
    PyObject *exc = raised_exception();
    PyObject *stack[5] = {NULL, (PyObject *)self, a, b != NULL ? b : exc, exc};
    PyObject *out = call_handling(exc, handler, stack + 1, b != NULL ? 4 : 3);
    Py_DECREF(exc);
    return out;
}

static PyObject *
enginegcm_aad(EngineGcmCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0]) && enginegcm_held(self)
        && !self->updated) {
        PyObject *data = args[0];
        Py_ssize_t n = PyBytes_GET_SIZE(data);
        if (n <= self->aad_left && enginegcm_keeps(self, n, self->total) == 1) {
            if (enginegcm_keep(self, Py_True, data) < 0)
                return NULL;
            self->aad_left -= n;
            PyObject *out = enginegcm_send(self, str_update_aad, data);
            if (out == NULL)
                out = enginegcm_raised(self, str_resend, Py_True, data);
            if (out == NULL)
                return NULL;
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
    }
    return slow(self, str_slow_aad, args, nargs, kwnames);
}

static PyObject *
enginegcm_update(EngineGcmCore *self, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0]) && enginegcm_held(self)) {
        PyObject *data = args[0];
        Py_ssize_t n = PyBytes_GET_SIZE(data);
        if (n <= self->data_left && enginegcm_keeps(self, n, self->total + n) == 1) {
            if (enginegcm_keep(self, Py_False, data) < 0)
                return NULL;
            self->updated = 1;
            self->data_left -= n;
            self->total += n;
            PyObject *out = enginegcm_send(self, str_update, data);
            if (out == NULL)
                return enginegcm_raised(self, str_resend, Py_False, data);
            if (PyBytes_CheckExact(out) && PyBytes_GET_SIZE(out) == n)
                return out;
            PyObject *stack[4] = {NULL, (PyObject *)self, out, data};
            PyObject *checked = PyObject_VectorcallMethod(
                str_engine_output, stack + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            Py_DECREF(out);
            return checked;
        }
    }
    return slow(self, str_slow_update, args, nargs, kwnames);
}

/* The engine finished the stream: done, nothing kept, one op of _total counted for it (in the
 * lane's record while its route is the lane's engine route, else Lane.stream_done). */
static int
enginegcm_finish(EngineGcmCore *self)
{
    self->done = 1;
    PyObject *empty = PyList_New(0);
    if (empty == NULL)
        return -1;
    Py_XSETREF(self->kept, empty);
    if (self->lane == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_lane");
        return -1;
    }
    PyObject *lane = Py_NewRef(self->lane);
    LaneCore *core = (LaneCore *)lane;
    int failed;
    if (self->lane_is_core && self->route != NULL && self->route != Py_None
        && core->engine_route == self->route && core->engine_pending != NULL) {
        PyObject *route = Py_NewRef(self->route), *pending = Py_NewRef(core->engine_pending);
        failed = count_engine(core, route, pending, self->total) < 0;
        Py_DECREF(route);
        Py_DECREF(pending);
    }
    else {
        PyObject *total = PyLong_FromSsize_t(self->total);
        PyObject *name = self->name != NULL ? self->name : Py_None;
        PyObject *done = total == NULL ? NULL
                                       : PyObject_CallMethodObjArgs(lane, str_stream_done, name,
                                                                    total, NULL);
        Py_XDECREF(total);
        failed = done == NULL;
        Py_XDECREF(done);
    }
    Py_DECREF(lane);
    return failed ? -1 : 0;
}

static PyObject *
enginegcm_finish_on_engine(EngineGcmCore *self, PyObject *unused)
{
    if (enginegcm_finish(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The engine checks a decryption's tag: b"" when it passes (_check_failed(tag, exc) else). */
static PyObject *
enginegcm_engine_check(EngineGcmCore *self, PyObject *tag)
{
    if (self->stream == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_stream");
        return NULL;
    }
    PyObject *out = enginegcm_send(self, str_finalize, tag);
    if (out == NULL)
        return enginegcm_raised(self, str_check_failed, tag, NULL);
    Py_DECREF(out);
    if (enginegcm_finish(self) < 0)
        return NULL;
    return PyBytes_FromStringAndSize(NULL, 0);
}

static PyObject *
enginegcm_finalize(EngineGcmCore *self, PyObject *unused)
{
    if (enginegcm_held(self)) {
        if (self->encrypt) {
            PyObject *out = enginegcm_send(self, str_finalize, NULL);
            if (out == NULL)
                return enginegcm_raised(self, str_engine_finalized, Py_None, NULL);
            if (PyBytes_CheckExact(out) && PyBytes_GET_SIZE(out) == 16) {
                Py_XSETREF(self->tag, out);
                if (enginegcm_finish(self) < 0)
                    return NULL;
                return PyBytes_FromStringAndSize(NULL, 0);
            }
            PyObject *stack[4] = {NULL, (PyObject *)self, out, Py_None};
            PyObject *done = PyObject_VectorcallMethod(
                str_engine_finalized, stack + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            Py_DECREF(out);
            return done;
        }
        if (self->mode_tag != NULL && self->mode_tag != Py_None) {
            PyObject *tag = Py_NewRef(self->mode_tag);
            PyObject *out = enginegcm_engine_check(self, tag);
            Py_DECREF(tag);
            return out;
        }
    }
    return PyObject_CallMethodNoArgs((PyObject *)self, str_slow_finalize);
}

static PyObject *
enginegcm_finalize_with_tag(EngineGcmCore *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && !self->encrypt && tag_taken(args[0])
        && PyBytes_GET_SIZE(args[0]) >= self->min_tag
        && (self->mode_tag == NULL || self->mode_tag == Py_None) && enginegcm_held(self))
        return enginegcm_engine_check(self, args[0]);
    return slow(self, str_slow_finalize_with_tag, args, nargs, kwnames);
}

static PyMethodDef enginegcm_methods[] = {
    {"update", (PyCFunction)(void (*)(void))enginegcm_update, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update(data) -> the output for data")},
    {"authenticate_additional_data", (PyCFunction)(void (*)(void))enginegcm_aad,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("authenticate_additional_data(data): associated data, before any update")},
    {"finalize", (PyCFunction)enginegcm_finalize, METH_NOARGS,
     PyDoc_STR("finalize() -> the rest of the output; the stream counts as one op")},
    {"_finalize_with_tag", (PyCFunction)(void (*)(void))enginegcm_finalize_with_tag,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("A decryption's finalize_with_tag(tag) (the subclass names it)")},
    {"_engine_check", (PyCFunction)enginegcm_engine_check, METH_O,
     PyDoc_STR("_engine_check(tag) -> b'' once the engine passed the tag")},
    {"_finish_on_engine", (PyCFunction)enginegcm_finish_on_engine, METH_NOARGS,
     PyDoc_STR("The engine finished the stream: one op of _total bytes, counted for it")},
    {NULL},
};

static PyTypeObject EngineGcmCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.EngineGcmCore",
    .tp_doc = PyDoc_STR("A Cipher GCM context an engine's stream holds (compiled)."),
    .tp_basicsize = sizeof(EngineGcmCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)enginegcm_dealloc,
    .tp_traverse = (traverseproc)enginegcm_traverse,
    .tp_clear = (inquiry)enginegcm_clear,
    .tp_methods = enginegcm_methods,
    .tp_members = enginegcm_members,
    .tp_getset = enginegcm_getset,
};

/* -- CipherCore: Cipher(algorithm, mode), its contexts made on a lane no engine claims ----- */

/* cryptoffload.directpath.PureCipherCore is its twin and documents the contract. The subclass
 * describes its direct path in `_direct_path`: (modes, lanes, make_encryptor, make_decryptor,
 * stream_class, gcm_encryptor_class, gcm_decryptor_class). `modes` maps a mode's class to
 * (our name of the mode, a dict from an algorithm's class to a dict from its key's length to
 * our name of the pair); `lanes` maps such a name to a software-only lane. */

enum {
    C_MODES,
    C_LANES,
    C_MAKE_ENC,
    C_MAKE_DEC,
    C_STREAM,
    C_GCM_ENC,
    C_GCM_DEC,
    C_ROUTED,  /* our name -> the lane with an engine route its chained contexts were made on */
    C_CHAINED, /* the chained context's class (a ChainedCore) */
    C_OP,      /* CipherOp: what a session is asked for */
    C_ENGINE_GCM_ENC, /* the engine GCM contexts' classes (EngineGcmCore's) */
    C_ENGINE_GCM_DEC,
    C_AEAD_OP,         /* AeadOp: what the engine's stream is opened with */
    C_GCM_OPEN_FAILED, /* gcm_open_failed: the context when opening raised */
    C_FIELDS
};

/* What the construction found: no direct path, a stream mode's, GCM's without a tag in the
 * mode, GCM's with one (a decryption only). */
enum { K_NONE, K_STREAM, K_GCM, K_GCM_TAG };

typedef struct {
    PyObject_HEAD
    PyObject *algorithm;
    PyObject *mode;
    PyObject *alg;       /* _alg: our name, or None */
    PyObject *mode_name; /* _mode_name */
    PyObject *provider;  /* _provider */
    char kind;           /* K_*: set by the direct construction only */
} CipherCore;

static int
cipher_traverse(CipherCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->algorithm);
    Py_VISIT(self->mode);
    Py_VISIT(self->alg);
    Py_VISIT(self->mode_name);
    Py_VISIT(self->provider);
    return 0;
}

static int
cipher_clear(CipherCore *self)
{
    Py_CLEAR(self->algorithm);
    Py_CLEAR(self->mode);
    Py_CLEAR(self->alg);
    Py_CLEAR(self->mode_name);
    Py_CLEAR(self->provider);
    return 0;
}

static void
cipher_dealloc(CipherCore *self)
{
    PyObject_GC_UnTrack(self);
    cipher_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef cipher_members[] = {
    {"algorithm", T_OBJECT_EX, offsetof(CipherCore, algorithm), 0, "The algorithm given."},
    {"mode", T_OBJECT, offsetof(CipherCore, mode), 0, "The mode given (None for a stream cipher)."},
    {"_alg", T_OBJECT, offsetof(CipherCore, alg), 0, NULL},
    {"_mode_name", T_OBJECT, offsetof(CipherCore, mode_name), 0, NULL},
    {"_provider", T_OBJECT, offsetof(CipherCore, provider), 0, NULL},
    {"_kind", T_BYTE, offsetof(CipherCore, kind), 0, NULL},
    {NULL},
};

/* The class's `_direct_path` (borrowed) when it has the shape the direct path reads, else NULL. */
static PyObject *
cipher_spec(PyTypeObject *type)
{
    static struct {
        PyTypeObject *type;
        unsigned int version;
        PyObject *spec;
    } seen[METHOD_CACHE];
    static int next = 0;
    for (int i = 0; i < METHOD_CACHE; i++)
        if (seen[i].type == type && seen[i].version == type->tp_version_tag
            && version_valid(type))
            return seen[i].spec;
    PyObject *spec = _PyType_Lookup(type, str_direct);
    if (spec == NULL || !PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != C_FIELDS
        || !PyDict_CheckExact(PyTuple_GET_ITEM(spec, C_MODES))
        || !PyDict_CheckExact(PyTuple_GET_ITEM(spec, C_LANES))
        || !PyType_Check(PyTuple_GET_ITEM(spec, C_STREAM))
        || !PyType_IsSubtype((PyTypeObject *)PyTuple_GET_ITEM(spec, C_STREAM),
                             &DirectStreamCoreType)
        || !PyType_Check(PyTuple_GET_ITEM(spec, C_GCM_ENC))
        || !PyType_IsSubtype((PyTypeObject *)PyTuple_GET_ITEM(spec, C_GCM_ENC),
                             &AeadStreamCoreType)
        || !PyType_Check(PyTuple_GET_ITEM(spec, C_GCM_DEC))
        || !PyType_IsSubtype((PyTypeObject *)PyTuple_GET_ITEM(spec, C_GCM_DEC),
                             &AeadStreamCoreType)
        || !PyDict_CheckExact(PyTuple_GET_ITEM(spec, C_ROUTED))
        || !PyType_Check(PyTuple_GET_ITEM(spec, C_CHAINED))
        || !PyType_IsSubtype((PyTypeObject *)PyTuple_GET_ITEM(spec, C_CHAINED), &ChainedCoreType)
        || !PyCallable_Check(PyTuple_GET_ITEM(spec, C_OP))
        || !PyType_Check(PyTuple_GET_ITEM(spec, C_ENGINE_GCM_ENC))
        || !PyType_IsSubtype((PyTypeObject *)PyTuple_GET_ITEM(spec, C_ENGINE_GCM_ENC),
                             &EngineGcmCoreType)
        || !PyType_Check(PyTuple_GET_ITEM(spec, C_ENGINE_GCM_DEC))
        || !PyType_IsSubtype((PyTypeObject *)PyTuple_GET_ITEM(spec, C_ENGINE_GCM_DEC),
                             &EngineGcmCoreType)
        || !PyCallable_Check(PyTuple_GET_ITEM(spec, C_AEAD_OP))
        || !PyCallable_Check(PyTuple_GET_ITEM(spec, C_GCM_OPEN_FAILED)))
        spec = NULL;
    if (version_valid(type)) {
        seen[next].type = type;
        seen[next].version = type->tp_version_tag;
        seen[next].spec = spec;
        next = (next + 1) % METHOD_CACHE;
    }
    return spec;
}

/* The direct construction: 1 when it took the arguments, 0 when the slow one must, -1 with an
 * error set. Takes (algorithm, mode[, backend]) of the classes `modes` names, a bytes key of a
 * length it names, no provider; runs the mode's own check (validate_for_algorithm) and, for
 * GCM, reads the mode's tag. */
static int
cipher_make(CipherCore *self, PyObject *const *args, Py_ssize_t nargs, int keywords_ok)
{
    PyObject *spec = cipher_spec(Py_TYPE(self));
    if (spec == NULL || !keywords_ok || (nargs != 2 && nargs != 3))
        return 0;
    PyObject *algorithm = args[0], *mode = args[1];
    PyObject *entry = PyDict_GetItemWithError(PyTuple_GET_ITEM(spec, C_MODES),
                                              (PyObject *)Py_TYPE(mode));
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2
        || !PyUnicode_CheckExact(PyTuple_GET_ITEM(entry, 0))
        || !PyDict_CheckExact(PyTuple_GET_ITEM(entry, 1)))
        return PyErr_Occurred() ? -1 : 0;
    PyObject *mode_name = PyTuple_GET_ITEM(entry, 0);
    PyObject *names = PyDict_GetItemWithError(PyTuple_GET_ITEM(entry, 1),
                                              (PyObject *)Py_TYPE(algorithm));
    if (names == NULL || !PyDict_CheckExact(names))
        return PyErr_Occurred() ? -1 : 0;
    PyObject *key = PyObject_GetAttr(algorithm, str_key);
    if (key == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *alg = NULL;
    if (PyBytes_CheckExact(key)) {
        PyObject *length = PyLong_FromSsize_t(PyBytes_GET_SIZE(key));
        if (length == NULL) {
            Py_DECREF(key);
            return -1;
        }
        alg = PyDict_GetItemWithError(names, length);
        Py_DECREF(length);
    }
    Py_DECREF(key);
    if (alg == NULL || !PyUnicode_CheckExact(alg))
        return PyErr_Occurred() ? -1 : 0;
    /* Held across the mode's own check, which runs Python. */
    Py_INCREF(alg);
    Py_INCREF(mode_name);
    PyObject *checked = PyObject_CallMethodOneArg(mode, str_validate_for_algorithm, algorithm);
    if (checked == NULL) {
        Py_DECREF(alg);
        Py_DECREF(mode_name);
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return -1;
        PyErr_Clear(); /* the slow path says what is wrong, in our words */
        return 0;
    }
    Py_DECREF(checked);
    char kind = K_STREAM;
    if (PyUnicode_CompareWithASCIIString(mode_name, "gcm") == 0) { /* its tag: read once */
        PyObject *tag = PyObject_GetAttr(mode, str_tag);
        kind = tag == NULL ? K_NONE : tag == Py_None ? K_GCM : tag_taken(tag) ? K_GCM_TAG : K_NONE;
        Py_XDECREF(tag);
        if (kind == K_NONE) { /* no tag to read, or one SP 800-38D does not allow: slow path */
            PyErr_Clear();
            Py_DECREF(alg);
            Py_DECREF(mode_name);
            return 0;
        }
    }
    Py_INCREF(algorithm);
    Py_XSETREF(self->algorithm, algorithm);
    Py_INCREF(mode);
    Py_XSETREF(self->mode, mode);
    Py_XSETREF(self->alg, alg);
    Py_XSETREF(self->mode_name, mode_name);
    Py_XSETREF(self->provider, Py_NewRef(Py_None));
    self->kind = kind;
    return 1;
}

static int
cipher_init(CipherCore *self, PyObject *args, PyObject *kwds)
{
    int keywords_ok = kwds == NULL || PyDict_GET_SIZE(kwds) == 0;
    int made = cipher_make(self, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args), keywords_ok);
    if (made != 0)
        return made < 0 ? -1 : 0;
    self->kind = K_NONE;
    PyObject *init = PyObject_GetAttr((PyObject *)self, str_slow_init);
    if (init == NULL)
        return -1;
    PyObject *done = PyObject_Call(init, args, kwds);
    Py_DECREF(init);
    if (done == NULL)
        return -1;
    Py_DECREF(done);
    return 0;
}

static PyObject *software_context(CipherCore *self, PyObject *spec, char kind, int encrypt,
                                  int *failed);

/* The LaneCore the spec's dict at `index` holds for `alg` (borrowed), else NULL (no error), or
 * NULL with an error set (*failed = 1). */
static LaneCore *
spec_lane(PyObject *spec, int index, PyObject *alg, int *failed)
{
    PyObject *lane = PyDict_GetItemWithError(PyTuple_GET_ITEM(spec, index), alg);
    if (lane == NULL) {
        if (PyErr_Occurred())
            *failed = 1;
        return NULL;
    }
    return PyObject_TypeCheck(lane, &LaneCoreType) ? (LaneCore *)lane : NULL;
}

/* The Python slots a chained context's __init__ sets (ChainedCore's own fields aside). */
enum {
    S_ALG,
    S_ALGORITHM,
    S_CHAIN,
    S_ENCRYPT,
    S_FAILED,
    S_HELD,
    S_KEY,
    S_KIND,
    S_MODE,
    S_SLACK,
    S_SPENT,
    S_SW_BASE,
    S_UNKEPT,
    SLOTS
};
static const char *const slot_names[SLOTS] = {
    "_alg", "_algorithm", "_chain", "_encrypt", "_failed", "_held",   "_key",
    "_kind", "_mode",     "_slack", "_spent",   "_sw_base", "_unkept",
};

/* Where `type` keeps `name`: 1 with *offset set when it is a writable object slot (a
 * __slots__ member), else 0. */
static int
object_slot(PyTypeObject *type, PyObject *name, Py_ssize_t *offset)
{
    PyObject *found = _PyType_Lookup(type, name); /* borrowed; never raises here */
    if (found == NULL || !Py_IS_TYPE(found, &PyMemberDescr_Type))
        return 0;
    PyMemberDef *member = ((PyMemberDescrObject *)found)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY))
        return 0;
    *offset = member->offset;
    return 1;
}

/* A lane about to make a context folds its record when due: a program that makes context
 * after context keeps its record bounded. -1 with an error set. */
static int
fold_if_due(LaneCore *core)
{
    PyObject *q = core->tally_q;
    if (q == NULL || !Py_IS_TYPE(q, &SizeLogType) || ((SizeLog *)q)->len <= FOLD_AT)
        return 0;
    PyObject *folded = PyObject_CallMethodNoArgs((PyObject *)core, str_fold_due);
    if (folded == NULL)
        return -1;
    Py_DECREF(folded);
    return 0;
}

/* The offsets of `type`'s slots named in slot_names: 1 when each is a writable object slot
 * (__slots__), 0 when not (its contexts are made the slow way), -1 with an error set. */
static int
chained_slots(PyTypeObject *type, Py_ssize_t offsets[SLOTS])
{
    static PyTypeObject *seen_type = NULL;
    static unsigned int seen_version = 0;
    static Py_ssize_t seen[SLOTS];
    static int seen_ok = 0;
    if (seen_type == type && seen_version == type->tp_version_tag && version_valid(type)) {
        memcpy(offsets, seen, sizeof(seen));
        return seen_ok;
    }
    int ok = 1;
    for (int i = 0; i < SLOTS && ok; i++) {
        PyObject *name = PyUnicode_InternFromString(slot_names[i]);
        if (name == NULL)
            return -1;
        ok = object_slot(type, name, &offsets[i]);
        Py_DECREF(name);
    }
    if (version_valid(type)) {
        seen_type = type;
        seen_version = type->tp_version_tag;
        memcpy(seen, offsets, sizeof(seen));
        seen_ok = ok;
    }
    return ok;
}

/* obj's slot at `offset` := value (a new reference taken). */
static inline void
put_slot(PyObject *obj, Py_ssize_t offset, PyObject *value)
{
    PyObject **slot = (PyObject **)((char *)obj + offset);
    Py_XSETREF(*slot, Py_NewRef(value));
}

/* -- Ops made without their __init__'s frame ------------------------------------------- */

/* The most fields (alg, kind and FIELDS) an op made here has. */
#define OP_FIELDS 8

typedef struct {
    PyTypeObject *type; /* borrowed: compared, never dereferenced unless the tag matches */
    unsigned int version;
    int ok; /* its fields are writable object slots */
    Py_ssize_t n;
    Py_ssize_t offsets[OP_FIELDS];
} OpLayout;

static OpLayout op_layouts[METHOD_CACHE];
static int op_layouts_next = 0;

/* Where `type` (an Op class) keeps alg, kind and the FIELDS it names, in that order. */
static OpLayout
op_layout(PyTypeObject *type)
{
    OpLayout layout = {type, type->tp_version_tag, 0, 0, {0}};
    PyObject *fields = _PyType_Lookup(type, str_fields_upper); /* borrowed */
    if (fields == NULL || !PyTuple_CheckExact(fields)
        || PyTuple_GET_SIZE(fields) + 2 > OP_FIELDS)
        return layout;
    layout.n = PyTuple_GET_SIZE(fields) + 2;
    layout.ok = 1;
    for (Py_ssize_t i = 0; i < layout.n && layout.ok; i++) {
        PyObject *name = i == 0 ? str_alg : i == 1 ? str_kind : PyTuple_GET_ITEM(fields, i - 2);
        layout.ok = PyUnicode_CheckExact(name) && object_slot(type, name, &layout.offsets[i]);
    }
    return layout;
}

/* cls(*values): an op whose values are alg, kind and its FIELDS in order, written straight
 * into its slots (which is all an Op's __init__ does; a test checks the two agree); called
 * the ordinary way when cls lays them out otherwise. */
static PyObject *
new_op(PyObject *cls, PyObject *const *values, Py_ssize_t n)
{
    if (!PyType_Check(cls))
        return PyObject_Vectorcall(cls, values, n, NULL);
    PyTypeObject *type = (PyTypeObject *)cls;
    OpLayout *layout = NULL;
    for (int i = 0; i < METHOD_CACHE; i++)
        if (op_layouts[i].type == type && op_layouts[i].version == type->tp_version_tag
            && version_valid(type))
            layout = &op_layouts[i];
    OpLayout fresh;
    if (layout == NULL) {
        fresh = op_layout(type);
        layout = &fresh;
        if (version_valid(type)) {
            op_layouts[op_layouts_next] = fresh;
            op_layouts_next = (op_layouts_next + 1) % METHOD_CACHE;
        }
    }
    if (!layout->ok || layout->n != n)
        return PyObject_Vectorcall(cls, values, n, NULL);
    PyObject *op = type->tp_alloc(type, 0);
    if (op == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        put_slot(op, layout->offsets[i], values[i]);
    return op;
}

/* bytes(value) for the chaining value a mode gives (new reference). */
static PyObject *
chain_bytes(PyObject *value)
{
    if (PyBytes_CheckExact(value))
        return Py_NewRef(value);
    return PyBytes_FromObject(value);
}

/* A chained context (the spec's C_CHAINED class) for AES in ECB, CBC or CTR on the lane
 * C_ROUTED holds for _alg, when that lane's provider is the one in force and it has an engine
 * route: the state its __init__ sets, and the route's session asked for as its _enter_held
 * asks (kept as _sw, or the route noted in _unkept when the engine keeps none; an exception
 * making it goes to the context's _no_session). NULL with no error when __init__ must make
 * it, or NULL with an error set (*failed = 1). */
/* The lane C_ROUTED holds for _alg, when it has an engine route and its provider is the one in
 * force (borrowed); else NULL (with *failed = 1 if an error is set). */
static LaneCore *
routed_lane(CipherCore *self, PyObject *spec, int *failed)
{
    LaneCore *core = spec_lane(spec, C_ROUTED, self->alg, failed);
    if (core == NULL || core->engine_route == NULL || core->engine_route == Py_None)
        return NULL;
    PyObject *provider = in_force(self->provider, failed);
    return provider != NULL && provider == core->provider ? core : NULL;
}

static PyObject *
routed_context(CipherCore *self, PyObject *spec, int encrypt, int *failed)
{
    LaneCore *core = routed_lane(self, spec, failed);
    if (core == NULL || self->mode_name == NULL || !PyUnicode_Check(self->mode_name))
        return NULL;
    PyObject *lane = (PyObject *)core;
    int ecb = PyUnicode_CompareWithASCIIString(self->mode_name, "ecb") == 0;
    int cbc = !ecb && PyUnicode_CompareWithASCIIString(self->mode_name, "cbc") == 0;
    int ctr = !ecb && !cbc && PyUnicode_CompareWithASCIIString(self->mode_name, "ctr") == 0;
    if (!ecb && !cbc && !ctr)
        return NULL;
    PyTypeObject *type = (PyTypeObject *)PyTuple_GET_ITEM(spec, C_CHAINED);
    Py_ssize_t offsets[SLOTS];
    int slots = chained_slots(type, offsets);
    if (slots <= 0) {
        *failed = slots < 0;
        return NULL;
    }
    PyObject *key = PyObject_GetAttr(self->algorithm, str_key);
    if (key == NULL || !PyBytes_CheckExact(key)) {
        Py_XDECREF(key);
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception))
            *failed = 1;
        else
            PyErr_Clear();
        return NULL;
    }
    PyObject *chain = Py_NewRef(Py_None);
    if (!ecb) {
        PyObject *given = PyObject_GetAttr(self->mode, ctr ? str_nonce : str_initialization_vector);
        Py_SETREF(chain, given == NULL ? NULL : chain_bytes(given));
        Py_XDECREF(given);
        if (chain == NULL) {
            Py_DECREF(key);
            if (!PyErr_ExceptionMatches(PyExc_Exception))
                *failed = 1;
            else
                PyErr_Clear(); /* the slow path says why */
            return NULL;
        }
    }
    Py_INCREF(lane); /* held across the Python below */
    PyObject *out = NULL, *route = NULL, *engine = NULL, *op = NULL, *sw = NULL;
    PyObject *empty = PyBytes_FromStringAndSize(NULL, 0);
    if (empty == NULL || fold_if_due(core) < 0)
        goto fail;
    out = type->tp_alloc(type, 0);
    if (out == NULL)
        goto fail;
    ChainedCore *context = (ChainedCore *)out;
    put_slot(out, offsets[S_ALG], self->alg);
    put_slot(out, offsets[S_MODE], self->mode_name);
    put_slot(out, offsets[S_KEY], key);
    context->block = 16;
    context->has_block = 1;
    context->lane_is_core = (char)set_lane(&context->lane, lane);
    put_slot(out, offsets[S_ENCRYPT], encrypt ? Py_True : Py_False);
    put_slot(out, offsets[S_KIND], encrypt ? str_encrypt : str_decrypt);
    context->whole_blocks = Py_NewRef(ctr ? Py_False : Py_True);
    PyObject *slack = PyLong_FromLong(ctr ? 0 : 15);
    if (slack == NULL)
        goto fail;
    put_slot(out, offsets[S_SLACK], slack);
    Py_DECREF(slack);
    put_slot(out, offsets[S_CHAIN], chain);
    put_slot(out, offsets[S_HELD], empty);
    context->done = 0;
    put_slot(out, offsets[S_SPENT], Py_False);
    put_slot(out, offsets[S_ALGORITHM], self->algorithm);
    context->cbc_encrypt = Py_NewRef(cbc && encrypt ? Py_True : Py_False);
    context->sw = Py_NewRef(Py_None);
    context->sw_route = Py_NewRef(Py_None);
    put_slot(out, offsets[S_FAILED], Py_None);
    put_slot(out, offsets[S_UNKEPT], Py_None);
    /* _enter_held(route): the session its engine keeps for this stream */
    route = Py_NewRef(core->engine_route);
    engine = PyObject_GetAttr(route, str_engine);
    if (engine == NULL)
        goto fail;
    PyObject *fields[6] = {self->alg, encrypt ? str_encrypt : str_decrypt, key, chain, Py_None,
                           Py_None};
    op = new_op(PyTuple_GET_ITEM(spec, C_OP), fields, 6);
    if (op == NULL)
        goto fail;
    PyObject *call[2] = {engine, op};
    sw = PyObject_VectorcallMethod(str_session, call, 2, NULL);
    if (sw == NULL && PyErr_ExceptionMatches(PyExc_Exception)) {
        /* context._no_session(route, exc): the engine keeps none; logged there */
        PyObject *exc = raised_exception();
        PyObject *said[3] = {out, route, exc};
        PyObject *done = PyObject_VectorcallMethod(str_no_session, said, 3, NULL);
        Py_XDECREF(exc);
        if (done == NULL)
            goto fail;
        Py_DECREF(done);
        goto done;
    }
    if (sw == NULL)
        goto fail;
    if (sw == Py_None)
        put_slot(out, offsets[S_UNKEPT], route);
    else {
        if (set_bound(&context->sw, context->calls, chain_call_names, CHAIN_CALLS, sw) < 0)
            goto fail;
        Py_SETREF(context->sw_route, Py_NewRef(route));
        put_slot(out, offsets[S_SW_BASE], chain);
        context->sw_total = 0;
        context->has_sw_total = 1;
        /* CBC decryption's input tail starts with its chaining value; CBC encryption's output
         * tail is its chaining value (ECB's: nothing) */
        Py_XSETREF(context->sw_in, Py_NewRef(cbc && !encrypt ? chain : empty));
        Py_XSETREF(context->sw_out, Py_NewRef(ecb ? empty : chain));
        context->out_inline = 0;
    }
    goto done;
fail:
    Py_CLEAR(out);
    if (PyErr_ExceptionMatches(PyExc_Exception))
        PyErr_Clear(); /* __init__ makes it, and says why */
    else
        *failed = 1;
done:
    Py_XDECREF(sw);
    Py_XDECREF(op);
    Py_XDECREF(engine);
    Py_XDECREF(route);
    Py_XDECREF(empty);
    Py_DECREF(chain);
    Py_DECREF(key);
    Py_DECREF(lane);
    return out;
}

/* An int attribute of obj as a Py_ssize_t: 0, or -1 when it is missing, not an int or out of
 * range (no error left set unless it is not an Exception: then *failed = 1). */
static int
ssize_attr(PyObject *obj, PyObject *name, Py_ssize_t *out, int *failed)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value != NULL && PyLong_CheckExact(value)) {
        *out = PyLong_AsSsize_t(value);
        Py_DECREF(value);
        if (!(*out == -1 && PyErr_Occurred()))
            return 0;
    }
    else
        Py_XDECREF(value);
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception))
        *failed = 1;
    else
        PyErr_Clear();
    return -1;
}

/* The engine route's engine, name, high and floor (new references into out[]): read from its
 * __slots__ where its type keeps them there (the offsets cached for that type), else with
 * getattr. -1 when one is missing (no error left set unless it is not an Exception: then
 * *failed = 1). */
static int
route_fields(PyObject *route, PyObject *out[4], int *failed)
{
    static PyTypeObject *seen_type = NULL;
    static unsigned int seen_version = 0;
    static int seen_ok = 0;
    static Py_ssize_t seen[4];
    PyObject *const names[4] = {str_engine, str_name, str_high, str_floor};
    PyTypeObject *type = Py_TYPE(route);
    int ok = 1;
    Py_ssize_t offsets[4];
    if (seen_type == type && seen_version == type->tp_version_tag && version_valid(type)) {
        ok = seen_ok;
        memcpy(offsets, seen, sizeof(seen));
    }
    else {
        for (int i = 0; i < 4 && ok; i++)
            ok = object_slot(type, names[i], &offsets[i]);
        if (version_valid(type)) {
            seen_type = type;
            seen_version = type->tp_version_tag;
            seen_ok = ok;
            memcpy(seen, offsets, sizeof(seen));
        }
    }
    for (int i = 0; i < 4; i++) {
        PyObject *value = ok ? *(PyObject **)((char *)route + offsets[i]) : NULL;
        out[i] = value != NULL ? Py_NewRef(value) : PyObject_GetAttr(route, names[i]);
        if (out[i] == NULL) {
            for (int j = 0; j < i; j++)
                Py_CLEAR(out[j]);
            if (!PyErr_ExceptionMatches(PyExc_Exception))
                *failed = 1;
            else
                PyErr_Clear();
            return -1;
        }
    }
    return 0;
}

/* cipher_context's third way, for GCM: the stream opened by the engine route's engine and the
 * EngineGcm context made here, with the state its __init__ sets (see PureCipherCore). NULL
 * with no error: the slow path makes it (nothing was asked of the engine); NULL with an error
 * (*failed = 1): raise it. */
static PyObject *
routed_gcm_context(CipherCore *self, PyObject *spec, int encrypt, int *failed)
{
    LaneCore *core = routed_lane(self, spec, failed);
    if (core == NULL)
        return NULL;
    PyObject *lane = Py_NewRef((PyObject *)core), *route = Py_NewRef(core->engine_route);
    PyObject *out = NULL, *engine = NULL, *opener = NULL, *key = NULL, *iv = NULL;
    PyObject *name = NULL, *high = NULL, *mode_tag = NULL, *op = NULL, *stream = NULL;
    PyObject *empty = NULL, *sixteen = NULL, *kept = NULL, *fallback = NULL, *floor_value = NULL;
    Py_ssize_t floor, min_tag, data_left, aad_left;
    /* Everything read before the engine is asked: after that, no way back to the slow path. */
    PyObject *fields_of_route[4];
    if (route_fields(route, fields_of_route, failed) < 0)
        goto done;
    engine = fields_of_route[0];
    name = fields_of_route[1];
    high = fields_of_route[2];
    floor_value = fields_of_route[3];
    if (!PyLong_CheckExact(floor_value))
        goto done;
    floor = PyLong_AsSsize_t(floor_value);
    if (floor == -1 && PyErr_Occurred())
        goto slow;
    if ((opener = PyObject_GetAttr(engine, str_open_aead_stream)) == NULL
        || (key = PyObject_GetAttr(self->algorithm, str_key)) == NULL
        || (iv = PyObject_GetAttr(self->mode, str_initialization_vector)) == NULL
        || (mode_tag = encrypt ? Py_NewRef(Py_None) : PyObject_GetAttr(self->mode, str_tag))
               == NULL)
        goto slow;
    if (ssize_attr(self->mode, str_min_tag_length, &min_tag, failed) < 0
        || ssize_attr(self->mode, str_max_encrypted_bytes, &data_left, failed) < 0
        || ssize_attr(self->mode, str_max_aad_bytes, &aad_left, failed) < 0)
        goto done;
    if (floor > 0 || !PyBytes_CheckExact(key) || !PyBytes_CheckExact(iv))
        goto done;
    if (fold_if_due(core) < 0 || (empty = PyBytes_FromStringAndSize(NULL, 0)) == NULL
        || (sixteen = PyLong_FromLong(16)) == NULL)
        goto slow;
    PyObject *fields[7] = {self->alg, encrypt ? str_encrypt : str_decrypt, key, iv, empty, empty,
                           sixteen};
    if ((op = new_op(PyTuple_GET_ITEM(spec, C_AEAD_OP), fields, 7)) == NULL)
        goto slow;
    /* The engine is asked: from here its answer is the context's, whatever it is. */
    stream = PyObject_Vectorcall(opener, &op, 1, NULL);
    if (stream == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            *failed = 1;
            goto done;
        }
        /* gcm_open_failed(cipher, lane, encrypt, op, exc) */
        PyObject *exc = raised_exception();
        PyObject *args[5] = {(PyObject *)self, lane, encrypt ? Py_True : Py_False, op, exc};
        out = PyObject_Vectorcall(PyTuple_GET_ITEM(spec, C_GCM_OPEN_FAILED), args, 5, NULL);
        Py_DECREF(exc);
        *failed = out == NULL;
        goto done;
    }
    PyTypeObject *type =
        (PyTypeObject *)PyTuple_GET_ITEM(spec, encrypt ? C_ENGINE_GCM_ENC : C_ENGINE_GCM_DEC);
    if ((kept = PyList_New(0)) == NULL || (fallback = PyDict_New()) == NULL
        || (out = type->tp_alloc(type, 0)) == NULL) {
        *failed = 1; /* the stream is abandoned with the error */
        goto done;
    }
    EngineGcmCore *context = (EngineGcmCore *)out;
    context->cipher = Py_NewRef((PyObject *)self);
    context->lane = Py_NewRef(lane);
    context->lane_is_core = 1;
    context->name = Py_NewRef(name);
    context->stream = Py_NewRef(stream);
    context->route = Py_NewRef(route);
    context->high = Py_NewRef(high);
    context->encrypt = (char)encrypt;
    context->mode_tag = Py_NewRef(mode_tag);
    context->min_tag = min_tag;
    context->data_left = data_left;
    context->aad_left = aad_left;
    context->kept = Py_NewRef(kept);
    context->kept_size = 0;
    context->total = 0;
    context->updated = 0;
    context->done = 0;
    context->tag = Py_NewRef(Py_None);
    context->sw = Py_NewRef(Py_None);
    context->fallback = Py_NewRef(fallback);
    context->failed = 0;
    goto done;
slow:
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception))
        *failed = 1;
    else
        PyErr_Clear(); /* the slow path makes it, and says why */
done:
    Py_XDECREF(fallback);
    Py_XDECREF(kept);
    Py_XDECREF(stream);
    Py_XDECREF(op);
    Py_XDECREF(sixteen);
    Py_XDECREF(empty);
    Py_XDECREF(mode_tag);
    Py_XDECREF(iv);
    Py_XDECREF(key);
    Py_XDECREF(high);
    Py_XDECREF(name);
    Py_XDECREF(opener);
    Py_XDECREF(engine);
    Py_XDECREF(floor_value);
    Py_DECREF(route);
    Py_DECREF(lane);
    return out;
}

/* A context on the direct path for encryption (encrypt) or decryption, or NULL with no error
 * when the slow path must make it, or NULL with an error set (*failed = 1): software's
 * OpenSSL context on a lane no engine claims, else a chained context on the engine route. */
static PyObject *
cipher_context(CipherCore *self, int encrypt, int *failed)
{
    char kind = self->kind;
    if (kind == K_NONE || (kind == K_GCM_TAG && encrypt) || self->alg == NULL)
        return NULL;
    PyObject *spec = cipher_spec(Py_TYPE(self));
    if (spec == NULL)
        return NULL;
    PyObject *out = software_context(self, spec, kind, encrypt, failed);
    if (out == NULL && !*failed)
        out = kind == K_STREAM ? routed_context(self, spec, encrypt, failed)
                               : routed_gcm_context(self, spec, encrypt, failed);
    return out;
}

/* software_context: cipher_context's first way, OpenSSL's context made here. */
static PyObject *
software_context(CipherCore *self, PyObject *spec, char kind, int encrypt, int *failed)
{
    LaneCore *core = spec_lane(spec, C_LANES, self->alg, failed);
    if (core == NULL)
        return NULL;
    PyObject *lane = (PyObject *)core;
    if (core->direct_below != -1 || core->direct_above != -1)
        return NULL;
    PyObject *provider = in_force(self->provider, failed);
    if (provider == NULL || provider != core->provider)
        return NULL;
    Py_INCREF(lane);
    if (fold_if_due(core) < 0) {
        Py_DECREF(lane);
        *failed = 1;
        return NULL;
    }
    PyObject *stack[2] = {self->algorithm, self->mode};
    PyObject *ctx = PyObject_Vectorcall(
        PyTuple_GET_ITEM(spec, encrypt ? C_MAKE_ENC : C_MAKE_DEC), stack, 2, NULL);
    if (ctx == NULL) {
        Py_DECREF(lane);
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            *failed = 1;
            return NULL;
        }
        PyErr_Clear(); /* the slow path says why */
        return NULL;
    }
    PyObject *out;
    if (kind == K_STREAM) {
        PyTypeObject *type = (PyTypeObject *)PyTuple_GET_ITEM(spec, C_STREAM);
        DirectStreamCore *stream = (DirectStreamCore *)type->tp_alloc(type, 0);
        if (stream != NULL) {
            stream->ctx = ctx;
            stream->lane = lane;
            stream->lane_is_core = 1;
        }
        out = (PyObject *)stream;
    }
    else {
        PyTypeObject *type =
            (PyTypeObject *)PyTuple_GET_ITEM(spec, encrypt ? C_GCM_ENC : C_GCM_DEC);
        AeadStreamCore *stream = (AeadStreamCore *)type->tp_alloc(type, 0);
        if (stream != NULL) {
            stream->ctx = ctx;
            stream->lane = lane;
            stream->lane_is_core = 1;
            stream->encrypt = (char)encrypt;
        }
        out = (PyObject *)stream;
    }
    if (out == NULL) {
        Py_DECREF(ctx);
        Py_DECREF(lane);
        *failed = 1;
    }
    return out;
}

static PyObject *
cipher_encryptor(CipherCore *self, PyObject *unused)
{
    int failed = 0;
    PyObject *out = cipher_context(self, 1, &failed);
    if (out != NULL || failed)
        return out;
    return PyObject_CallMethodOneArg((PyObject *)self, str_slow_context, Py_True);
}

static PyObject *
cipher_decryptor(CipherCore *self, PyObject *unused)
{
    int failed = 0;
    PyObject *out = cipher_context(self, 0, &failed);
    if (out != NULL || failed)
        return out;
    return PyObject_CallMethodOneArg((PyObject *)self, str_slow_context, Py_False);
}

static PyMethodDef cipher_methods[] = {
    {"encryptor", (PyCFunction)cipher_encryptor, METH_NOARGS,
     PyDoc_STR("encryptor() -> a context that encrypts what is passed to update")},
    {"decryptor", (PyCFunction)cipher_decryptor, METH_NOARGS,
     PyDoc_STR("decryptor() -> a context that decrypts what is passed to update")},
    {NULL},
};

static PyTypeObject CipherCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.CipherCore",
    .tp_doc = PyDoc_STR("Cipher's construction and contexts on a lane no engine claims "
                        "(compiled)."),
    .tp_basicsize = sizeof(CipherCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)cipher_init,
    .tp_dealloc = (destructor)cipher_dealloc,
    .tp_traverse = (traverseproc)cipher_traverse,
    .tp_clear = (inquiry)cipher_clear,
    .tp_methods = cipher_methods,
    .tp_members = cipher_members,
};

/* -- CcmCheck: cryptography's AESCCM behind the checks OpenSSL does not make ------------ */

/* cryptoffload.directpath.PureCcmCheck is its twin and documents the contract. */

typedef struct {
    PyObject_HEAD
    PyObject *owner; /* the AESCCM whose _explain says what is wrong */
    PyObject *ccm;   /* cryptography's AESCCM */
    Py_ssize_t tag_length;
} CcmCheck;

static int
ccm_traverse(CcmCheck *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->ccm);
    return 0;
}

static int
ccm_clear(CcmCheck *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->ccm);
    return 0;
}

static void
ccm_dealloc(CcmCheck *self)
{
    PyObject_GC_UnTrack(self);
    ccm_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
ccm_init(CcmCheck *self, PyObject *args, PyObject *kwds)
{
    PyObject *owner, *ccm;
    Py_ssize_t tag_length;
    static char *names[] = {"owner", "ccm", "tag_length", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOn:CcmCheck", names, &owner, &ccm,
                                     &tag_length))
        return -1;
    Py_INCREF(owner);
    Py_XSETREF(self->owner, owner);
    Py_INCREF(ccm);
    Py_XSETREF(self->ccm, ccm);
    self->tag_length = tag_length;
    return 0;
}

/* Whether OpenSSL takes (nonce, data, aad) as they are: bytes, a nonce of 7 to 13 bytes whose
 * length field counts the payload (data less `tag` bytes), lengths within AEAD_MAX. */
static int
ccm_taken(PyObject *const *args, Py_ssize_t tag)
{
    PyObject *nonce = args[0], *data = args[1], *aad = args[2];
    if (!PyBytes_CheckExact(nonce) || !PyBytes_CheckExact(data)
        || (aad != Py_None && !PyBytes_CheckExact(aad)))
        return 0;
    Py_ssize_t n = PyBytes_GET_SIZE(nonce), size = PyBytes_GET_SIZE(data);
    Py_ssize_t payload = size - tag;
    if (n < 7 || n > 13 || size > 0x7fffffff || payload < 0
        || (aad != Py_None && PyBytes_GET_SIZE(aad) > 0x7fffffff))
        return 0;
    Py_ssize_t length_bytes = 15 - n; /* 2 to 8: below 8, the payload must fit them */
    return length_bytes >= 8 || payload < ((Py_ssize_t)1 << (8 * length_bytes));
}

static PyObject *
ccm_run(CcmCheck *self, PyObject *name, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames, int decrypting)
{
    if (kwnames != NULL || nargs < 3 || nargs > 4) {
        PyErr_Format(PyExc_TypeError, "%U takes (nonce, data, associated_data%s)", name,
                     nargs == 4 ? ", buf" : "");
        return NULL;
    }
    Py_ssize_t tag = decrypting ? self->tag_length : 0;
    if (!ccm_taken(args, tag)) {
        /* Our named checks say what is wrong (or find nothing: OpenSSL's call then). */
        PyObject *given = PyLong_FromSsize_t(tag);
        if (given == NULL)
            return NULL;
        PyObject *stack[6] = {NULL, self->owner, args[0], args[1], args[2], given};
        PyObject *done = PyObject_VectorcallMethod(
            str_explain, stack + 1, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(given);
        if (done == NULL)
            return NULL;
        Py_DECREF(done);
    }
    PyObject *ccm = Py_NewRef(self->ccm);
    PyObject *stack[6] = {NULL, ccm, args[0], args[1], args[2], nargs == 4 ? args[3] : NULL};
    PyObject *out = PyObject_VectorcallMethod(name, stack + 1,
                                              (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(ccm);
    return out;
}

static PyObject *
ccm_encrypt(CcmCheck *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return ccm_run(self, str_encrypt, args, nargs, kwnames, 0);
}

static PyObject *
ccm_decrypt(CcmCheck *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return ccm_run(self, str_decrypt, args, nargs, kwnames, 1);
}

static PyObject *
ccm_encrypt_into(CcmCheck *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return ccm_run(self, str_encrypt_into, args, nargs, kwnames, 0);
}

static PyObject *
ccm_decrypt_into(CcmCheck *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return ccm_run(self, str_decrypt_into, args, nargs, kwnames, 1);
}

static PyMethodDef ccm_methods[] = {
    {"encrypt", (PyCFunction)(void (*)(void))ccm_encrypt, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("encrypt(nonce, data, associated_data): checked, then cryptography's")},
    {"decrypt", (PyCFunction)(void (*)(void))ccm_decrypt, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("decrypt(nonce, data, associated_data): checked, then cryptography's")},
    {"encrypt_into", (PyCFunction)(void (*)(void))ccm_encrypt_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("encrypt_into(nonce, data, associated_data, buf): checked, then cryptography's")},
    {"decrypt_into", (PyCFunction)(void (*)(void))ccm_decrypt_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("decrypt_into(nonce, data, associated_data, buf): checked, then cryptography's")},
    {NULL},
};

static PyTypeObject CcmCheckType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.CcmCheck",
    .tp_doc = PyDoc_STR("CcmCheck(owner, ccm, tag_length): cryptography's AESCCM behind the "
                        "checks OpenSSL does not make (compiled)."),
    .tp_basicsize = sizeof(CcmCheck),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ccm_init,
    .tp_dealloc = (destructor)ccm_dealloc,
    .tp_traverse = (traverseproc)ccm_traverse,
    .tp_clear = (inquiry)ccm_clear,
    .tp_methods = ccm_methods,
};

/* -- KeyedCopies: contexts copied from one kept per key ----------------------------------- */

/* cryptoffload.directpath.PureKeyedCopies is its twin and documents the contract. */

typedef struct {
    PyObject_HEAD
    PyObject *make; /* makes a context from an algorithm: cryptography's cmac.CMAC */
    PyObject *kept; /* dict: key (bytes) -> (the algorithm's class, the kept context's copy) */
    Py_ssize_t limit;
    vectorcallfunc vectorcall;
} KeyedCopies;

static int
kc_traverse(KeyedCopies *self, visitproc visit, void *arg)
{
    Py_VISIT(self->make);
    Py_VISIT(self->kept);
    return 0;
}

static int
kc_clear(KeyedCopies *self)
{
    Py_CLEAR(self->make);
    Py_CLEAR(self->kept);
    return 0;
}

static void
kc_dealloc(KeyedCopies *self)
{
    PyObject_GC_UnTrack(self);
    kc_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *kc_call(PyObject *self, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames);

static int
kc_init(KeyedCopies *self, PyObject *args, PyObject *kwds)
{
    PyObject *make;
    Py_ssize_t limit;
    static char *names[] = {"make", "limit", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "On:KeyedCopies", names, &make, &limit))
        return -1;
    if (limit < 1) {
        PyErr_Format(PyExc_ValueError, "limit must be at least 1, got %zd", limit);
        return -1;
    }
    PyObject *kept = PyDict_New();
    if (kept == NULL)
        return -1;
    Py_XSETREF(self->kept, kept);
    Py_INCREF(make);
    Py_XSETREF(self->make, make);
    self->limit = limit;
    self->vectorcall = kc_call;
    return 0;
}

/* A context from `make` under a new key (or class): kept unfed, and a copy of it given. */
static PyObject *
kc_keep(KeyedCopies *self, PyObject *algorithm, PyObject *key)
{
    PyObject *template = PyObject_CallOneArg(self->make, algorithm);
    if (template == NULL)
        return NULL;
    PyObject *copy = PyObject_GetAttr(template, str_copy);
    Py_DECREF(template);
    if (copy == NULL)
        return NULL;
    PyObject *entry = PyTuple_Pack(2, (PyObject *)Py_TYPE(algorithm), copy);
    if (entry == NULL) {
        Py_DECREF(copy);
        return NULL;
    }
    if (PyDict_GET_SIZE(self->kept) >= self->limit)
        PyDict_Clear(self->kept);
    int failed = PyDict_SetItem(self->kept, key, entry);
    Py_DECREF(entry);
    PyObject *out = failed < 0 ? NULL : PyObject_CallNoArgs(copy);
    Py_DECREF(copy);
    return out;
}

static PyObject *
kc_call(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    KeyedCopies *self = (KeyedCopies *)self_;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "KeyedCopies takes one argument, the algorithm");
        return NULL;
    }
    if (self->kept == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "KeyedCopies was not initialized");
        return NULL;
    }
    PyObject *algorithm = args[0];
    PyObject *key = PyObject_GetAttr(algorithm, str_key);
    if (key == NULL)
        return NULL;
    if (!PyBytes_CheckExact(key)) {
        Py_DECREF(key);
        return PyObject_CallOneArg(self->make, algorithm);
    }
    PyObject *entry = PyDict_GetItemWithError(self->kept, key); /* borrowed */
    if (entry == NULL && PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    if (entry != NULL && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 2
        && PyTuple_GET_ITEM(entry, 0) == (PyObject *)Py_TYPE(algorithm)) {
        PyObject *copy = Py_NewRef(PyTuple_GET_ITEM(entry, 1));
        Py_DECREF(key);
        PyObject *out = PyObject_CallNoArgs(copy);
        Py_DECREF(copy);
        return out;
    }
    PyObject *out = kc_keep(self, algorithm, key);
    Py_DECREF(key);
    return out;
}

static PyObject *
kc_clear_method(KeyedCopies *self, PyObject *unused)
{
    if (self->kept != NULL)
        PyDict_Clear(self->kept);
    Py_RETURN_NONE;
}

static PyObject *
kc_repr(KeyedCopies *self)
{
    PyObject *name = self->make == NULL ? NULL : PyObject_GetAttrString(self->make, "__qualname__");
    if (name == NULL) {
        PyErr_Clear();
        return PyUnicode_FromString("<KeyedCopies>");
    }
    PyObject *out = PyUnicode_FromFormat("<KeyedCopies of %R>", name);
    Py_DECREF(name);
    return out;
}

static PyMethodDef kc_methods[] = {
    {"clear", (PyCFunction)kc_clear_method, METH_NOARGS,
     PyDoc_STR("clear(): forget every context (and so every key) kept")},
    {NULL},
};

static PyMemberDef kc_members[] = {
    {"_kept", T_OBJECT_EX, offsetof(KeyedCopies, kept), READONLY,
     PyDoc_STR("key -> (the algorithm's class, the kept context's copy)")},
    {NULL},
};

static PyTypeObject KeyedCopiesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.KeyedCopies",
    .tp_doc = PyDoc_STR("KeyedCopies(make, limit): make(algorithm)'s contexts, each a copy "
                        "of one kept per key (compiled)."),
    .tp_basicsize = sizeof(KeyedCopies),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(KeyedCopies, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)kc_init,
    .tp_dealloc = (destructor)kc_dealloc,
    .tp_traverse = (traverseproc)kc_traverse,
    .tp_clear = (inquiry)kc_clear,
    .tp_methods = kc_methods,
    .tp_members = kc_members,
    .tp_repr = (reprfunc)kc_repr,
};

/* -- HkdfCore: HKDF on a lane no engine claims ----------------------------------------- */

/* cryptoffload.directpath.PureHkdfCore is its twin and documents the contract. The subclass
 * names in `_direct_path` (lanes, maker): `lanes` maps a hash's class to (software-only lane of its
 * HMAC, digest size, python_hmac): python_hmac is None or (_hashlib.hmac_new, the hash's name);
 * `maker` is cryptography's HKDF. */

typedef struct {
    PyObject_HEAD
    PyObject *algorithm; /* _algorithm */
    PyObject *salt;      /* _salt */
    PyObject *info;      /* _info */
    PyObject *provider;  /* _provider */
    PyObject *lane;      /* set by the direct construction only: the HMAC's lane */
    PyObject *maker;
    PyObject *hmac;      /* (hmac_new, name): the HMACs made here, or NULL: the maker's */
    Py_ssize_t length;   /* _length */
    Py_ssize_t digest_size;
    char used;           /* _used */
} HkdfCore;

static int
hkdf_traverse(HkdfCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->algorithm);
    Py_VISIT(self->salt);
    Py_VISIT(self->info);
    Py_VISIT(self->provider);
    Py_VISIT(self->lane);
    Py_VISIT(self->maker);
    Py_VISIT(self->hmac);
    return 0;
}

static int
hkdf_clear(HkdfCore *self)
{
    Py_CLEAR(self->algorithm);
    Py_CLEAR(self->salt);
    Py_CLEAR(self->info);
    Py_CLEAR(self->provider);
    Py_CLEAR(self->lane);
    Py_CLEAR(self->maker);
    Py_CLEAR(self->hmac);
    return 0;
}

static void
hkdf_dealloc(HkdfCore *self)
{
    PyObject_GC_UnTrack(self);
    hkdf_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef hkdf_members[] = {
    {"_algorithm", T_OBJECT_EX, offsetof(HkdfCore, algorithm), 0, NULL},
    {"_salt", T_OBJECT, offsetof(HkdfCore, salt), 0, NULL},
    {"_info", T_OBJECT, offsetof(HkdfCore, info), 0, NULL},
    {"_provider", T_OBJECT, offsetof(HkdfCore, provider), 0, NULL},
    {"_length", T_PYSSIZET, offsetof(HkdfCore, length), 0, NULL},
    {"_used", T_BOOL, offsetof(HkdfCore, used), 0, NULL},
    {NULL},
};

/* HKDF's parameters by position: algorithm, length, salt, info, backend. */
enum { H_ALGORITHM, H_LENGTH, H_SALT, H_INFO, H_BACKEND, H_PARAMS };
static PyObject **const hkdf_names[H_PARAMS] = {&str_algorithm, &str_length, &str_salt,
                                                &str_info, &str_backend};

/* Places a keyword argument among HKDF's parameters: 1, or 0 for one the direct path does not
 * take (provider=, an unknown name, one given twice). */
static int
hkdf_keyword(PyObject *name, PyObject *value, PyObject *slots[H_PARAMS])
{
    for (int i = 0; i < H_PARAMS; i++)
        if (keyword_is(name, *hkdf_names[i])) {
            if (slots[i] != NULL)
                return 0;
            slots[i] = value;
            return 1;
        }
    return 0;
}

/* The direct construction from HKDF's parameters (NULL: not given): an algorithm of a hash
 * class `lanes` knows, an int length from 0 to 255 digest sizes, salt and info bytes or None.
 * 1 when taken, 0 for the slow path, -1 with an error set. */
static int
hkdf_make(HkdfCore *self, PyObject *slots[H_PARAMS])
{
    PyObject *spec = _PyType_Lookup(Py_TYPE(self), str_direct);
    if (spec == NULL || !PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 2
        || !PyDict_CheckExact(PyTuple_GET_ITEM(spec, 0)))
        return 0;
    PyObject *algorithm = slots[H_ALGORITHM], *length = slots[H_LENGTH];
    PyObject *salt = slots[H_SALT] ? slots[H_SALT] : Py_None;
    PyObject *info = slots[H_INFO] ? slots[H_INFO] : Py_None;
    if (algorithm == NULL || length == NULL || !PyLong_CheckExact(length)
        || (salt != Py_None && !PyBytes_CheckExact(salt))
        || (info != Py_None && !PyBytes_CheckExact(info)))
        return 0;
    PyObject *entry = PyDict_GetItemWithError(PyTuple_GET_ITEM(spec, 0),
                                              (PyObject *)Py_TYPE(algorithm));
    if (entry == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3
        || !PyObject_TypeCheck(PyTuple_GET_ITEM(entry, 0), &LaneCoreType)
        || !PyLong_CheckExact(PyTuple_GET_ITEM(entry, 1)))
        return 0;
    LaneCore *core = (LaneCore *)PyTuple_GET_ITEM(entry, 0);
    if (core->direct_below != -1 || core->direct_above != -1)
        return 0;
    int failed = 0;
    PyObject *provider = in_force(NULL, &failed);
    if (failed)
        return -1;
    if (provider == NULL || provider != core->provider)
        return 0;
    Py_ssize_t n = PyLong_AsSsize_t(length);
    Py_ssize_t digest_size = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
    if ((n == -1 || digest_size == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (n < 0 || digest_size <= 0 || n > 255 * digest_size)
        return 0;
    Py_INCREF(algorithm);
    Py_XSETREF(self->algorithm, algorithm);
    Py_INCREF(salt);
    Py_XSETREF(self->salt, salt);
    Py_INCREF(info);
    Py_XSETREF(self->info, info);
    Py_XSETREF(self->provider, Py_NewRef(Py_None));
    Py_INCREF(core);
    Py_XSETREF(self->lane, (PyObject *)core);
    Py_INCREF(PyTuple_GET_ITEM(spec, 1));
    Py_XSETREF(self->maker, PyTuple_GET_ITEM(spec, 1));
    self->length = n;
    self->digest_size = digest_size;
    self->used = 0;
    PyObject *hmac = PyTuple_GET_ITEM(entry, 2);
    if (n > 0 && PyTuple_CheckExact(hmac) && PyTuple_GET_SIZE(hmac) == 2
        && PyUnicode_CheckExact(PyTuple_GET_ITEM(hmac, 1)))
        Py_XSETREF(self->hmac, Py_NewRef(hmac));
    else
        Py_CLEAR(self->hmac);
    return 1;
}

/* HMAC(key, message) by Python's HMAC: hmac_new(key, message, name).digest(), which must be
 * `size` bytes. */
static PyObject *
hkdf_hmac(PyObject *hmac_new, PyObject *name, PyObject *key, PyObject *message, Py_ssize_t size)
{
    PyObject *args[3] = {key, message, name};
    PyObject *mac = PyObject_Vectorcall(hmac_new, args, 3, NULL);
    if (mac == NULL)
        return NULL;
    PyObject *out = PyObject_CallMethodNoArgs(mac, str_digest);
    Py_DECREF(mac);
    if (out != NULL && (!PyBytes_CheckExact(out) || PyBytes_GET_SIZE(out) != size)) {
        PyErr_Format(PyExc_RuntimeError, "HMAC gave %R, not %zd bytes", Py_TYPE(out), size);
        Py_CLEAR(out);
    }
    return out;
}

/* HKDF (RFC 5869) on Python's HMAC: the extract HMAC(salt, key material) (no salt: the all-zero
 * key, the same key to HMAC as b""), then the expand, block i = HMAC(prk, T(i-1) | info | i). */
static PyObject *
hkdf_python(HkdfCore *self, PyObject *key_material)
{
    PyObject *hmac_new = PyTuple_GET_ITEM(self->hmac, 0);
    PyObject *name = PyTuple_GET_ITEM(self->hmac, 1);
    Py_ssize_t size = self->digest_size, length = self->length;
    if ((self->info != Py_None && !PyBytes_CheckExact(self->info))
        || (self->salt != Py_None && !PyBytes_CheckExact(self->salt))) {
        PyErr_SetString(PyExc_TypeError, "salt and info must be bytes or None");
        return NULL;
    }
    Py_ssize_t info = self->info == Py_None ? 0 : PyBytes_GET_SIZE(self->info);
    PyObject *salt = self->salt == Py_None ? PyBytes_FromStringAndSize(NULL, 0)
                                           : Py_NewRef(self->salt);
    if (salt == NULL)
        return NULL;
    PyObject *prk = hkdf_hmac(hmac_new, name, salt, key_material, size);
    Py_DECREF(salt);
    if (prk == NULL)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, length);
    PyObject *previous = NULL;
    for (Py_ssize_t i = 1, at = 0; out != NULL && at < length; i++, at += size) {
        Py_ssize_t carried = previous == NULL ? 0 : size;
        PyObject *message = PyBytes_FromStringAndSize(NULL, carried + info + 1);
        if (message == NULL) {
            Py_CLEAR(out);
            break;
        }
        char *m = PyBytes_AS_STRING(message);
        if (carried)
            memcpy(m, PyBytes_AS_STRING(previous), carried);
        if (info)
            memcpy(m + carried, PyBytes_AS_STRING(self->info), info);
        m[carried + info] = (char)i;
        PyObject *block = hkdf_hmac(hmac_new, name, prk, message, size);
        Py_DECREF(message);
        if (block == NULL) {
            Py_CLEAR(out);
            break;
        }
        memcpy(PyBytes_AS_STRING(out) + at, PyBytes_AS_STRING(block),
               length - at < size ? length - at : size);
        Py_XSETREF(previous, block);
    }
    Py_XDECREF(previous);
    Py_DECREF(prk);
    return out;
}

static int
hkdf_init(HkdfCore *self, PyObject *args, PyObject *kwds)
{
    PyObject *slots[H_PARAMS] = {NULL};
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    int direct = nargs <= H_PARAMS;
    for (Py_ssize_t i = 0; direct && i < nargs; i++)
        slots[i] = PyTuple_GET_ITEM(args, i);
    if (direct && kwds != NULL && PyDict_GET_SIZE(kwds)) {
        Py_ssize_t pos = 0;
        PyObject *name, *value;
        while (direct && PyDict_Next(kwds, &pos, &name, &value))
            direct = hkdf_keyword(name, value, slots);
    }
    int made = direct ? hkdf_make(self, slots) : 0;
    if (made != 0)
        return made < 0 ? -1 : 0;
    Py_CLEAR(self->lane);
    PyObject *init = PyObject_GetAttr((PyObject *)self, str_slow_init);
    if (init == NULL)
        return -1;
    PyObject *done = PyObject_Call(init, args, kwds);
    Py_DECREF(init);
    if (done == NULL)
        return -1;
    Py_DECREF(done);
    return 0;
}

/* cls(*args, **kw) for an HkdfCore class given to direct_construction (see digest_vectorcall). */
static PyObject *
hkdf_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyTypeObject *type = (PyTypeObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (type->tp_new != PyType_GenericNew || type->tp_init != (initproc)hkdf_init)
        return call_as_type(callable, args, nargs, kwnames);
    PyObject *slots[H_PARAMS] = {NULL};
    int direct = nargs <= H_PARAMS;
    for (Py_ssize_t i = 0; direct && i < nargs; i++)
        slots[i] = args[i];
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; direct && i < nkw; i++)
        direct = hkdf_keyword(PyTuple_GET_ITEM(kwnames, i), args[nargs + i], slots);
    HkdfCore *self = (HkdfCore *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    int made = direct ? hkdf_make(self, slots) : 0;
    if (made == 0) {
        PyObject *done = slow(self, str_slow_init, args, nargs, kwnames);
        made = done != NULL ? 1 : -1;
        Py_XDECREF(done);
    }
    if (made < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *
hkdf_derive(HkdfCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs != 1 || kwnames != NULL || !PyBytes_CheckExact(args[0]) || self->lane == NULL
        || self->used || self->maker == NULL)
        return slow(self, str_slow_derive, args, nargs, kwnames);
    self->used = 1;
    PyObject *lane = Py_NewRef(self->lane);
    PyObject *out = NULL;
    if (self->hmac != NULL) {
        out = hkdf_python(self, args[0]);
    }
    else {
        PyObject *stack[4] = {self->algorithm, PyLong_FromSsize_t(self->length), self->salt,
                              self->info};
        PyObject *hkdf = stack[1] == NULL ? NULL : PyObject_Vectorcall(self->maker, stack, 4, NULL);
        Py_XDECREF(stack[1]);
        if (hkdf != NULL) {
            out = PyObject_CallMethodOneArg(hkdf, str_derive, args[0]);
            Py_DECREF(hkdf);
        }
    }
    if (out != NULL) {
        /* The HMAC ops the Python path would count: the extract of the key material, then
         * one per block, T(i) = HMAC(prk, T(i-1) | info | i). */
        Py_ssize_t info = self->info == Py_None ? 0 : PyBytes_GET_SIZE(self->info);
        Py_ssize_t blocks = (self->length + self->digest_size - 1) / self->digest_size;
        LaneCore *core = (LaneCore *)lane;
        int done = lane_tally(core, PyBytes_GET_SIZE(args[0]));
        for (Py_ssize_t i = 0; done == 0 && i < blocks; i++)
            done = lane_tally(core, (i ? self->digest_size : 0) + info + 1);
        if (done < 0)
            Py_CLEAR(out);
    }
    Py_DECREF(lane);
    return out;
}

static PyMethodDef hkdf_methods[] = {
    {"derive", (PyCFunction)(void (*)(void))hkdf_derive, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("derive(key_material) -> the derived key (length bytes), once")},
    {NULL},
};

static PyTypeObject HkdfCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload.core._directpath.HkdfCore",
    .tp_doc = PyDoc_STR("HKDF on a lane no engine claims (compiled)."),
    .tp_basicsize = sizeof(HkdfCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)hkdf_init,
    .tp_dealloc = (destructor)hkdf_dealloc,
    .tp_traverse = (traverseproc)hkdf_traverse,
    .tp_clear = (inquiry)hkdf_clear,
    .tp_methods = hkdf_methods,
    .tp_members = hkdf_members,
};

/* -- module ----------------------------------------------------------------------------- */

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *var, *box, *tag;
    if (!PyArg_ParseTuple(args, "O!O!O:configure", &PyContextVar_Type, &var, &PyList_Type,
                          &box, &tag))
        return NULL;
    if (PyList_GET_SIZE(box) != 1) {
        PyErr_SetString(PyExc_ValueError, "the default box must hold exactly one item");
        return NULL;
    }
    if (!PyType_Check(tag) || !PyType_IsSubtype((PyTypeObject *)tag,
                                                (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "invalid_tag must be an exception class");
        return NULL;
    }
    Py_INCREF(var);
    Py_INCREF(box);
    Py_INCREF(tag);
    Py_XSETREF(current_var, var);
    Py_XSETREF(default_box, box);
    Py_XSETREF(invalid_tag, tag);
    Py_RETURN_NONE;
}

static PyObject *
direct_construction(PyObject *module, PyObject *cls)
{
    PyTypeObject *type = (PyTypeObject *)cls;
    vectorcallfunc call;
    initproc init;
    if (PyType_Check(cls) && PyType_IsSubtype(type, &DigestCoreType)) {
        call = digest_vectorcall;
        init = (initproc)digest_init;
    }
    else if (PyType_Check(cls) && PyType_IsSubtype(type, &HkdfCoreType)) {
        call = hkdf_vectorcall;
        init = (initproc)hkdf_init;
    }
    else {
        PyErr_SetString(PyExc_TypeError,
                        "direct_construction takes a subclass of DigestCore or HkdfCore");
        return NULL;
    }
    /* Only a class that constructs as its core does: no __new__ or __init__ of its own (one
     * given later is seen by the vectorcall, which then calls as type does). */
    if (type->tp_new != PyType_GenericNew || type->tp_init != init)
        Py_RETURN_FALSE;
    type->tp_vectorcall = call;
    Py_RETURN_TRUE;
}

/* own_methods(cls): the compiled methods cls inherits from a core, given again as descriptors
 * of cls itself. The interpreter specializes a call of a method descriptor only for an object
 * of exactly the descriptor's class: a core's own descriptors leave every call of a subclass's
 * objects on the generic path. A method cls (or a class between) defines in Python is left. */
static PyObject *
own_methods(PyObject *module, PyObject *cls)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "own_methods takes a class");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    PyTypeObject *const cores[] = {&AeadCoreType,   &ChainedCoreType,    &DirectStreamCoreType,
                                   &DigestCoreType, &AeadStreamCoreType, &CipherCoreType,
                                   &HkdfCoreType,   &CcmCheckType,       &EngineGcmCoreType};
    int given = 0;
    for (size_t c = 0; c < sizeof(cores) / sizeof(cores[0]); c++) {
        PyTypeObject *core = cores[c];
        if (type == core || !PyType_IsSubtype(type, core))
            continue;
        for (PyMethodDef *def = core->tp_methods; def != NULL && def->ml_name != NULL; def++) {
            PyObject *name = PyUnicode_InternFromString(def->ml_name);
            if (name == NULL)
                return NULL;
            PyObject *found = _PyType_Lookup(type, name); /* borrowed */
            int inherited = found != NULL && Py_IS_TYPE(found, &PyMethodDescr_Type)
                            && ((PyMethodDescrObject *)found)->d_method == def
                            && ((PyMethodDescrObject *)found)->d_common.d_type != type;
            int failed = 0;
            if (inherited) {
                PyObject *descr = PyDescr_NewMethod(type, def);
                failed = descr == NULL || PyObject_SetAttr(cls, name, descr) < 0;
                Py_XDECREF(descr);
                given++;
            }
            Py_DECREF(name);
            if (failed)
                return NULL;
        }
    }
    return PyLong_FromLong(given);
}

static PyObject *
note_using(PyObject *module, PyObject *unused)
{
    using_seen = 1;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"direct_construction", direct_construction, METH_O,
     PyDoc_STR("direct_construction(cls) -> whether cls(...) now constructs through the "
               "direct path's vectorcall (a DigestCore or HkdfCore subclass with no __new__ "
               "or __init__ of its own)")},
    {"own_methods", own_methods, METH_O,
     PyDoc_STR("own_methods(cls) -> how many compiled methods cls inherits from a core were "
               "given again as cls's own descriptors (so that calls of them specialize)")},
    {"note_using", note_using, METH_NOARGS,
     PyDoc_STR("note_using(): a `using` block is about to set the ContextVar (from now on the "
               "direct path looks it up)")},
    {"configure", configure, METH_VARARGS,
     PyDoc_STR("configure(current, default_box, invalid_tag): where the provider in force is "
               "found, and the exception a failed tag raises")},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cryptoffload.core._directpath",
    .m_doc = PyDoc_STR("The AEAD direct path, compiled (see cryptoffload.directpath)."),
    .m_size = -1,
    .m_methods = module_methods,
};

#define INTERN(var, text)                                                              \
    do {                                                                               \
        var = PyUnicode_InternFromString(text);                                        \
        if (var == NULL)                                                               \
            return NULL;                                                               \
    } while (0)

PyMODINIT_FUNC
PyInit__directpath(void)
{
    INTERN(str_encrypt, "encrypt");
    INTERN(str_open_session, "_open_session");
    INTERN(str_engine_failed, "_engine_failed");
    INTERN(str_engine_after, "engine_after");
    INTERN(str_append, "append");
    INTERN(str_session_failed, "_session_failed");
    INTERN(str_fork, "_fork");
    INTERN(str_waiting, "_waiting");
    INTERN(str_stdlib, "_stdlib");
    INTERN(str_name_dunder, "__name__");
    INTERN(str_finish, "_finish");
    INTERN(str_fold_due, "fold_due");
    INTERN(str_decrypt, "decrypt");
    INTERN(str_encrypt_into, "encrypt_into");
    INTERN(str_decrypt_into, "decrypt_into");
    INTERN(str_slow_encrypt, "_encrypt");
    INTERN(str_slow_decrypt, "_decrypt");
    INTERN(str_slow_encrypt_into, "_encrypt_into");
    INTERN(str_slow_decrypt_into, "_decrypt_into");
    INTERN(str_update, "update");
    INTERN(str_update_into, "update_into");
    INTERN(str_slow_update, "_update_slow");
    INTERN(str_slow_update_into, "_update_into_slow");
    INTERN(str_direct, "_direct_path");
    INTERN(str_tag, "tag");
    INTERN(str_explain, "_explain");
    INTERN(str_derive, "derive");
    INTERN(str_slow_derive, "_derive_slow");
    INTERN(str_algorithm, "algorithm");
    INTERN(str_length, "length");
    INTERN(str_salt, "salt");
    INTERN(str_info, "info");
    INTERN(str_authenticate_additional_data, "authenticate_additional_data");
    INTERN(str_finalize_with_tag, "finalize_with_tag");
    INTERN(str_slow_aad, "_aad_slow");
    INTERN(str_slow_finalize_with_tag, "_finalize_with_tag_slow");
    INTERN(str_validate_for_algorithm, "validate_for_algorithm");
    INTERN(str_slow_context, "_context");
    INTERN(str_key, "key");
    INTERN(str_engine, "engine");
    INTERN(str_session, "session");
    INTERN(str_no_session, "_no_session");
    INTERN(str_nonce, "nonce");
    INTERN(str_initialization_vector, "initialization_vector");
    INTERN(str_provider, "provider");
    INTERN(str_backend, "backend");
    INTERN(str_finalize, "finalize");
    INTERN(str_verify, "verify");
    INTERN(str_copy, "copy");
    INTERN(str_digest, "digest");
    INTERN(str_slow_init, "_init_slow");
    INTERN(str_slow_finalize, "_finalize_slow");
    INTERN(str_slow_verify, "_verify_slow");
    INTERN(str_slow_copy, "_copy_slow");
    INTERN(str_update_aad, "update_aad");
    INTERN(str_resend, "_resend");
    INTERN(str_engine_output, "_engine_output");
    INTERN(str_engine_finalized, "_engine_finalized");
    INTERN(str_check_failed, "_check_failed");
    INTERN(str_tag_missing, "_tag_missing");
    INTERN(str_stream_done, "stream_done");
    INTERN(str_open_aead_stream, "open_aead_stream");
    INTERN(str_name, "name");
    INTERN(str_high, "high");
    INTERN(str_floor, "floor");
    INTERN(str_min_tag_length, "_min_tag_length");
    INTERN(str_max_encrypted_bytes, "_MAX_ENCRYPTED_BYTES");
    INTERN(str_max_aad_bytes, "_MAX_AAD_BYTES");
    INTERN(str_fields_upper, "FIELDS");
    INTERN(str_alg, "alg");
    INTERN(str_kind, "kind");
    if (PyType_Ready(&SizeLogType) < 0 || PyType_Ready(&LaneCoreType) < 0
        || PyType_Ready(&AeadCoreType) < 0 || PyType_Ready(&ChainedCoreType) < 0
        || PyType_Ready(&DirectStreamCoreType) < 0 || PyType_Ready(&DigestCoreType) < 0
        || PyType_Ready(&AeadStreamCoreType) < 0 || PyType_Ready(&CipherCoreType) < 0
        || PyType_Ready(&EngineGcmCoreType) < 0
        || PyType_Ready(&CcmCheckType) < 0 || PyType_Ready(&HkdfCoreType) < 0
        || PyType_Ready(&KeyedCopiesType) < 0
        || PyType_Ready(&GatheredType) < 0 || PyType_Ready(&ImportFilterType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    Py_INCREF(&LaneCoreType);
    if (PyModule_AddObject(module, "LaneCore", (PyObject *)&LaneCoreType) < 0) {
        Py_DECREF(&LaneCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&AeadCoreType);
    if (PyModule_AddObject(module, "AeadCore", (PyObject *)&AeadCoreType) < 0) {
        Py_DECREF(&AeadCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&ChainedCoreType);
    if (PyModule_AddObject(module, "ChainedCore", (PyObject *)&ChainedCoreType) < 0) {
        Py_DECREF(&ChainedCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&DirectStreamCoreType);
    if (PyModule_AddObject(module, "DirectStreamCore", (PyObject *)&DirectStreamCoreType) < 0) {
        Py_DECREF(&DirectStreamCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&DigestCoreType);
    if (PyModule_AddObject(module, "DigestCore", (PyObject *)&DigestCoreType) < 0) {
        Py_DECREF(&DigestCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&AeadStreamCoreType);
    if (PyModule_AddObject(module, "AeadStreamCore", (PyObject *)&AeadStreamCoreType) < 0) {
        Py_DECREF(&AeadStreamCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&EngineGcmCoreType);
    if (PyModule_AddObject(module, "EngineGcmCore", (PyObject *)&EngineGcmCoreType) < 0) {
        Py_DECREF(&EngineGcmCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&CipherCoreType);
    if (PyModule_AddObject(module, "CipherCore", (PyObject *)&CipherCoreType) < 0) {
        Py_DECREF(&CipherCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&CcmCheckType);
    if (PyModule_AddObject(module, "CcmCheck", (PyObject *)&CcmCheckType) < 0) {
        Py_DECREF(&CcmCheckType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&HkdfCoreType);
    if (PyModule_AddObject(module, "HkdfCore", (PyObject *)&HkdfCoreType) < 0) {
        Py_DECREF(&HkdfCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&GatheredType);
    if (PyModule_AddObject(module, "Gathered", (PyObject *)&GatheredType) < 0) {
        Py_DECREF(&GatheredType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&ImportFilterType);
    if (PyModule_AddObject(module, "ImportFilter", (PyObject *)&ImportFilterType) < 0) {
        Py_DECREF(&ImportFilterType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&KeyedCopiesType);
    if (PyModule_AddObject(module, "KeyedCopies", (PyObject *)&KeyedCopiesType) < 0) {
        Py_DECREF(&KeyedCopiesType);
        Py_DECREF(module);
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "TAIL", TAIL) < 0
        || PyModule_AddIntConstant(module, "FOLD_AT", FOLD_AT) < 0
        || PyModule_AddIntConstant(module, "GATHER_LIMIT", GATHER_LIMIT) < 0
        || PyModule_AddIntConstant(module, "RETAIN_LIMIT", RETAIN_LIMIT) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    /* What directpath.py expects (its API): a build left from older sources is not used. */
    if (PyModule_AddIntConstant(module, "API", 12) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&SizeLogType);
    if (PyModule_AddObject(module, "SizeLog", (PyObject *)&SizeLogType) < 0) {
        Py_DECREF(&SizeLogType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
