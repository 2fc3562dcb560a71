//go:build !linux

package embedded

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
