// Package fsdir makes changes to a directory's entries durable: a file
// created or renamed into a directory is on disk only once the directory
// itself is synced.
package fsdir

import (
	"os"
	"path/filepath"
)

// Sync fsyncs the directory dir, so that the files created, renamed or
// removed in it survive a crash.
func Sync(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFile replaces path with data, whole or not at all, durably: a
// temporary file in the same directory, synced, renamed over path, and the
// directory synced. perm applies to a new file.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = Sync(dir)
	}
	return err
}
