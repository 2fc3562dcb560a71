//go:build !cgo

package chdb

import "sync/atomic"

// restoredSignals is the cgo build's record of the signal dispositions put
// back after calls into chDB; always zero here.
var restoredSignals atomic.Uint64

func signalDisposition(int) (uintptr, uint64, bool) { return 0, 0, false }

// session stands in for the cgo session; it is never made.
type session struct{}

func loadLibrary(string) error { return errNoCgo }

func connect([]string) (*session, error) { return nil, errNoCgo }

func (*session) query(string, string) ([]byte, error) { return nil, errNoCgo }

func (*session) close() {}
