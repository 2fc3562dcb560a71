//go:build !cgo

package pebbleheap

// onGoHeap: without cgo, Pebble allocates with make.
const onGoHeap = true
