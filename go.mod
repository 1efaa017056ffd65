module github.com/cellardb/cellar

go 1.25.0

toolchain go1.26.8
