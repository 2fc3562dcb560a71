// Package fsdir makes changes to a directory's entries durable: a file
// created or renamed into a directory is on disk only once the directory
// itself is synced.
package fsdir

import "os"

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
