//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive flock on path so that two processes (or two
// Opens in one process) never share a store. The kernel drops the lock when
// the process dies, so a crash never leaves a stale lock behind.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedded: lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("embedded: %s is locked: the store is open elsewhere", path)
		}
		return nil, fmt.Errorf("embedded: lock: %w", err)
	}
	return f, nil
}

func unlockDir(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_UN)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("embedded: unlock: %w", err)
	}
	return nil
}
