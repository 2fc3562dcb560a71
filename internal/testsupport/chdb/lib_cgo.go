//go:build cgo

package chdb

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// chDB's v3 C API, resolved with dlsym so that nothing links against
// libchdb.so at build time.
typedef struct { void *internal_data; } chdb_connection_;
typedef chdb_connection_ **(*chdb_connect_fn)(int, char **);
typedef void (*chdb_close_conn_fn)(chdb_connection_ **);
typedef void *(*chdb_query_fn)(chdb_connection_ *, const char *, const char *);
typedef char *(*chdb_result_buffer_fn)(void *);
typedef size_t (*chdb_result_length_fn)(void *);
typedef const char *(*chdb_result_error_fn)(void *);
typedef void (*chdb_destroy_query_result_fn)(void *);
typedef void (*chdb_set_signal_handlers_enabled_fn)(int);

static void *chdb_lib;
static chdb_connect_fn chdb_connect_p;
static chdb_close_conn_fn chdb_close_conn_p;
static chdb_query_fn chdb_query_p;
static chdb_result_buffer_fn chdb_result_buffer_p;
static chdb_result_length_fn chdb_result_length_p;
static chdb_result_error_fn chdb_result_error_p;
static chdb_destroy_query_result_fn chdb_destroy_query_result_p;
static chdb_set_signal_handlers_enabled_fn chdb_set_signal_handlers_enabled_p; // optional (chDB >= 26.3)

// Signals. chDB installs handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE,
// SIGABRT, SIGTRAP, SIGSYS, SIGTSTP (without SA_ONSTACK, except SIGSEGV) and
// SIGRTMIN when it connects, over the Go runtime's: a nil dereference in Go
// code would then run chDB's crash handler (which sleeps for minutes before
// it re-raises) instead of becoming a Go panic, and a handler without
// SA_ONSTACK may run on a small goroutine stack. dlopen blocks SIGPIPE in
// the calling thread. So every call into the library goes through a guard
// that saves the dispositions of all signals and the calling thread's
// signal mask before the call and puts back whatever the call changed.

#define CHDB_NSIG 65 // signals 1 to 64 (Linux)

typedef struct {
	struct sigaction act[CHDB_NSIG];
	int ok[CHDB_NSIG];
	sigset_t mask;
} chdb_guard;

static void chdb_guard_save(chdb_guard *g) {
	pthread_sigmask(SIG_SETMASK, NULL, &g->mask);
	for (int s = 1; s < CHDB_NSIG; s++)
		g->ok[s] = sigaction(s, NULL, &g->act[s]) == 0;
}

// chdb_guard_restore puts back the saved dispositions and mask, and returns
// the signals whose disposition had changed (bit s-1 for signal s).
static uint64_t chdb_guard_restore(chdb_guard *g) {
	uint64_t changed = 0;
	for (int s = 1; s < CHDB_NSIG; s++) {
		struct sigaction now;
		if (!g->ok[s] || sigaction(s, NULL, &now) != 0)
			continue;
		if (now.sa_handler != g->act[s].sa_handler || now.sa_flags != g->act[s].sa_flags) {
			sigaction(s, &g->act[s], NULL);
			changed |= (uint64_t)1 << (s - 1);
		}
	}
	pthread_sigmask(SIG_SETMASK, &g->mask, NULL);
	return changed;
}

// chdb_load opens the library and resolves the API. It returns NULL, or a
// static error text.
static char chdb_load_error[1024];
static const char *chdb_load(const char *path, uint64_t *changed) {
	chdb_guard g;
	chdb_guard_save(&g);
	chdb_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	*changed = chdb_guard_restore(&g);
	if (chdb_lib == NULL) {
		// dlerror's text is the thread's: copy it before returning to Go.
		snprintf(chdb_load_error, sizeof chdb_load_error, "%s", dlerror());
		return chdb_load_error;
	}
#define CHDB_SYM(name) \
	name##_p = (name##_fn)dlsym(chdb_lib, #name); \
	if (name##_p == NULL) return "symbol " #name " not found";
	CHDB_SYM(chdb_connect)
	CHDB_SYM(chdb_close_conn)
	CHDB_SYM(chdb_query)
	CHDB_SYM(chdb_result_buffer)
	CHDB_SYM(chdb_result_length)
	CHDB_SYM(chdb_result_error)
	CHDB_SYM(chdb_destroy_query_result)
#undef CHDB_SYM
	chdb_set_signal_handlers_enabled_p = (chdb_set_signal_handlers_enabled_fn)dlsym(chdb_lib, "chdb_set_signal_handlers_enabled");
	return NULL;
}

// chdb_open connects (the library's one session of the process). It first
// tells chDB not to install its signal handlers when the library can be told
// (that call resets the deadly signals to SIG_DFL: the guard puts Go's
// handlers back).
static chdb_connection_ **chdb_open(int argc, char **argv, uint64_t *changed) {
	chdb_guard g;
	chdb_guard_save(&g);
	if (chdb_set_signal_handlers_enabled_p != NULL)
		chdb_set_signal_handlers_enabled_p(0);
	chdb_connection_ **c = chdb_connect_p(argc, argv);
	*changed = chdb_guard_restore(&g);
	return c;
}

static void chdb_close(chdb_connection_ **c, uint64_t *changed) {
	chdb_guard g;
	chdb_guard_save(&g);
	chdb_close_conn_p(c);
	*changed = chdb_guard_restore(&g);
}

// chdb_run runs a query. The caller copies the output and the error, then
// frees the result with chdb_free.
static void *chdb_run(chdb_connection_ **c, const char *query, const char *format,
                      char **buf, size_t *len, const char **err, uint64_t *changed) {
	chdb_guard g;
	chdb_guard_save(&g);
	void *r = chdb_query_p(*c, query, format);
	if (r != NULL) {
		*err = chdb_result_error_p(r);
		*buf = chdb_result_buffer_p(r);
		*len = chdb_result_length_p(r);
	}
	*changed = chdb_guard_restore(&g);
	return r;
}

// chdb_disposition reads the handler and flags of a signal (for tests).
static int chdb_disposition(int sig, uintptr_t *handler, uint64_t *flags) {
	struct sigaction a;
	if (sigaction(sig, NULL, &a) != 0)
		return -1;
	*handler = (uintptr_t)a.sa_handler;
	*flags = (uint64_t)a.sa_flags;
	return 0;
}

static void chdb_free(void *r) {
	chdb_destroy_query_result_p(r);
}
*/
import "C"

import (
	"errors"
	"strings"
	"sync/atomic"
	"unsafe"
)

// restoredSignals accumulates the signals whose disposition a call into
// chDB changed and the guard put back (bit s-1 for signal s).
var restoredSignals atomic.Uint64

func noteSignals(changed C.uint64_t) {
	if changed != 0 {
		restoredSignals.Or(uint64(changed))
	}
}

// signalDisposition returns the address of the handler of signal sig and
// its sa_flags (for tests).
func signalDisposition(sig int) (handler uintptr, flags uint64, ok bool) {
	var h C.uintptr_t
	var f C.uint64_t
	if C.chdb_disposition(C.int(sig), &h, &f) != 0 {
		return 0, 0, false
	}
	return uintptr(h), uint64(f), true
}

// session is the library's connection.
type session struct {
	conn **C.chdb_connection_
}

// loadLibrary opens libchdb.so (once per process: the caller makes sure).
func loadLibrary(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var changed C.uint64_t
	msg := C.chdb_load(cpath, &changed)
	noteSignals(changed)
	if msg != nil {
		return errors.New("chdb: load " + path + ": " + C.GoString(msg))
	}
	return nil
}

// connect opens the session with the given command line (args[0] is the
// program name).
func connect(args []string) (*session, error) {
	// The command line stays allocated (a few bytes per session): chDB may
	// keep pointers into it.
	cargv := (**C.char)(C.malloc(C.size_t(len(args)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	argv := unsafe.Slice(cargv, len(args))
	for i, a := range args {
		argv[i] = C.CString(a)
	}
	var changed C.uint64_t
	c := C.chdb_open(C.int(len(args)), cargv, &changed)
	noteSignals(changed)
	if c == nil || *c == nil {
		return nil, errors.New("chdb: chdb_connect failed (" + strings.Join(args[1:], " ") + ")")
	}
	return &session{conn: c}, nil
}

// query runs one query and returns its output in format.
func (s *session) query(sql, format string) ([]byte, error) {
	if strings.IndexByte(sql, 0) >= 0 {
		return nil, errors.New("chdb: the query holds a NUL byte")
	}
	csql := C.CString(sql)
	defer C.free(unsafe.Pointer(csql))
	cformat := C.CString(format)
	defer C.free(unsafe.Pointer(cformat))
	var (
		buf     *C.char
		n       C.size_t
		cerr    *C.char
		changed C.uint64_t
	)
	r := C.chdb_run(s.conn, csql, cformat, &buf, &n, &cerr, &changed)
	noteSignals(changed)
	if r == nil {
		return nil, errors.New("chdb: chdb_query returned no result")
	}
	defer C.chdb_free(r)
	if cerr != nil {
		return nil, queryError(C.GoString(cerr))
	}
	if buf == nil || n == 0 {
		return nil, nil
	}
	out := make([]byte, int(n))
	copy(out, unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n)))
	return out, nil
}

// close ends the session.
func (s *session) close() {
	var changed C.uint64_t
	C.chdb_close(s.conn, &changed)
	noteSignals(changed)
}
