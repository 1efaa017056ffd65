package sstable

// prefetch asks the CPU to load p's cache line without waiting for it: a
// load that misses holds up the instructions after it until it retires,
// a prefetch does not.
//
//go:noescape
func prefetch(p *byte)
