//go:build !amd64

package sstable

// prefetch is a hint; elsewhere than amd64 there is none.
func prefetch(*byte) {}
