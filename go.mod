module github.com/cellardb/cellar

go 1.25.0

toolchain go1.26.8

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/cockroachdb/datadriven v1.0.3
	github.com/golang/snappy v1.0.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
)
