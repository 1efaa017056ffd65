// Package pgwire will hold cellar's PostgreSQL wire-protocol server:
// startup, TLS, authentication, simple and extended query, COPY, cancel
// and limits (issue 5). It is empty until then.
package pgwire
