//go:build cgo

package pebbleheap

// onGoHeap: with cgo, Pebble allocates with C's malloc.
const onGoHeap = false
