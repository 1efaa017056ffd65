// Package query will hold cellar's SQL layer: the PostgreSQL lexical front
// end, the dialect's parser, planning and execution against the key-value
// store, and the catalog (issue 6). It is empty until then.
package query
