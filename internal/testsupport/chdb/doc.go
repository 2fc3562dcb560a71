// Package chdb runs SQL on a current ClickHouse inside the test process,
// through chDB's shared library (libchdb.so, the npm package
// @chdb/lib-linux-x64-gnu), and serves it as a clickhouse-go driver.Conn.
//
// It is for tests only: the ClickHouse projection's test suite runs against
// Engine.Conn to show that the projection's SQL works on current ClickHouse,
// not only on the old server CI installs. Production code talks to a
// ClickHouse server with clickhouse-go over the native protocol and never
// imports this package.
//
// The library is loaded with dlopen (cgo, nothing links against it at build
// time), once per process, from the path LibPath reads from $LINKD_TEST_CHDB;
// tests skip when it is not set. chDB allows one session per process: Open
// hands out handles on that one session (with its data in one directory),
// and every query of the process runs under one mutex.
//
// The Conn covers what the projection uses: Exec, Query, QueryRow,
// PrepareBatch, Ping, ServerVersion (and Select, QueryFormat, InsertFormat).
// Arguments are bound into the query text client-side, like clickhouse-go
// binds positional ? placeholders. Results are read in
// TabSeparatedWithNamesAndTypes and scanned like clickhouse-go scans them. A
// batch keeps its rows until Send, which writes them all as one INSERT ...
// FORMAT TabSeparated, with settings that make them one block whatever
// their number: one Send makes one part per partition, as with a server.
// Settings and query ids put in the context with clickhouse.Context are
// ignored; a context is honoured only by not starting a query once it is
// done. ConnTo gives a Conn whose queries run in a database of their own
// choosing (the database of a DSN).
//
// The session runs with session_timezone UTC and the query profiler off.
// Signals: left alone, chDB installs crash handlers for SIGSEGV, SIGBUS,
// SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS and SIGTSTP over the Go
// runtime's when it connects (a nil dereference in Go code then hangs in
// chDB's handler instead of panicking), and dlopen blocks SIGPIPE in the
// calling thread. So Open tells chDB not to install its handlers
// (chdb_set_signal_handlers_enabled(0)), and every call into the library
// puts back the signal dispositions and the thread's signal mask it found
// (see lib_cgo.go): chDB's SIGRTMIN handler goes too, so do not query
// system.stack_trace, which chDB collects by signalling every thread.
package chdb
