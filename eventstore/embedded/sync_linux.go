package embedded

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data and the metadata needed to read it back (its
// size), skipping timestamps. It holds the descriptor while it runs (unlike
// f.Fd()), so a concurrent Close (the compactor closes a sealed segment it
// replaced) waits for it, and fdatasync never runs on a closed or reused
// descriptor: it fails with os.ErrClosed instead.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			err = unix.Fdatasync(int(fd))
			if err != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}
